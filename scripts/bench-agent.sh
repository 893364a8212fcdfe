#!/usr/bin/env bash
# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
#
# make bench-agent (root): what the whole agent costs per process event, as an
# operator weighs it. bin/otelcol-seq runs the seq receiver (defaults), the
# batch processor and an OTLP/HTTP exporter to a second bin/otelcol-seq on
# loopback (the sink: OTLP/HTTP in, the debug exporter at basic verbosity
# out). Measured on the agent alone, from /proc/PID/stat (user + system):
#   idle        its CPU over BENCH_AGENT_IDLE seconds (10) with no load
#   storm       its CPU over `stress-ng --fork BENCH_AGENT_FORKERS --timeout
#               BENCH_AGENT_SECONDS` (2, 20), divided by the log records it
#               sent (otelcol_exporter_sent_log_records, its own telemetry)
# its peak resident memory (VmHWM) at the end, and, during the storm, a CPU
# profile of the agent (the pprof extension) over
# BENCH_AGENT_PROFILE seconds (10; at most the storm less 5 s) kept as
# bench-results/agent/cpu.pprof with its top functions and the CPU per event
# split by stage (tools/agentprofile: agent-profile.md and .png).
# BENCH_AGENT_BIN runs another build as the agent (a before/after pair).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
COLLECTOR=${BENCH_AGENT_BIN:-$ROOT/bin/otelcol-seq}
OUT=${BENCH_AGENT_OUT:-$ROOT/bench-results/agent}
IDLE=${BENCH_AGENT_IDLE:-10}
SECONDS_STORM=${BENCH_AGENT_SECONDS:-20}
FORKERS=${BENCH_AGENT_FORKERS:-2}
PROFILE=${BENCH_AGENT_PROFILE:-10}
SINK_PORT=14318 METRICS_PORT=18888 PPROF_PORT=11777
mkdir -p "$OUT"
[ -x "$COLLECTOR" ] || { echo "bin/otelcol-seq is missing: make build" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "bench-agent loads BPF programs: run it as root" >&2; exit 1; }
command -v stress-ng >/dev/null || { echo "stress-ng is missing: make deps" >&2; exit 1; }

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

cat >"$OUT/sink.yaml" <<YAML
receivers:
  otlp:
    protocols:
      http: {endpoint: 127.0.0.1:$SINK_PORT}
exporters:
  debug: {verbosity: basic}
service:
  telemetry:
    metrics: {level: none}
  pipelines:
    logs: {receivers: [otlp], exporters: [debug]}
YAML
cat >"$OUT/agent.yaml" <<YAML
receivers:
  seq: {}
processors:
  batch: {}
exporters:
  otlphttp:
    endpoint: http://127.0.0.1:$SINK_PORT
    compression: none
extensions:
  pprof: {endpoint: 127.0.0.1:$PPROF_PORT}
service:
  extensions: [pprof]
  telemetry:
    metrics:
      level: normal
      readers:
        - pull:
            exporter:
              prometheus: {host: 127.0.0.1, port: $METRICS_PORT}
  pipelines:
    logs: {receivers: [seq], processors: [batch], exporters: [otlphttp]}
YAML

"$COLLECTOR" --config "$OUT/sink.yaml" >"$OUT/sink.log" 2>&1 &
pids+=($!)
"$COLLECTOR" --config "$OUT/agent.yaml" >"$OUT/agent.log" 2>&1 &
agent=$!
pids+=("$agent")

# sent: the log records the agent's exporter has sent so far.
sent() {
	curl -s "http://127.0.0.1:$METRICS_PORT/metrics" |
		awk '/^otelcol_exporter_sent_log_records(_total)?[{ ]/ {s += $NF} END {printf "%d\n", s}'
}
# cpu_ticks: the agent's user + system time, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$agent/stat"; }
hz=$(getconf CLK_TCK)

for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" >/dev/null && grep -q "Everything is ready" "$OUT/agent.log" && break
	kill -0 "$agent" 2>/dev/null || { cat "$OUT/agent.log" >&2; exit 1; }
	sleep 0.2
done
sleep 2 # the start-up snapshot and its first batches

c0=$(cpu_ticks)
sleep "$IDLE"
c1=$(cpu_ticks)
idle_pct=$(awk -v d=$((c1 - c0)) -v hz="$hz" -v s="$IDLE" 'BEGIN {printf "%.2f", 100 * d / hz / s}')

s0=$(sent)
c0=$(cpu_ticks)
stress-ng --fork "$FORKERS" --timeout "${SECONDS_STORM}s" --quiet &
storm=$!
sleep 3
curl -s -o "$OUT/cpu.pprof" "http://127.0.0.1:$PPROF_PORT/debug/pprof/profile?seconds=$PROFILE"
wait "$storm"
sleep 2 # the last batches (batch: 200 ms timeout)
c1=$(cpu_ticks)
s1=$(sent)
records=$((s1 - s0))
cpu_s=$(awk -v d=$((c1 - c0)) -v hz="$hz" 'BEGIN {printf "%.2f", d / hz}')
per=$(awk -v c="$cpu_s" -v n="$records" 'BEGIN {if (n > 0) printf "%.2f", 1e6 * c / n; else print "-"}')
hwm=$(awk '/^VmHWM:/ {printf "%.0f", $2 / 1024}' "/proc/$agent/status")

{
	echo "| agent | idle CPU (% of a core) | storm: log records sent | storm: agent CPU (s) | µs per event | peak RSS (MiB) |"
	echo "|---|---|---|---|---|---|"
	echo "| seq → batch → otlphttp${GOGC:+ GOGC=$GOGC}${GOMAXPROCS:+ GOMAXPROCS=$GOMAXPROCS} | $idle_pct | $records | $cpu_s | $per | $hwm |"
} | tee "$OUT/result.md"
echo
echo "== where the agent's CPU went during the storm (go tool pprof -top, ${PROFILE} s profile)"
go tool pprof -top -nodecount=25 "$COLLECTOR" "$OUT/cpu.pprof" 2>/dev/null | tee "$OUT/top.txt" | head -35
echo
echo "== the agent's CPU per event by stage (tools/agentprofile)"
if [ "$per" != - ]; then
	go -C "$ROOT/tools" run ./agentprofile -profile "$OUT/cpu.pprof" -us-per-event "$per" \
		-png "$OUT/agent-profile.png" | tee "$OUT/agent-profile.md"
fi
