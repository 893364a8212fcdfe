#!/usr/bin/env bash
# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
#
# Sets up Debian's podman for the seq receiver's container test
# (receiver/seqreceiver/containers_linux_test.go), idempotently, as root:
#
#   - installs podman, runc and busybox-static (apt) when missing;
#   - writes DIR/containers.conf: runc (crun refuses hybrid cgroup layouts),
#     the cgroupfs manager (no systemd on the test machines) and default
#     ulimits low enough for podman 4.3 to apply in a VM;
#   - imports DIR's busybox-static rootfs as the image localhost/seq-busybox.
#
# Use the configuration with CONTAINERS_CONF=DIR/containers.conf.
#   scripts/podman-setup.sh [DIR]    (default: ~/.cache/otelcol-seq/podman)
# Prints the path of containers.conf on its last line.
set -euo pipefail

DIR=${1:-${HOME}/.cache/otelcol-seq/podman}
IMAGE=localhost/seq-busybox:latest

if [ "$(id -u)" != 0 ]; then
	echo "podman-setup: needs root" >&2
	exit 1
fi

missing=""
command -v podman >/dev/null || missing="$missing podman"
command -v runc >/dev/null || missing="$missing runc"
# The image is /bin/busybox of busybox-static: one static binary.
dpkg -s busybox-static >/dev/null 2>&1 || missing="$missing busybox-static"
if [ -n "$missing" ]; then
	echo "podman-setup: installing:$missing" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi

mkdir -p "$DIR"
CONF=$DIR/containers.conf
cat >"$CONF.tmp" <<'EOF'
# Written by scripts/podman-setup.sh for the seq receiver's container test.
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=20000:20000"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
mv "$CONF.tmp" "$CONF"
export CONTAINERS_CONF=$CONF

if ! podman image exists "$IMAGE" 2>/dev/null; then
	root=$(mktemp -d)
	trap 'rm -rf "$root"' EXIT
	mkdir -p "$root/bin"
	cp /bin/busybox "$root/bin/busybox"
	for a in sh sleep true cat echo ls; do ln -s busybox "$root/bin/$a"; done
	tar -C "$root" -cf "$DIR/rootfs.tar" .
	podman import --change 'CMD ["/bin/sh"]' "$DIR/rootfs.tar" "$IMAGE" >/dev/null
	rm -f "$DIR/rootfs.tar"
fi
echo "$CONF"
