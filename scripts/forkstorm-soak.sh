#!/usr/bin/env bash
# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
# Runs bin/otelcol-seq (logs and traces pipelines into the debug exporter at
# basic verbosity) under a stress-ng fork storm and prints the collector's RSS
# every 30 s, then its shutdown accounting. Usage: scripts/forkstorm-soak.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}
cfg=$(mktemp --suffix=.yaml)
log=$(mktemp --suffix=.log)
trap 'rm -f "$cfg"' EXIT
cat >"$cfg" <<'YAML'
receivers:
  seq: {}
processors:
  batch: {}
exporters:
  debug:
    verbosity: basic
service:
  telemetry:
    logs:
      level: info
  pipelines:
    logs: {receivers: [seq], processors: [batch], exporters: [debug]}
    traces: {receivers: [seq], processors: [batch], exporters: [debug]}
YAML
bin/otelcol-seq --config "$cfg" >"$log" 2>&1 &
col=$!
sleep 3
echo "collector pid $col, log $log; fork storm for ${secs}s"
stress-ng --fork 2 --timeout "${secs}s" --quiet --metrics-brief >"$log.stress" 2>&1 &
storm=$!
start=$(date +%s)
while kill -0 "$storm" 2>/dev/null; do
  printf '%4ds  RSS %s kB\n' $(( $(date +%s) - start )) "$(awk '/VmRSS/{print $2}' /proc/$col/status)"
  sleep 30
done
wait "$storm" || true
printf 'end   RSS %s kB, peak (VmHWM) %s kB\n' "$(awk '/VmRSS/{print $2}' /proc/$col/status)" "$(awk '/VmHWM/{print $2}' /proc/$col/status)"
kill -TERM "$col"; wait "$col" || true
grep -o '"tickets_issued".*' "$log" | tail -1
grep -E 'bogo|fork' "$log.stress" | tail -2 || true
