#!/usr/bin/env bash
# Kernels for the test matrix (make test-kernels), booted in QEMU with virtme-ng.
#
#   scripts/kernels.sh setup [KERNEL...]          install QEMU, virtme-ng and the kernels (idempotent)
#   scripts/kernels.sh run KERNEL SCRIPT RESULTDIR boot KERNEL, run SCRIPT in it; exit with its status
#   scripts/kernels.sh list                       the kernel names, one a line
#   scripts/kernels.sh vmlinuz KERNEL             path of KERNEL's image
#   scripts/kernels.sh arch KERNEL                KERNEL's architecture (amd64, arm64)
#
# KERNEL is a name of KERNELS_TABLE below: 6.1, 6.1-rt (Debian 12), 5.10,
# 5.10-rt (Debian 11), 6.12, 6.12-rt (Debian 13); -rt is the PREEMPT_RT build;
# arm64 (Debian 12's 6.1 arm64, in qemu-system-aarch64 with its own arm64
# userland: see the arm64 section below).
# Everything lives in $KERNELS_CACHE (default ~/.cache/otelcol-seq/kernels),
# outside the clone, so that later clones reuse it. Root only: it installs
# Debian packages and links /lib/modules/VERSION to the cached modules.
#
# /dev/kvm here is nested PVM and boots no stock kernel: QEMU runs without
# KVM (TCG), so a guest is some ten times slower than the host.
set -euo pipefail

# The kernels of the matrix, one a line: NAME|SOURCE|ABI|PACKAGE VERSION|FLAVOUR.
# SOURCE is `host` (the host's own apt sources: Debian 12 and its security
# archive) or a suite that setup reads through an apt tree of its own in the
# cache (apt_private), never added to the host's sources; `arm64` is Debian 12's
# archives for arm64, read through apt_arm64 (the arm64 guest, below). Change ABI and
# version together. When apt no longer serves a pinned version, setup falls
# back to the newest image of the same series (fallback_abi) and says so.
# stock and rt are the 6.1 guests' old names. Debian 11's kernels come from
# its last point release (11.11, final): the mirror here lacks
# bullseye-security's RT image, and the two 5.10 guests should be one build.
# The matrix boots them in this order, two at a time: the longest runs first.
KERNELS_TABLE=(
	"6.1-rt|host|6.1.0-56|6.1.192-2|rt-amd64"
	"6.1|host|6.1.0-56|6.1.192-2|amd64"
	"arm64|arm64|6.1.0-56|6.1.192-2|arm64"
	"6.12-rt|trixie|6.12.117+deb13|6.12.117-1|rt-amd64"
	"6.12|trixie|6.12.117+deb13|6.12.117-1|amd64"
	"5.10-rt|bullseye|5.10.0-32|5.10.223-1|rt-amd64"
	"5.10|bullseye|5.10.0-32|5.10.223-1|amd64"
)
VIRTME_NG_VERSION=1.42
APT_PACKAGES=(qemu-system-x86 kmod busybox-static)

# Absolute: /lib/modules links into it and the arm64 guest is handed paths in it.
CACHE=$(realpath -m "${KERNELS_CACHE:-$HOME/.cache/otelcol-seq/kernels}")
VENV=$CACHE/venv
STATE=$CACHE/state # NAME.env: the version setup settled on, per kernel

log() { printf 'kernels: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

canonical() {
	case $1 in
	stock) echo 6.1 ;;
	rt) echo 6.1-rt ;;
	*) echo "$1" ;;
	esac
}

# entry KERNEL: sets SOURCE, PIN_ABI, PIN_VERSION and FLAV from the table.
entry() {
	local name line
	name=$(canonical "$1")
	for line in "${KERNELS_TABLE[@]}"; do
		if [ "${line%%|*}" = "$name" ]; then
			IFS='|' read -r _ SOURCE PIN_ABI PIN_VERSION FLAV <<<"$line"
			return
		fi
	done
	die "unknown kernel '$1' (want one of: $(names | tr '\n' ' '))"
}

names() {
	local line
	for line in "${KERNELS_TABLE[@]}"; do echo "${line%%|*}"; done
}

install_packages() {
	local missing=() p
	for p in "${APT_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	# virtme-ng's venv needs python3-venv (ensurepip).
	/usr/bin/python3 -c 'import ensurepip' 2>/dev/null || missing+=(python3-venv)
	[ ${#missing[@]} -eq 0 ] && return
	log "installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

install_vng() {
	# Not `pip show | grep -q`: grep quits at the match, pip dies of SIGPIPE,
	# and pipefail made every run reinstall.
	if [ -x "$VENV/bin/vng" ] && [ "$("$VENV/bin/pip" show virtme-ng 2>/dev/null | sed -n 's/^Version: //p')" = "$VIRTME_NG_VERSION" ]; then
		return
	fi
	log "installing virtme-ng==$VIRTME_NG_VERSION into $VENV"
	/usr/bin/python3 -m venv "$VENV"
	"$VENV/bin/pip" install -q --disable-pip-version-check "virtme-ng==$VIRTME_NG_VERSION"
}

# apt_private SOURCE APT-COMMAND...: apt-get (or apt-cache, for madison and
# search) over an apt tree of SOURCE's own in the cache, with the host's
# keyring: the host's sources and package state stay as they are. `host` is
# the host's apt.
apt_private() {
	local src=$1 tool=apt-get
	shift
	case $1 in madison | search) tool=apt-cache ;; esac
	if [ "$src" = host ]; then
		"$tool" "$@"
		return
	fi
	local d=$CACHE/apt/$src uri=http://deb.debian.org/debian
	case $src in *-security) uri=http://deb.debian.org/debian-security ;; esac
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $src main" >"$d/sources.list"
	"$tool" -o Dir::Etc::SourceList="$d/sources.list" -o Dir::Etc::SourceParts=/dev/null -o APT::Sandbox::User=root \
		-o Dir::State::Lists="$d/lists" -o Dir::Cache="$d/cache" "$@"
}

served() { # served SOURCE PACKAGE VERSION: VERSION if apt serves it
	apt_private "$1" madison "$2" 2>/dev/null | awk -v v="$3" '$3 == v {print $3}'
}

# choose KERNEL: "ABI VERSION", the pinned ones when apt serves them, else the
# newest image of the same series (same flavour, same first two version parts).
choose() {
	entry "$1"
	local pkg="linux-image-$PIN_ABI-$FLAV-unsigned" newest abi ver
	[ -n "$(served "$SOURCE" "$pkg" "$PIN_VERSION")" ] || apt_private "$SOURCE" update -qq
	if [ -n "$(served "$SOURCE" "$pkg" "$PIN_VERSION")" ]; then
		echo "$PIN_ABI $PIN_VERSION"
		return
	fi
	local series=${PIN_ABI%%-*} # 6.1.0, 5.10.0, 6.12.117+deb13
	series=$(echo "$series" | cut -d. -f1-2 | sed 's/\./\\./g')
	# The ABI alone (6.1.0-56, 6.12.117+deb13), so that no other flavour
	# (rt-amd64 beside amd64, cloud-amd64) passes for this one.
	abi=$(apt_private "$SOURCE" search --names-only "^linux-image-$series.*-$FLAV-unsigned\$" |
		sed -n "s/^linux-image-\(.*\)-$FLAV-unsigned .*/\1/p" | grep -E '^[0-9.]+(-[0-9]+|\+deb[0-9]+)$' | sort -V | tail -1)
	[ -n "$abi" ] || die "apt ($SOURCE) serves neither $pkg=$PIN_VERSION nor any other $series image; check the network and scripts/kernels.sh's table"
	newest=linux-image-$abi-$FLAV-unsigned
	ver=$(apt_private "$SOURCE" madison "$newest" | awk 'NR==1 {print $3}')
	log "WARNING: apt ($SOURCE) no longer serves the pinned $pkg=$PIN_VERSION;"
	log "WARNING: falling back to $newest=$ver. Pin it in scripts/kernels.sh (KERNELS_TABLE)."
	echo "$abi $ver"
}

# fetch_kernel KERNEL ABI PKGVER: linux-image (+ headers, for bpftrace's
# #includes) unpacked under $CACHE/VERSION, modules indexed with depmod.
fetch_kernel() {
	entry "$1"
	local flav=$FLAV abi=$2 pkgver=$3
	local version=$abi-$flav dir=$CACHE/$abi-$flav
	if [ -f "$dir/.complete" ]; then
		return
	fi
	local common=common
	[ "$flav" = rt-amd64 ] && common=common-rt
	local pkgs=("linux-image-$version-unsigned=$pkgver" "linux-headers-$version=$pkgver" "linux-headers-$abi-$common=$pkgver")
	log "downloading ${pkgs[*]} ($SOURCE)"
	rm -rf "$dir" "$CACHE/debs.tmp.$1"
	mkdir -p "$CACHE/debs.tmp.$1"
	(cd "$CACHE/debs.tmp.$1" && apt_private "$SOURCE" download -qq -o APT::Sandbox::User=root "${pkgs[@]}") ||
		die "apt-get download ${pkgs[*]} ($SOURCE) failed"
	mkdir -p "$dir"
	local deb
	for deb in "$CACHE/debs.tmp.$1"/*.deb; do
		dpkg -x "$deb" "$dir"
	done
	rm -rf "$CACHE/debs.tmp.$1"
	# Debian 13's packages ship the modules under /usr/lib (merged /usr).
	if [ ! -e "$dir/lib/modules" ] && [ -d "$dir/usr/lib/modules" ]; then
		ln -sfn usr/lib "$dir/lib"
	fi
	# The headers' build link points at /usr/src, absolute: make it point into the cache.
	ln -sfn "$dir/usr/src/linux-headers-$version" "$dir/lib/modules/$version/build"
	ln -sfn "$dir/usr/src/linux-headers-$abi-$common" "$dir/lib/modules/$version/source"
	depmod -b "$dir" "$version"
	touch "$dir/.complete"
}

# link_modules VERSION: make /lib/modules/VERSION show the cached modules. A
# directory already there (Debian's linux-headers package makes one for the
# host's headers) keeps its entries; the cached ones are linked in beside them.
link_modules() {
	local version=$1 src=$CACHE/$1/lib/modules/$1 dst=/lib/modules/$1 e
	if [ -L "$dst" ] || [ ! -e "$dst" ]; then
		ln -sfn "$src" "$dst"
		return
	fi
	for e in "$src"/*; do
		[ -e "$dst/$(basename "$e")" ] && [ ! -L "$dst/$(basename "$e")" ] && continue
		case $(basename "$e") in build | source) [ -e "$dst/$(basename "$e")" ] && continue ;; esac
		ln -sfn "$e" "$dst/$(basename "$e")"
	done
}

# --- The arm64 guest -------------------------------------------------------
# Debian's arm64 6.1 kernel (linux-image-ABI-arm64-unsigned, pinned in its
# KERNELS_TABLE row like the 6.1 amd64 ones) in qemu-system-aarch64 under TCG. The
# host's root is amd64, so the guest's root is an arm64 userland of its own:
# the .debs of ARM64_ROOT_PACKAGES and their dependencies, unpacked with
# `dpkg -x` (no maintainer scripts run) and packed into an initramfs, which
# the guest runs from RAM. Its PID 1 (kernels-arm64-init.sh) mounts the host's
# root read-only over 9p and binds the host's /work, /root... at their own
# paths, so the (arm64) test binaries and sources are where the host has them.
# The arm64 packages come through a private apt configuration under
# $CACHE/apt-arm64: the host's dpkg gains no foreign architecture.
ARM64_APT_PACKAGES=(qemu-system-arm cpio)
# What the guest runs: guest.sh (bash, coreutils, util-linux's mount and
# mountpoint), its reaper.py (python3 with ctypes: libpython3.11-stdlib), the
# tests' /bin/sh, /bin/true, /bin/sleep, setsid and stress-ng, curl (with
# OpenSSL's libssl3: the grpc capture's OpenSSL probes), and modprobe (kmod)
# and poweroff (busybox) for the init.
ARM64_ROOT_PACKAGES=(bash dash coreutils util-linux mount grep sed findutils kmod busybox-static
	stress-ng python3.11-minimal libpython3.11-stdlib curl)
# The modules the init loads before it can reach the host (all =m in Debian's config).
ARM64_INIT_MODULES=(virtio_mmio virtio-rng 9pnet_virtio 9p)
ARM64_APT=$CACHE/apt-arm64
ARM64_ROOT=$CACHE/arm64-root # the unpacked userland; ARM64_ROOT.cpio is its initramfs

# arch_of KERNEL -> amd64 or arm64: which QEMU boots it and what its test binaries are compiled for.
arch_of() {
	entry "$(canonical "$1")"
	case $FLAV in
	arm64) echo arm64 ;;
	*) echo amd64 ;;
	esac
}

# apt_arm64 CMD ARG...: apt-get or apt-cache with arm64 as the only architecture.
apt_arm64() {
	local cmd=$1
	shift
	APT_CONFIG=$ARM64_APT/apt.conf "$cmd" "$@"
}

setup_apt_arm64() {
	mkdir -p "$ARM64_APT/sources" "$ARM64_APT/state/lists/partial" "$ARM64_APT/cache/archives/partial"
	touch "$ARM64_APT/state/status" # no arm64 package is installed anywhere
	# The host's Debian archives (deb.debian.org, bookworm, -updates, -security), for arm64.
	sed -e '/^Architectures:/d' -e 's/^Types: deb$/&\nArchitectures: arm64/' \
		/etc/apt/sources.list.d/debian.sources >"$ARM64_APT/sources/debian.sources"
	cat >"$ARM64_APT/apt.conf" <<-CONF
		Dir::State "$ARM64_APT/state";
		Dir::State::status "$ARM64_APT/state/status";
		Dir::Cache "$ARM64_APT/cache";
		Dir::Etc::SourceList "/dev/null";
		Dir::Etc::SourceParts "$ARM64_APT/sources";
		APT::Architecture "arm64";
		APT::Architectures { "arm64"; };
		APT::Sandbox::User "root";
		Acquire::Languages "none";
	CONF
	apt_arm64 apt-get update -qq
}

# fetch_kernel_arm64 ABI PKGVER: linux-image-ABI-arm64-unsigned unpacked under
# $CACHE/ABI-arm64 (no headers: bpftrace does not run there), modules indexed.
fetch_kernel_arm64() {
	local abi=$1 pkgver=$2 version=$1-arm64 dir=$CACHE/$1-arm64
	[ -f "$dir/.complete" ] && return
	local pkg="linux-image-$version-unsigned=$pkgver"
	log "downloading $pkg (arm64)"
	rm -rf "$dir" "$CACHE/debs-arm64.tmp"
	mkdir -p "$CACHE/debs-arm64.tmp" "$dir"
	(cd "$CACHE/debs-arm64.tmp" && apt_arm64 apt-get download -qq "$pkg") || die "apt-get download $pkg (arm64) failed"
	dpkg -x "$CACHE"/debs-arm64.tmp/*.deb "$dir"
	rm -rf "$CACHE/debs-arm64.tmp"
	depmod -b "$dir" "$version"
	touch "$dir/.complete"
}

# fetch_root_arm64: ARM64_ROOT_PACKAGES and what they depend on (apt's own
# resolution against an empty dpkg status), unpacked into $ARM64_ROOT. Its
# .complete holds the list: a changed list builds the root again.
root_arm64_ready() { [ "$(cat "$ARM64_ROOT/.complete" 2>/dev/null)" = "${ARM64_ROOT_PACKAGES[*]}" ]; }

fetch_root_arm64() {
	root_arm64_ready && return
	local pkgs deb
	pkgs=$(apt_arm64 apt-get install -s -qq --no-install-recommends "${ARM64_ROOT_PACKAGES[@]}" | awk '/^Inst /{print $2}')
	[ -n "$pkgs" ] || die "apt could not resolve the arm64 root's packages"
	log "downloading the arm64 userland ($(echo "$pkgs" | wc -l) packages)"
	rm -rf "$ARM64_ROOT" "$CACHE/debs-arm64.tmp"
	mkdir -p "$CACHE/debs-arm64.tmp" "$ARM64_ROOT"
	# shellcheck disable=SC2086 # one package a word
	(cd "$CACHE/debs-arm64.tmp" && apt_arm64 apt-get download -qq $pkgs) || die "apt-get download (arm64 root) failed"
	for deb in "$CACHE"/debs-arm64.tmp/*.deb; do
		dpkg -x "$deb" "$ARM64_ROOT"
	done
	rm -rf "$CACHE/debs-arm64.tmp"
	(
		cd "$ARM64_ROOT"
		rm -rf usr/share/doc usr/share/man usr/share/info usr/share/locale
		# The host's /root is bound there (HOME, the caches).
		rm -rf root
		ln -sfn python3.11 usr/bin/python3
		mkdir -p etc proc sys dev run tmp host
		printf 'root:x:0:0:root:/root:/bin/bash\n' >etc/passwd
		printf 'root:x:0:\n' >etc/group
		printf '127.0.0.1 localhost\n::1 localhost\n' >etc/hosts
	)
	echo "${ARM64_ROOT_PACKAGES[*]}" >"$ARM64_ROOT/.complete"
	rm -f "$ARM64_ROOT.cpio"
}

# initramfs_arm64 VERSION: the guest's initramfs, $CACHE/VERSION/initrd.cpio:
# the arm64 root, ARM64_INIT_MODULES with what they need, and the init
# (rebuilt when the init script changed).
initramfs_arm64() {
	local version=$1 kdir=$CACHE/$1 init
	init=$(dirname "$(readlink -f "$0")")/kernels-arm64-init.sh
	local out=$kdir/initrd.cpio
	if [ -s "$out" ] && [ "$out" -nt "$init" ] && [ "$out" -nt "$ARM64_ROOT/.complete" ]; then
		echo "$out"
		return
	fi
	local stage
	stage=$(mktemp -d "$CACHE/initrd-arm64.XXXXXX")
	local m
	# The modules, by modules.dep (modprobe --show-depends reads the target's tree).
	for m in $(modprobe -d "$kdir" -S "$version" --show-depends -a "${ARM64_INIT_MODULES[@]}" | awk '$1 == "insmod" {print $2}'); do
		mkdir -p "$stage/$(dirname "${m#"$kdir"}")"
		cp "$m" "$stage/${m#"$kdir"}"
	done
	cp "$kdir/lib/modules/$version"/modules.order "$kdir/lib/modules/$version"/modules.builtin* "$stage/lib/modules/$version/"
	depmod -b "$stage" "$version"
	install -m 755 "$init" "$stage/init"
	# Two archives back to back (the kernel unpacks both): the root, then the rest.
	# The temporary names are taken once: a ( subshell )'s redirection is
	# its own, where $BASHPID is the subshell's (a cold setup failed on it).
	local tmp=$ARM64_ROOT.cpio.$BASHPID
	if [ ! -s "$ARM64_ROOT.cpio" ]; then
		(cd "$ARM64_ROOT" && find . ! -name .complete | LC_ALL=C sort | cpio -o -H newc --quiet) >"$tmp"
		mv "$tmp" "$ARM64_ROOT.cpio"
	fi
	tmp=$out.$BASHPID
	{
		cat "$ARM64_ROOT.cpio"
		(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc --quiet)
	} >"$tmp"
	mv "$tmp" "$out"
	rm -rf "$stage"
	echo "$out"
}

setup_arm64() {
	local abi=$1 pkgver=$2
	local missing=() p
	for p in "${ARM64_APT_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		log "installing ${missing[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	fi
	if [ ! -f "$CACHE/$abi-arm64/.complete" ] || ! root_arm64_ready; then
		setup_apt_arm64
	fi
	fetch_kernel_arm64 "$abi" "$pkgver"
	fetch_root_arm64
	initramfs_arm64 "$abi-arm64" >/dev/null
}

# launch_arm64: boots the arm64 guest for run() (its locals: image, version,
# script, resultdir, cpus, memory, qemu_opts, vm_timeout). Debian's arm64
# vmlinuz is a plain (uncompressed) Image, which -kernel boots as it is.
launch_arm64() {
	local initrd
	# The init reads them from the kernel's command line, split at spaces.
	case "$script$resultdir$CACHE" in *[[:space:]]*) die "the arm64 guest takes no spaces in $script, $resultdir, $CACHE" ;; esac
	initrd=$(initramfs_arm64 "$version")
	local fs=security_model=none,multidevs=remap
	# shellcheck disable=SC2086 # qemu_opts: words
	exec timeout -k 30 "$vm_timeout" nice -n 5 qemu-system-aarch64 \
		-M virt -cpu "${KERNELS_ARM64_CPU:-neoverse-n1}" -smp "$cpus" -m "$memory" $qemu_opts \
		-display none -monitor none -serial stdio -no-reboot \
		-kernel "$image" -initrd "$initrd" \
		-append "console=ttyAMA0 rdinit=/init panic=-1 otelcol.script=$script otelcol.resultdir=$resultdir otelcol.modules=$CACHE/$version/lib/modules/$version" \
		-fsdev "local,id=hostroot,path=/,readonly=on,$fs" -device virtio-9p-device,fsdev=hostroot,mount_tag=hostroot \
		-fsdev "local,id=results,path=$resultdir,$fs" -device virtio-9p-device,fsdev=results,mount_tag=results \
		-device virtio-rng-device </dev/null
}

# setup [KERNEL...]: QEMU, virtme-ng and the kernels (default: every one).
setup() {
	[ "$(id -u)" = 0 ] || die "setup needs root (apt-get, /lib/modules)"
	mkdir -p "$CACHE" "$STATE"
	install_packages
	install_vng
	local k abi pkgver want=("$@")
	[ ${#want[@]} -gt 0 ] || mapfile -t want < <(names)
	for k in "${want[@]}"; do
		k=$(canonical "$k")
		entry "$k"
		if [ "$FLAV" = arm64 ]; then
			# Pinned only: no fallback (apt_private reads no arm64 archive).
			setup_arm64 "$PIN_ABI" "$PIN_VERSION"
			printf 'ABI=%s\nPKGVER=%s\n' "$PIN_ABI" "$PIN_VERSION" >"$STATE/$k.env"
			log "ready: $k = $PIN_ABI-$FLAV ($PIN_VERSION) in $CACHE"
			continue
		fi
		abi='' pkgver=''
		if [ -f "$STATE/$k.env" ]; then
			# shellcheck source=/dev/null
			. "$STATE/$k.env"
			abi=$ABI pkgver=$PKGVER
		fi
		# A fallback is left as soon as apt serves the pinned version again.
		if [ -z "$abi" ] || { [ "$abi $pkgver" != "$PIN_ABI $PIN_VERSION" ] &&
			[ -n "$(served "$SOURCE" "linux-image-$PIN_ABI-$FLAV-unsigned" "$PIN_VERSION")" ]; }; then
			read -r abi pkgver < <(choose "$k") || true
			[ -n "$abi" ] || die "no $k kernel to be had (see above)"
		fi
		fetch_kernel "$k" "$abi" "$pkgver"
		link_modules "$abi-$FLAV"
		printf 'ABI=%s\nPKGVER=%s\n' "$abi" "$pkgver" >"$STATE/$k.env"
		log "ready: $k = $abi-$FLAV ($pkgver) in $CACHE"
	done
}

# version_of KERNEL: the kernel release (uname -r) setup settled on.
version_of() {
	local k
	k=$(canonical "$1")
	entry "$k"
	[ -f "$STATE/$k.env" ] || die "no $k kernel in $CACHE: run '$0 setup $k' first"
	# shellcheck source=/dev/null
	. "$STATE/$k.env"
	echo "$ABI-$FLAV"
}

vmlinuz() {
	local version
	version=$(version_of "$1")
	echo "$CACHE/$version/boot/vmlinuz-$version"
}

# launch_vng: boots an amd64 guest for run() (its locals) with virtme-ng,
# over the host's root. RESULTDIR is the guest's working directory too: vng
# runs --exec in the cwd.
launch_vng() {
	cd "$resultdir" && PATH="$VENV/bin:$PATH" exec timeout -k 30 "$vm_timeout" vng --verbose \
		--disable-kvm --run "$image" --memory "$memory" --cpus "$cpus" --rwdir "$resultdir" \
		--qemu-opts="$qemu_opts" \
		--exec "touch $resultdir/.guest-started; bash $script $resultdir; echo \$? > $resultdir/guest-status"
}

# run KERNEL SCRIPT RESULTDIR: the guest runs SCRIPT with RESULTDIR as its
# only writable host folder and writes SCRIPT's exit status to
# RESULTDIR/guest-status (vng's own status does not always carry it).
run() {
	[ $# -eq 3 ] || die "usage: $0 run KERNEL SCRIPT RESULTDIR"
	local kernel=$1 script=$2 resultdir=$3
	[ -r "$script" ] || die "no script $script"
	mkdir -p "$resultdir"
	resultdir=$(cd "$resultdir" && pwd)
	script=$(cd "$(dirname "$script")" && pwd)/$(basename "$script")
	local image version
	version=$(version_of "$kernel")
	image=$(vmlinuz "$kernel")
	[ -r "$image" ] || die "no $image: run '$0 setup'"
	local launch=launch_vng
	if [ "$(arch_of "$kernel")" = arm64 ]; then
		launch=launch_arm64
	else
		link_modules "$version"
	fi
	local memory=${KERNELS_MEMORY:-3G} cpus=${KERNELS_CPUS:-2}
	local boot_timeout=${KERNELS_BOOT_TIMEOUT:-180} vm_timeout=${KERNELS_VM_TIMEOUT:-1800}
	local attempts=${KERNELS_BOOT_ATTEMPTS:-3} attempt=1 start=$SECONDS rc=0 pid
	# One TCG thread for all vCPUs (round robin), not one each (QEMU 7.2's
	# default). With one each, guests hung in the ebpfexporter tests: both
	# CPUs stuck at do_nanosleep+0x0 (the fixtures' kprobe/fentry target,
	# which the Go runtime calls all the time) while memory there held the
	# ftrace nop again; the console showed soft lockups on both, for good.
	# Our reading: a vCPU kept running a stale translation of the int3 that
	# another vCPU put there while patching the function's first
	# instruction. One thread cannot run a vCPU while another patches. It
	# costs about a tenth: in clean-clone CI runs the stock guest took 467 s
	# and the RT guest 643 s, against 421 s and 560-615 s before.
	# KERNELS_TCG_THREAD=multi brings one thread per vCPU back;
	# KERNELS_QEMU_OPTS adds QEMU arguments (a monitor socket, to look at a
	# hung guest).
	local qemu_opts="-accel tcg,thread=${KERNELS_TCG_THREAD:-single}${KERNELS_QEMU_OPTS:+ $KERNELS_QEMU_OPTS}"
	while :; do
		rm -f "$resultdir/guest-status" "$resultdir/.guest-started"
		log "booting $kernel ($version, TCG thread=${KERNELS_TCG_THREAD:-single}, $cpus CPUs, $memory): $script (attempt $attempt)"
		rc=0
		# A guest that hangs (a kernel lockup) is stopped after vm_timeout seconds.
		("$launch") &
		pid=$!
		# Under TCG an early boot now and then stalls for good (seen with the RT
		# kernel, QEMU spinning): a guest that has not started the script after
		# boot_timeout seconds is stopped and booted again.
		local waited=0
		while kill -0 "$pid" 2>/dev/null && [ ! -e "$resultdir/.guest-started" ] && [ $waited -lt "$boot_timeout" ]; do
			sleep 2
			waited=$((waited + 2))
		done
		if [ ! -e "$resultdir/.guest-started" ] && kill -0 "$pid" 2>/dev/null; then
			pkill -TERM -P "$pid" 2>/dev/null || true
			kill "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
			echo >&2
			if [ "$attempt" -ge "$attempts" ]; then
				log "$kernel: the guest did not start the script within ${boot_timeout}s, $attempt times: giving up"
				rc=1
				break
			fi
			log "$kernel: the guest did not start the script within ${boot_timeout}s (boot stalled): booting again"
			attempt=$((attempt + 1))
			continue
		fi
		wait "$pid" || rc=$?
		break
	done
	echo "$attempt" >"$resultdir/boot-attempts"
	local wall=$((SECONDS - start))
	echo >&2 # the guest console's last line may lack its newline
	if [ -s "$resultdir/guest-status" ]; then
		rc=$(cat "$resultdir/guest-status")
	else
		if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
			log "the guest did not finish within ${vm_timeout}s (hung?): stopped"
		else
			log "the guest wrote no status (vng or QEMU exited $rc): boot or QEMU failure"
		fi
		[ "$rc" = 0 ] && rc=1
	fi
	echo "$wall" >"$resultdir/wall-seconds"
	log "$kernel ($version): guest script exited $rc, wall ${wall}s"
	# Under TCG a guest now and then locks up mid-run (soft lockups while the
	# kernel patches its text, seen about once in five runs): a guest that
	# wrote no status is run once more from the start.
	if [ ! -s "$resultdir/guest-status" ] && [ -z "${KERNELS_RETRIED:-}" ]; then
		log "$kernel: the guest wrote no status; running it once more"
		KERNELS_RETRIED=1 run "$kernel" "$script" "$resultdir"
		return
	fi
	return "$rc"
}

case ${1:-} in
setup) shift; setup "$@" ;;
run) shift; run "$@" ;;
list) names ;;
vmlinuz) vmlinuz "$2" ;;
version) version_of "$2" ;;
arch) arch_of "$2" ;;
*) die "usage: $0 setup | run KERNEL SCRIPT RESULTDIR | list | vmlinuz KERNEL | version KERNEL | arch KERNEL" ;;
esac
