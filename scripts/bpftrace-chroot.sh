#!/usr/bin/env bash
# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
# Other Debian releases' bpftrace, each in a minimal chroot, for the bpftrace
# version matrix (make test-bpftrace-versions).
#
#   scripts/bpftrace-chroot.sh build SUITE   build $CACHE/SUITE once (debootstrap, bpftrace); reused
#   scripts/bpftrace-chroot.sh path SUITE    print the wrapper to point the receiver's binary at
#
# SUITE is a Debian suite: trixie (Debian 13, bpftrace 0.23), sid (unstable,
# 0.27 when this was written). The chroot comes from the Debian archive this
# machine's apt uses (/etc/apt/sources.list*), made with `debootstrap
# --variant=minbase --include=bpftrace`; a stamp file marks it complete.
#
# $CACHE/SUITE/bpftrace is a wrapper that runs the chroot's bpftrace with the
# host's /proc, /sys (BTF, tracefs, debugfs, bpffs), /dev, /tmp and $TMPDIR
# (where the receiver writes the program it runs: a script's own path is not
# seen), /lib/modules and /usr/src bound in, in
# a private mount namespace (the mounts end with it). Its arguments are
# bpftrace's; it execs, so bpftrace keeps the pid and process group the
# receiver started.
#
# Environment:
#   BPFTRACE_CHROOT_CACHE  where the chroots live (default ~/.cache/otelcol-seq/bpftrace)
#   DEBIAN_MIRROR          the archive (default: the first Debian URI in apt's sources)
set -euo pipefail

CACHE=${BPFTRACE_CHROOT_CACHE:-$HOME/.cache/otelcol-seq/bpftrace}

die() { echo "bpftrace-chroot: $*" >&2; exit 1; }

mirror() {
	if [ -n "${DEBIAN_MIRROR:-}" ]; then echo "$DEBIAN_MIRROR"; return; fi
	local m
	m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
		grep -oE '(https?)://[^ ]*/debian/?( |$)' | grep -v security | head -n1 | tr -d ' ' || true)
	[ -n "$m" ] || die "no Debian archive found in /etc/apt/sources.list*; set DEBIAN_MIRROR (e.g. http://deb.debian.org/debian)"
	echo "${m%/}"
}

write_wrapper() {
	local dir=$1
	cat > "$dir/bpftrace" <<'EOF'
#!/bin/sh
# Runs the bpftrace of the chroot beside this file (scripts/bpftrace-chroot.sh).
root=$(cd "$(dirname "$0")" && pwd)/root
exec unshare --mount --propagation private /bin/sh -c '
	root=$1; shift
	for d in /proc /sys /dev /tmp ${TMPDIR:-} /lib/modules /usr/src; do
		[ -d "$d" ] || continue
		mkdir -p "$root$d"
		mount --rbind "$d" "$root$d" || exit 125
	done
	exec chroot "$root" /usr/bin/bpftrace "$@"
' sh "$root" "$@"
EOF
	chmod 755 "$dir/bpftrace"
}

build() {
	local suite=$1 dir=$CACHE/$1
	if [ -e "$dir/stamp" ]; then
		write_wrapper "$dir"
		return
	fi
	[ "$(id -u)" = 0 ] || die "building the $suite chroot needs root"
	command -v debootstrap >/dev/null || {
		echo "installing: debootstrap"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
	}
	local m
	m=$(mirror)
	echo "building the $suite chroot with bpftrace from $m in $dir (once)"
	rm -rf "$dir/root"
	mkdir -p "$dir"
	debootstrap --variant=minbase --include=bpftrace "$suite" "$dir/root" "$m" > "$dir/debootstrap.log" 2>&1 ||
		die "debootstrap $suite failed; see $dir/debootstrap.log"
	rm -rf "$dir/root/var/cache/apt/archives/"*.deb
	chroot "$dir/root" /usr/bin/bpftrace --version > "$dir/version.txt" ||
		die "the $suite chroot's bpftrace does not run"
	write_wrapper "$dir"
	date -u +%FT%TZ > "$dir/stamp"
	echo "$suite: $(cat "$dir/version.txt")"
}

case "${1:-}" in
build)
	[ -n "${2:-}" ] || die "usage: $0 build SUITE"
	build "$2"
	;;
path)
	[ -n "${2:-}" ] || die "usage: $0 path SUITE"
	[ -e "$CACHE/$2/stamp" ] || die "no $2 chroot; run $0 build $2"
	echo "$CACHE/$2/bpftrace"
	;;
*)
	die "usage: $0 build SUITE | path SUITE"
	;;
esac
