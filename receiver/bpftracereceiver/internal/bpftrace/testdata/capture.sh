#!/bin/bash
# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
# Regenerates testdata/capture/*: real bpftrace -f json output (stdout) and
# stderr, captured on the host this runs on (root, bpftrace installed).
#   sudo ./capture.sh
# The parser tests read these files; they were captured with bpftrace v0.17.0
# on Linux 6.18.
set -u
cd "$(dirname "$0")"
out=capture
mkdir -p "$out"
bpftrace --version > "$out/version.txt"

# run NAME SECONDS BPFTRACE-ARGS...: run bpftrace for SECONDS, then SIGINT.
run() {
	local name=$1 secs=$2
	shift 2
	timeout -s INT "$secs" bpftrace -f json "$@" > "$out/$name.jsonl" 2> "$out/$name.stderr"
	echo "$name: rc=$?"
}
# compose FILE PROBE: the script followed by an appended probe, as the runner does.
compose() {
	cat "$1"
	printf '\n%s\n' "$2"
}

(sleep 2; /bin/echo capture-marker "two words" x > /dev/null) &
run execsnoop 3 /usr/sbin/execsnoop.bt
wait

(sleep 2; kill -0 $$; kill -0 1) &
run killsnoop 3 /usr/sbin/killsnoop.bt
wait

compose /usr/sbin/syscount.bt 'interval:ms:500 { print(@syscall); print(@process); }' > /tmp/syscount-composed.bt
run syscount 2.5 /tmp/syscount-composed.bt

compose runqlat_btf.bt 'interval:ms:500 { print(@usecs); }' > /tmp/runqlat-composed.bt
run runqlat 2.5 /tmp/runqlat-composed.bt
run runqlat_shipped 5 /usr/sbin/runqlat.bt

run types 5 --unsafe types.bt
run undefined_map 5 -e 'BEGIN { @a = count(); } interval:ms:100 { print(@nope); }'
run syntax_error 5 -e 'BEGIN { @x = 1; '
BPFTRACE_MAP_KEYS_MAX=1 run helper_error 5 -k -e 'BEGIN { @m[1] = 1; @m[2] = 2; exit(); }'

# Lost events: a one-page perf ring buffer and a flood of printf.
(for i in 1 2 3; do find /usr -name '*.h' > /dev/null & done; wait) &
BPFTRACE_PERF_RB_PAGES=1 run lost_events_full 2 -e 'tracepoint:raw_syscalls:sys_enter { printf("%s %d %s\n", comm, pid, kstack); }'
wait
{ grep -m 20 -v '"printf"' "$out/lost_events_full.jsonl"; grep -m 5 '"printf"' "$out/lost_events_full.jsonl"; } > "$out/lost_events.jsonl"
mv "$out/lost_events_full.stderr" "$out/lost_events.stderr"
rm -f "$out/lost_events_full.jsonl" /tmp/syscount-composed.bt /tmp/runqlat-composed.bt
