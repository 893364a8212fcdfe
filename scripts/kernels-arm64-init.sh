#!/bin/bash
# PID 1 of the arm64 guest (scripts/kernels.sh run arm64 SCRIPT RESULTDIR).
# The guest's root is the arm64 userland of the initramfs (in RAM, writable);
# it mounts the host's root read-only over 9p at /host, binds the host's
# top-level folders that the arm64 root lacks (/work, /root, /home...) and
# the folders of its /tmp at
# their own paths, so the host's paths (test binaries, sources, SCRIPT) are
# the guest's too, and mounts RESULTDIR writable over it. Then, like a
# virtme-ng guest, it runs `bash SCRIPT RESULTDIR` in RESULTDIR, writes its
# exit status to RESULTDIR/guest-status and powers off.
#
# Kernel command line: otelcol.script=SCRIPT otelcol.resultdir=RESULTDIR
# otelcol.modules=DIR (the host's copy of the kernel's /lib/modules/VERSION).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb

say() { echo "arm64-init: $*"; }
poweroff_now() {
	sync
	busybox poweroff -f
	echo o >/proc/sysrq-trigger
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm /run /tmp /host
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mount -t cgroup2 cgroup2 /sys/fs/cgroup
ln -sfn /proc/self/fd /dev/fd
# Loopback up (the tests' servers listen on 127.0.0.1), as virtme-ng does.
busybox ip link set lo up

script='' resultdir='' modules=''
for arg in $(cat /proc/cmdline); do
	case $arg in
	otelcol.script=*) script=${arg#*=} ;;
	otelcol.resultdir=*) resultdir=${arg#*=} ;;
	otelcol.modules=*) modules=${arg#*=} ;;
	esac
done

# virtio-mmio devices: the two 9p shares and an entropy source (Go's
# crypto/rand would otherwise wait for the kernel's random pool).
modprobe -a virtio_mmio virtio-rng 9pnet_virtio 9p || { say "modprobe failed"; poweroff_now; }
opts=trans=virtio,version=9p2000.L,msize=512000
# The host's root is read-only: cache it (cache=loose) like a local disk.
mount -t 9p -o "$opts,ro,cache=loose" hostroot /host || { say "cannot mount the host's root"; poweroff_now; }
for d in /host/*; do
	n=/${d#/host/}
	case $n in /tmp | /proc | /sys | /dev | /run | /host) continue ;; esac
	[ -d "$d" ] && [ ! -L "$d" ] || continue
	# Missing here, or empty (the kernel's own initramfs makes /root).
	[ ! -e "$n" ] || [ -z "$(ls -A "$n")" ] || continue
	mkdir -p "$n" && mount --bind "$d" "$n"
done
# The host's /tmp holds clones and results (a CI clone, KERNELS_RESULTS):
# each of its folders is bound read-only at its own path; /tmp itself stays
# the guest's own (RAM), where the tests' temporary files go.
for d in /host/tmp/*; do
	[ -d "$d" ] && [ ! -L "$d" ] || continue
	n=/tmp/${d#/host/tmp/}
	mkdir -p "$n" && mount --bind "$d" "$n"
done
# The kernel's other modules, for what the tests load on demand.
if [ -n "$modules" ] && [ -d "/host$modules" ]; then
	mount --bind "/host$modules" "/lib/modules/$(uname -r)"
fi
mkdir -p "$resultdir" # the guest's own, unless the host's /tmp holds it
mount -t 9p -o "$opts" results "$resultdir" || { say "cannot mount $resultdir"; poweroff_now; }

say "up in $(cut -d' ' -f1 /proc/uptime)s"
touch "$resultdir/.guest-started"
cd "$resultdir" || poweroff_now
bash "$script" "$resultdir"
echo $? >"$resultdir/guest-status"
cd /
umount "$resultdir"
poweroff_now
