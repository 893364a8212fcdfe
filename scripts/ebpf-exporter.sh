#!/usr/bin/env bash
# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
# Cloudflare's ebpf_exporter, the real one, for the side-by-side parity test
# (test/e2e/ebpfexporter_parity_test.go).
#
#   scripts/ebpf-exporter.sh build   build $EBPF_EXPORTER_CACHE/ebpf_exporter once (reused when present)
#   scripts/ebpf-exporter.sh path    print the binary's path
#   scripts/ebpf-exporter.sh examples  compile ebpf_exporter's upstream examples/ (the module's,
#                                      from the Go module proxy) into $EBPF_EXPORTER_CACHE/examples
#                                      once, with clang-14 and libbpf 1.5.0's headers; print the folder
#
# ebpf_exporter is a cgo program against libbpf; its release is linked
# statically against libbpf 1.5.0 (its Makefile.libbpf clones libbpf from
# GitHub, which this project cannot reach). Debian 12's libbpf-dev is 1.1, too
# old, so libbpf 1.5.0's sources are taken from crates.io instead: the
# libbpf-sys crate =1.5.0 vendors them in its libbpf/ folder. A cargo that
# speaks crates.io's sparse protocol (1.68+) fetches the crate through a
# throw-away Cargo project; Debian 12's cargo (0.66) would read the index
# from GitHub, so without a newer cargo the .crate file is downloaded from
# crates.io as cargo downloads it, and checked against the index's sha256.
# libbpf is built static-only (libelf-dev, zlib1g-dev) and ebpf_exporter from
# the Go module proxy with its Makefile's build-static flags: -tags
# netgo,osusergo, -extldflags -static, CGO_LDFLAGS from libbpf's
# pkg-config --static.
#
# Environment:
#   EBPF_EXPORTER_CACHE    where to build and keep it (default ~/.cache/otelcol-seq/ebpf_exporter/<version>)
#   EBPF_EXPORTER_BIN      use this binary instead (build then only checks it)
#   EBPF_EXPORTER_VERSION  module version (default v2.5.1)
#   LIBBPF_SYS_VERSION     the libbpf-sys crate that carries libbpf's sources (default 1.5.0+v1.5.0)
#   LIBBPF_SYS_SHA256      its .crate's sha256 (crates.io index "cksum"; for the default version)
set -euo pipefail

VERSION=${EBPF_EXPORTER_VERSION:-v2.5.1}
LIBBPF_SYS_VERSION=${LIBBPF_SYS_VERSION:-1.5.0+v1.5.0}
LIBBPF_SYS_SHA256=${LIBBPF_SYS_SHA256:-2d8306b516a70a129cb6afed17c1e51e162d35aadfcc6339364addcebe32de90}
CACHE="${EBPF_EXPORTER_CACHE:-$HOME/.cache/otelcol-seq/ebpf_exporter/$VERSION}"
BIN=${EBPF_EXPORTER_BIN:-$CACHE/ebpf_exporter}
GO=${GO:-go}
MODULE=github.com/cloudflare/ebpf_exporter/v2

# shellcheck source=lib/cached-go-build.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/cached-go-build.sh"

log() { echo "ebpf-exporter.sh: $*" >&2; }

# apt-get installs what the build needs and the machine lacks.
need_packages() {
	local missing=""
	command -v curl >/dev/null || missing="$missing curl"
	command -v make >/dev/null || missing="$missing make"
	command -v gcc >/dev/null || missing="$missing gcc"
	command -v pkg-config >/dev/null || missing="$missing pkg-config"
	[ -e /usr/lib/x86_64-linux-gnu/libelf.a ] || [ -e /usr/lib/aarch64-linux-gnu/libelf.a ] || missing="$missing libelf-dev"
	[ -e /usr/include/zlib.h ] || missing="$missing zlib1g-dev"
	if [ -n "$missing" ]; then
		log "installing:$missing"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
	fi
}

# libbpf_src prints the folder of libbpf's sources from the libbpf-sys crate.
libbpf_src() {
	command -v cargo >/dev/null && cargo_fetch && return 0
	crate_download
}

# cargo_fetch: the crate through cargo (sparse protocol; fails fast on a cargo
# without it).
cargo_fetch() {
	local proj="$CACHE/libbpf-sys-fetch"
	mkdir -p "$proj/src"
	echo 'fn main() {}' >"$proj/src/main.rs"
	cat >"$proj/Cargo.toml" <<EOT
[package]
name = "libbpf-sys-fetch"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
libbpf-sys = "=$LIBBPF_SYS_VERSION"
EOT
	if ! (cd "$proj" && CARGO_REGISTRIES_CRATES_IO_PROTOCOL=sparse timeout 600 cargo fetch -q) >&2; then
		log "cargo fetch failed (a cargo without the sparse protocol reads the index from GitHub)"
		return 1
	fi
	local home=${CARGO_HOME:-$HOME/.cargo} d
	for d in "$home"/registry/src/*/"libbpf-sys-$LIBBPF_SYS_VERSION"/libbpf; do
		[ -f "$d/src/Makefile" ] && { echo "$d"; return 0; }
	done
	log "libbpf-sys $LIBBPF_SYS_VERSION has no libbpf/src/Makefile under $home/registry/src"
	return 1
}

# crate_download: the .crate file from crates.io, checked, unpacked.
crate_download() {
	local url="https://static.crates.io/crates/libbpf-sys/libbpf-sys-${LIBBPF_SYS_VERSION/+/%2B}.crate"
	local crate="$CACHE/libbpf-sys-$LIBBPF_SYS_VERSION.crate" dir="$CACHE/crate"
	log "downloading $url"
	curl -fsSL --retry 3 -o "$crate" "$url" >&2
	if ! echo "$LIBBPF_SYS_SHA256  $crate" | sha256sum -c --quiet >&2; then
		log "$crate: sha256 is not crates.io's $LIBBPF_SYS_SHA256"
		return 1
	fi
	rm -rf "$dir" && mkdir -p "$dir"
	tar -xzf "$crate" -C "$dir"
	rm -f "$crate"
	echo "$dir/libbpf-sys-$LIBBPF_SYS_VERSION/libbpf"
}

build() {
	local reuse=0
	reuse_cached "$BIN" EBPF_EXPORTER_BIN || reuse=$?
	[ "$reuse" = 1 ] || return $((reuse / 2))
	command -v "$GO" >/dev/null || { log "no Go toolchain ($GO)"; return 1; }
	need_packages
	mkdir -p "$CACHE"
	local start=$SECONDS
	log "fetching libbpf's sources: crates.io libbpf-sys =$LIBBPF_SYS_VERSION"
	local lsrc
	lsrc=$(libbpf_src)
	local work="$CACHE/work"
	rm -rf "$work"
	mkdir -p "$work"
	cp -r "$lsrc" "$work/libbpf"
	chmod -R u+w "$work/libbpf"
	local dest="$work/libbpf/dest"
	log "building static libbpf $(sed -n 's/^#define LIBBPF_\(MAJOR\|MINOR\)_VERSION //p' "$work/libbpf/src/libbpf_version.h" | paste -sd.)"
	make -s -j"$(nproc)" -C "$work/libbpf/src" BUILD_STATIC_ONLY=y LIBSUBDIR=lib DESTDIR="$dest" \
		install install_uapi_headers >&2

	log "downloading $MODULE@$VERSION from the module proxy"
	local dir
	dir=$(go_module_dir "$MODULE@$VERSION" "$work")
	local src="$work/ebpf_exporter"
	cp -r "$dir" "$src"
	chmod -R u+w "$src"
	local ldlibs
	# -L first: pkg-config leaves out the -L of a /usr prefix, and the linker
	# would then take the system's older libbpf.a.
	ldlibs="-L$dest/usr/lib $(PKG_CONFIG_PATH="$dest/usr/lib/pkgconfig" pkg-config --static --libs libbpf)"
	local pv=github.com/prometheus/common/version
	log "building ./cmd/ebpf_exporter (static; CGO_LDFLAGS=$ldlibs)"
	local tmp="$BIN.tmp.$$"
	if ! (cd "$src" && GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=1 \
		CGO_CFLAGS="-I$dest/usr/include" CGO_LDFLAGS="$ldlibs" \
		"$GO" build -trimpath -tags netgo,osusergo -o "$tmp" \
		-ldflags="-extldflags \"-static\" -X $pv.Version=${VERSION#v} -X $pv.Branch=module-proxy -X $pv.Revision=$VERSION" \
		./cmd/ebpf_exporter); then
		rm -f "$tmp"
		log "build failed"
		return 1
	fi
	"$tmp" --version >&2
	mv "$tmp" "$BIN"
	rm -rf "$work" "$CACHE/crate"
	log "built $BIN ($(du -h "$BIN" | cut -f1)) in $((SECONDS - start)) s"
}

# examples: <name>.yaml next to <name>.bpf.o for every upstream example, as
# examples/Makefile builds them (-mcpu=v3 -O2 -g, the module's vmlinux.h).
examples() {
	local out="$CACHE/examples"
	if [ -f "$out/.done" ]; then
		echo "$out"
		return 0
	fi
	local clang=${CLANG:-clang-14} arch
	if ! command -v "$clang" >/dev/null; then
		log "installing clang-14"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang-14 >/dev/null
	fi
	arch=$(uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
	mkdir -p "$CACHE"
	local work="$CACHE/examples-work"
	rm -rf "$work" "$out"
	mkdir -p "$work/include/bpf" "$out"
	local lsrc dir
	lsrc=$(libbpf_src)
	cp "$lsrc"/src/*.h "$work/include/bpf/"
	dir=$(go_module_dir "$MODULE@$VERSION" "$work")
	local sys f n
	sys=$("$clang" -v -E - </dev/null 2>&1 | sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')
	for f in "$dir"/examples/*.bpf.c; do
		n=$(basename "$f" .bpf.c)
		# shellcheck disable=SC2086
		"$clang" -mcpu=v3 -g -O2 -Wall -Werror -D__TARGET_ARCH_"$arch" $sys -I"$dir/include/$arch" \
			-I"$work/include" -c -target bpf "$f" -o "$out/$n.bpf.o" >&2
		cp "$dir/examples/$n.yaml" "$out/$n.yaml"
	done
	chmod -R u+w "$work"
	rm -rf "$work"
	touch "$out/.done"
	log "compiled $(find "$out" -name '*.bpf.o' | wc -l) upstream examples into $out"
	echo "$out"
}

case "${1:-}" in
build) build ;;
path) echo "$BIN" ;;
examples) examples ;;
*)
	echo "usage: $0 build|path|examples" >&2
	exit 2
	;;
esac
