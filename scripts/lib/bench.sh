# shellcheck shell=bash
# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
# Sourced by the benches (bench-agent.sh, bench-grpc.sh: a collector
# exporting to a gateway on loopback; bench-http1.sh): the gateway's config,
# a sum of a collector's own metric, processes' CPU time, and the BPF run
# time of the programs a collector holds.

# gateway_config FILE OTLP_PORT METRICS_PORT: the gateway, a second
# bin/otelcol-seq: OTLP/gRPC in on 127.0.0.1:OTLP_PORT, the debug exporter at
# basic verbosity out (logs and traces), its own telemetry on
# 127.0.0.1:METRICS_PORT (otelcol_receiver_accepted_*: what it received).
# Its CPU is the gateway's node's: the benches do not count it.
gateway_config() {
	cat >"$1" <<YAML
receivers:
  otlp:
    protocols:
      grpc: {endpoint: 127.0.0.1:$2}
exporters:
  debug: {verbosity: basic}
service:
  telemetry:
    metrics:
      level: normal
      readers: [{pull: {exporter: {prometheus: {host: 127.0.0.1, port: $3}}}}]
  pipelines:
    logs: {receivers: [otlp], exporters: [debug]}
    traces: {receivers: [otlp], exporters: [debug]}
YAML
}

# prom_sum NAME [LABEL]: the sum of the series of NAME (or NAME_total) in
# a collector's Prometheus telemetry on stdin, only those whose line holds
# LABEL (e.g. counter="busy") when given; 0 where there are none.
prom_sum() {
	awk -v m="$1" -v l="${2:-}" \
		'$1 ~ "^"m"(_total)?({|$)" && (l == "" || index($0, l)) {s += $NF} END {printf "%d\n", s}'
}

# bpf_prog_stats PID: a line "NAME RUN_TIME_NS RUN_CNT" for every BPF
# program PID holds (by a program's fd or a link's), each program once; the
# counts grow while the statistics are on (bpf_stats_start).
bpf_prog_stats() {
	local id
	grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -u | while read -r id; do
		bpftool prog show id "$id" 2>/dev/null | awk 'NR == 1 {
			t = 0; c = 0
			for (i = 1; i < NF; i++) {
				if ($i == "name") n = $(i + 1)
				if ($i == "run_time_ns") t = $(i + 1)
				if ($i == "run_cnt") c = $(i + 1)
			}
			print n, t, c
		}'
	done
}

# cpu_ticks PID...: the user + system clock ticks of the processes, summed
# (one that has ended counts 0).
cpu_ticks() {
	local p s=0 t
	for p in "$@"; do
		t=$(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null) || t=0
		s=$((s + ${t:-0}))
	done
	echo "$s"
}

# bpf_stats_start BENCH FILE: turns the kernel's BPF run-time statistics on
# until the bench exits (the holder's pid goes into the caller's pids, which
# its exit kills), or exits naming BENCH when they do not turn on. A process
# holds the file descriptor of BPF_ENABLE_STATS, which the kernel counts
# with every other holder's and with kernel.bpf_stats_enabled, so another
# bench turning the sysctl off meanwhile does not stop them. FILE says "on"
# once they are.
bpf_stats_start() {
	rm -f "$2"
	python3 -c '
import ctypes, platform, signal, sys
nr = {"x86_64": 321, "aarch64": 280}[platform.machine()]  # bpf(2)
attr = (ctypes.c_uint8 * 128)()  # enable_stats.type: BPF_STATS_RUN_TIME (0)
if ctypes.CDLL(None, use_errno=True).syscall(nr, 32, attr, 4) < 0:  # BPF_ENABLE_STATS
    sys.exit("BPF_ENABLE_STATS: errno %d" % ctypes.get_errno())
open(sys.argv[1], "w").write("on\n")
signal.pause()' "$2" &
	pids+=("$!")
	local holder=$! _
	for _ in $(seq 50); do
		[ -s "$2" ] && return 0
		kill -0 "$holder" 2>/dev/null || break
		sleep 0.1
	done
	echo "$1: the BPF statistics did not turn on (BPF_ENABLE_STATS, root)" >&2
	exit 1
}
