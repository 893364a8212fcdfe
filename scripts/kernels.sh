#!/usr/bin/env bash
# Kernels for the test matrix (make test-kernels), booted in QEMU with virtme-ng.
#
#   scripts/kernels.sh setup                      install QEMU, virtme-ng and the kernels (idempotent)
#   scripts/kernels.sh run KERNEL SCRIPT RESULTDIR boot KERNEL, run SCRIPT in it; exit with its status
#   scripts/kernels.sh list                       the kernel names, one a line
#   scripts/kernels.sh vmlinuz KERNEL             path of KERNEL's image
#
# KERNEL is `stock` (Debian's 6.1 amd64) or `rt` (Debian's 6.1 PREEMPT_RT).
# Everything lives in $KERNELS_CACHE (default ~/.cache/otelcol-seq/kernels),
# outside the clone, so that later clones reuse it. Root only: it installs
# Debian packages and links /lib/modules/VERSION to the cached modules.
#
# /dev/kvm here is nested PVM and boots no stock kernel: QEMU runs without
# KVM (TCG), so a guest is some ten times slower than the host.
set -euo pipefail

# The pinned kernels: Debian bookworm's 6.1 ABI and its package version. Change
# both together. When apt no longer serves this version, setup falls back to
# the newest 6.1.0-NN that it serves and says so.
KERNEL_ABI=6.1.0-56
KERNEL_PKG_VERSION=6.1.192-2
VIRTME_NG_VERSION=1.42
APT_PACKAGES=(qemu-system-x86 kmod busybox-static)

CACHE=${KERNELS_CACHE:-$HOME/.cache/otelcol-seq/kernels}
VENV=$CACHE/venv
STATE=$CACHE/kernels.env # the versions setup settled on

log() { printf 'kernels: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# flavour KERNEL -> the Debian flavour suffix.
flavour() {
	case $1 in
	stock) echo amd64 ;;
	rt) echo rt-amd64 ;;
	*) die "unknown kernel '$1' (want: stock, rt)" ;;
	esac
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

# choose_abi: the pinned ABI when apt serves it, else the newest served one.
choose_abi() {
	local pkg="linux-image-$KERNEL_ABI-amd64-unsigned" served newest
	served=$(apt-cache madison "$pkg" 2>/dev/null | awk -v v="$KERNEL_PKG_VERSION" '$3 == v {print $3}')
	if [ -z "$served" ]; then
		apt-get update -qq
		served=$(apt-cache madison "$pkg" 2>/dev/null | awk -v v="$KERNEL_PKG_VERSION" '$3 == v {print $3}')
	fi
	if [ -n "$served" ]; then
		echo "$KERNEL_ABI $KERNEL_PKG_VERSION"
		return
	fi
	newest=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$' | awk '{print $1}' | sort -V | tail -1)
	[ -n "$newest" ] || die "apt serves neither $pkg=$KERNEL_PKG_VERSION nor any linux-image-6.1.0-NN-amd64-unsigned; check /etc/apt/sources.list (bookworm, bookworm-security)"
	local abi=${newest#linux-image-}
	abi=${abi%-amd64-unsigned}
	local ver
	ver=$(apt-cache madison "$newest" | awk 'NR==1 {print $3}')
	log "WARNING: apt no longer serves the pinned $pkg=$KERNEL_PKG_VERSION;"
	log "WARNING: falling back to $newest=$ver. Pin it in scripts/kernels.sh (KERNEL_ABI, KERNEL_PKG_VERSION)."
	echo "$abi $ver"
}

# fetch_kernel FLAVOUR ABI PKGVER: linux-image (+ headers, for bpftrace's
# #includes) unpacked under $CACHE/VERSION, modules indexed with depmod.
fetch_kernel() {
	local flav=$1 abi=$2 pkgver=$3
	local version=$abi-$flav dir=$CACHE/$abi-$flav
	if [ -f "$dir/.complete" ]; then
		return
	fi
	local common=common
	[ "$flav" = rt-amd64 ] && common=common-rt
	local pkgs=("linux-image-$version-unsigned=$pkgver" "linux-headers-$version=$pkgver" "linux-headers-$abi-$common=$pkgver")
	log "downloading ${pkgs[*]}"
	rm -rf "$dir" "$CACHE/debs.tmp"
	mkdir -p "$CACHE/debs.tmp"
	(cd "$CACHE/debs.tmp" && apt-get download -qq -o APT::Sandbox::User=root "${pkgs[@]}") ||
		die "apt-get download ${pkgs[*]} failed"
	mkdir -p "$dir"
	local deb
	for deb in "$CACHE"/debs.tmp/*.deb; do
		dpkg -x "$deb" "$dir"
	done
	rm -rf "$CACHE/debs.tmp"
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

setup() {
	[ "$(id -u)" = 0 ] || die "setup needs root (apt-get, /lib/modules)"
	mkdir -p "$CACHE"
	install_packages
	install_vng
	local abi pkgver
	if [ -f "$STATE" ]; then
		# shellcheck source=/dev/null
		. "$STATE"
		abi=$ABI pkgver=$PKGVER
		if [ "$abi $pkgver" != "$KERNEL_ABI $KERNEL_PKG_VERSION" ] && apt-cache madison "linux-image-$KERNEL_ABI-amd64-unsigned" 2>/dev/null | grep -q " $KERNEL_PKG_VERSION "; then
			read -r abi pkgver < <(choose_abi)
		fi
	else
		read -r abi pkgver < <(choose_abi)
	fi
	local flav
	for flav in amd64 rt-amd64; do
		fetch_kernel "$flav" "$abi" "$pkgver"
		link_modules "$abi-$flav"
	done
	printf 'ABI=%s\nPKGVER=%s\n' "$abi" "$pkgver" >"$STATE"
	log "ready: $abi-amd64 and $abi-rt-amd64 ($pkgver) in $CACHE"
}

load_state() {
	[ -f "$STATE" ] || die "no kernels in $CACHE: run '$0 setup' first"
	# shellcheck source=/dev/null
	. "$STATE"
}

version_of() { load_state; echo "$ABI-$(flavour "$1")"; }

vmlinuz() {
	local version
	version=$(version_of "$1")
	echo "$CACHE/$version/boot/vmlinuz-$version"
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
	link_modules "$version"
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
		# RESULTDIR is the guest's working directory too: vng runs --exec in the cwd.
		# A guest that hangs (a kernel lockup) is stopped after vm_timeout seconds.
		(cd "$resultdir" && PATH="$VENV/bin:$PATH" exec timeout -k 30 "$vm_timeout" vng --verbose \
			--disable-kvm --run "$image" --memory "$memory" --cpus "$cpus" --rwdir "$resultdir" \
			--qemu-opts="$qemu_opts" \
			--exec "touch $resultdir/.guest-started; bash $script $resultdir; echo \$? > $resultdir/guest-status") &
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
			log "the guest wrote no status (vng exited $rc): boot or QEMU failure"
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
setup) setup ;;
run) shift; load_state; run "$@" ;;
list) echo stock; echo rt ;;
vmlinuz) vmlinuz "$2" ;;
version) version_of "$2" ;;
*) die "usage: $0 setup | run KERNEL SCRIPT RESULTDIR | list | vmlinuz KERNEL | version KERNEL" ;;
esac
