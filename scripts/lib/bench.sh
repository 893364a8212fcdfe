# shellcheck shell=bash
# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
# Sourced by the benches that measure a collector exporting to a gateway on
# loopback (bench-agent.sh, bench-grpc.sh): the gateway's config, a sum of a
# collector's own metric, and the BPF run time of the programs it holds.

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
# counts grow while kernel.bpf_stats_enabled is 1.
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
