#!/usr/bin/env bash
# Runs inside a test/kernels guest (scripts/kernels.sh run): every test binary
# of RESULTDIR/manifest, from its package's source directory (testdata is
# read there; the host's root is read-only, /tmp is a writable overlay).
# Writes <name>.log and <name>.rc per binary; exits 1 if any failed.
#
# guest.sh RESULTDIR
set -uo pipefail

dir=$1
here=$(cd "$(dirname "$0")" && pwd)
{
	echo "uname: $(uname -r)"
	echo "arch: $(uname -m)"
	echo "realtime: $(cat /sys/kernel/realtime 2>/dev/null || echo 0)"
	echo "cpus: $(nproc)"
} >"$dir/kernel.txt"

# virtme-ng mounts tracefs, debugfs and cgroup2; bpffs is ours to mount.
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
mountpoint -q /sys/kernel/debug || mount -t debugfs nodev /sys/kernel/debug
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
ulimit -l unlimited 2>/dev/null || true
export TMPDIR=/tmp

# The host's settings (run.sh: GUEST_ENV), among them every path the tests
# need outside their package (EBPF_EXPORTER_BIN, PYGRPC_CACHE, GRPCTLS_BIN):
# this guest's HOME is not the host's, and nothing may be looked up under it.
while IFS= read -r kv; do
	[ -n "$kv" ] && export "${kv?}"
done <"$dir/env"

# Kernel headers: bpftrace compiles a script that #includes them (the shipped
# runqlat.bt) in minutes under TCG, past any sane wait, so the guests hide
# /lib/modules/VERSION/{build,source} (in the guest's writable overlay of
# /usr/lib; the host keeps them) and the test takes its documented no-headers
# path (testdata/runqlat_btf.bt). The host run covers the headers path.
# KERNELS_HEADERS=1 keeps them.
if [ "${KERNELS_HEADERS:-0}" != 1 ]; then
	m=/lib/modules/$(uname -r)
	if [ -L "$m" ]; then # a link to the cache: make it a directory of links
		real=$(readlink -f "$m")
		rm -f "$m" && mkdir "$m"
		for e in "$real"/*; do ln -s "$e" "$m/"; done
	fi
	rm -f "$m/build" "$m/source"
	if [ -e "$m/build" ] || [ -e "$m/source" ]; then
		echo "guest: could not hide the kernel headers in $m"
	else
		echo "guest: kernel headers hidden from bpftrace"
	fi
fi

# The first bpftrace start reads LLVM's libraries over 9p: seconds under TCG,
# past the receiver's 10 s version check. Page them in once.
if command -v bpftrace >/dev/null; then
	start=$SECONDS
	bpftrace -e 'BEGIN { exit(); }' >/dev/null 2>&1
	echo "guest: bpftrace warm-up $((SECONDS - start))s"
fi

# A heartbeat on the console: a guest that stops printing it has hung.
(while sleep 60; do echo "guest: alive, uptime $(cut -d' ' -f1 /proc/uptime)s, load $(cut -d' ' -f1-3 /proc/loadavg)"; done) &
heartbeat=$!

status=0
while IFS=';' read -r name bin src timeout run skip; do
	args=(-test.v -test.count=1 "-test.timeout=$timeout")
	[ -n "$run" ] && args+=("-test.run=$run")
	[ -n "$skip" ] && args+=("-test.skip=$skip")
	echo "guest: $name: ${args[*]}"
	start=$SECONDS
	# reaper.py reaps the orphans the tests leave: virtme-ng-init does not.
	(cd "$src" && /usr/bin/python3 "$here/reaper.py" "$bin" "${args[@]}") >"$dir/$name.log" 2>&1 </dev/null
	rc=$?
	echo "$rc" >"$dir/$name.rc"
	echo "$((SECONDS - start))" >"$dir/$name.seconds"
	echo "guest: $name: exit $rc in $((SECONDS - start))s"
	[ "$rc" = 0 ] || status=1
done <"$dir/manifest"
kill "$heartbeat" 2>/dev/null
exit $status
