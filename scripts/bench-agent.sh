#!/usr/bin/env bash
# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
#
# make bench-agent (root): what the agent costs a node per process event, as
# deployed. The agent is deploy/agent.yaml with the DaemonSet's environment
# (deploy/kubernetes/agent-daemonset.yaml: GOMEMLIMIT, GOGC,
# MEMORY_LIMIT_MIB), less k8sattributes (no API server here), its
# load-balancing exporter pointed at a gateway on loopback (a second
# bin/otelcol-seq: OTLP/gRPC in, the debug exporter at basic verbosity out;
# its CPU is the gateway's node's, not counted). The load: BENCH_AGENT_WORKERS
# (2) processes that fork and exec /bin/true with a compiler's argv (20 to 80
# arguments, a few hundred bytes to a few KB: -I, -D, -W flags, source and
# object paths) for BENCH_AGENT_SECONDS (20).
#
# Each arm is a compression of the exporter (BENCH_AGENT_ARMS, "gzip zstd
# snappy none"; the one deploy/agent.yaml ships is marked), run
# BENCH_AGENT_ROUNDS (3) times, the arms interleaved, each run a
# fresh agent and gateway. Per run, from the agent alone:
#   idle      its CPU over BENCH_AGENT_IDLE seconds (5) before the load
#   agent     its CPU (/proc/PID/stat, user + system) over the load and the
#             drain after it, per log record it sent (its own
#             otelcol_exporter_sent_log_records)
#   BPF       the run time of its BPF programs (BPF_ENABLE_STATS held,
#             run_time_ns of each program it holds), paid by the traced
#             processes, per log record
#   node      agent + BPF: what the node pays per event
#   wire      bytes its TCP connections to the gateway carried (an iptables
#             counter: IP and TCP headers included), per log record
#   RSS       its peak resident memory (VmHWM)
# The table gives each figure's median and range over the rounds. The first
# round's shipped arm also takes a CPU profile (the pprof extension) over
# BENCH_AGENT_PROFILE seconds (10), kept as cpu.pprof with its top functions
# and the CPU per event split by stage (tools/agentprofile).
# BENCH_AGENT_BIN runs another build as the agent (a before/after pair).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
COLLECTOR=${BENCH_AGENT_BIN:-$ROOT/bin/otelcol-seq}
OUT=${BENCH_AGENT_OUT:-$ROOT/bench-results/agent}
IDLE=${BENCH_AGENT_IDLE:-5}
SECONDS_LOAD=${BENCH_AGENT_SECONDS:-20}
WORKERS=${BENCH_AGENT_WORKERS:-2}
PROFILE=${BENCH_AGENT_PROFILE:-10}
ROUNDS=${BENCH_AGENT_ROUNDS:-3}
ARMS=${BENCH_AGENT_ARMS:-gzip zstd snappy none}
# BENCH_AGENT_CONFIG runs another agent config (a before/after pair).
AGENT_CONFIG=${BENCH_AGENT_CONFIG:-$ROOT/deploy/agent.yaml}
# The variants, side by side in the same rounds (BENCH_AGENT_VARIANTS):
#   seq    the agent (AGENT_CONFIG), every arm;
#   stock  what a user could assemble from stock parts for the exec records:
#          bpftrace's own execsnoop.bt (Debian's bpftrace) into the bpftrace
#          receiver as config/bpftrace.yaml ships it (argv redacted), the
#          agent's processors, exporters and extensions; the shipped arm
#          only. It sees execs only (no fork, exit or span), argv as
#          execsnoop joins it (cut by bpftrace), with no order or loss
#          accounting; its CPU is the collector's and its bpftrace child's.
VARIANTS=${BENCH_AGENT_VARIANTS:-seq stock}
# exporters_of CONFIG: its load-balancing and OTLP exporters; each is pointed
# at the gateway and given the arm's compression.
exporters_of() {
	awk '/^exporters:/ {e = 1; next} /^[^ #]/ {e = 0} e && /^  (loadbalancing|otlp)(\/[A-Za-z0-9_]+)?:/ {sub(":.*", "", $1); print $1}' "$1"
}
# pipelines_of CONFIG: its pipelines (logs, traces).
pipelines_of() { awk '/^service:/ {s = 1; next} /^[^ #]/ {s = 0} s && /^    [a-z]+(\/[A-Za-z0-9_]+)?:/ {sub(":.*", "", $1); print $1}' "$1"; }
[ -n "$(exporters_of "$AGENT_CONFIG")" ] || { echo "no loadbalancing or otlp exporter in $AGENT_CONFIG" >&2; exit 1; }
# What the config ships (the OTLP exporter's gzip where it says none).
SHIPPED=$(awk '$1 == "compression:" {print $2; exit}' "$AGENT_CONFIG")
SHIPPED=${SHIPPED:-gzip}
GW_PORT=14317 GW_METRICS_PORT=18889 METRICS_PORT=18888 PPROF_PORT=11777 HEALTH_PORT=13199
# shellcheck source=scripts/lib/bench.sh
. "$ROOT/scripts/lib/bench.sh"
mkdir -p "$OUT"
[ -x "$COLLECTOR" ] || { echo "bin/otelcol-seq is missing: make build" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "bench-agent loads BPF programs: run it as root" >&2; exit 1; }
command -v iptables >/dev/null || { echo "iptables is missing (it counts the bytes on the wire): apt-get install iptables" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 is missing (the exec load): apt-get install python3" >&2; exit 1; }

pids=()
rule=(OUTPUT -o lo -p tcp --dport "$GW_PORT" -m comment --comment otelcol-seq-bench-agent -j ACCEPT)
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	iptables -D "${rule[@]}" 2>/dev/null || true
}
trap cleanup EXIT
bpf_stats_start bench-agent "$OUT/bpf-stats"

# The DaemonSet's literal environment values.
mapfile -t dsenv < <(awk '/- name:/ {n = $3} /^ *value:/ && n {v = $2; gsub(/"/, "", v); print n "=" v; n = ""}' \
	"$ROOT/deploy/kubernetes/agent-daemonset.yaml")
printf '%s\n' "${dsenv[@]}" | grep -q '^GOMEMLIMIT=' || { echo "no GOMEMLIMIT in the DaemonSet's env" >&2; exit 1; }

gateway_config "$OUT/gateway.yaml" "$GW_PORT" "$GW_METRICS_PORT"

# The stock variant's config: the agent's processors, exporters and
# extensions blocks as they are, the bpftrace receiver's execsnoop.
{
	echo "# bench-agent's stock variant (generated from $AGENT_CONFIG)"
	echo "receivers:"
	echo "  bpftrace:"
	echo "    scripts:"
	echo "      - path: /usr/sbin/execsnoop.bt"
	echo "        redact: argv"
	awk '/^(processors|exporters|extensions):/ {p = 1; print; next} /^[^ #]/ {p = 0} p' "$AGENT_CONFIG"
	echo "service:"
	echo "  extensions: [health_check]"
	echo "  pipelines:"
	echo "    logs: {receivers: [bpftrace], processors: [memory_limiter], exporters: [$(exporters_of "$AGENT_CONFIG" | head -1)]}"
} >"$OUT/agent-stock.yaml"
config_of() { # config_of VARIANT
	case $1 in
	seq) echo "$AGENT_CONFIG" ;;
	stock) echo "$OUT/agent-stock.yaml" ;;
	*) echo "bench-agent: unknown variant $1 (seq, stock)" >&2; exit 1 ;;
	esac
}
for v in $VARIANTS; do config_of "$v" >/dev/null; done
if [[ " $VARIANTS " == *" stock "* ]]; then
	[ -r /usr/sbin/execsnoop.bt ] || { echo "bench-agent: /usr/sbin/execsnoop.bt is missing (Debian's bpftrace: make deps)" >&2; exit 1; }
fi

# The load: fork and exec /bin/true with a compiler's argv, unique per exec.
cat >"$OUT/load.py" <<'PY'
import os, random, sys, time
seconds, seed = float(sys.argv[1]), int(sys.argv[2])
rnd = random.Random(seed)
dirs = ["src/core", "src/net", "lib/util", "third_party/zlib", "drivers/gpu/drm", "kernel/sched"]
flags = ["-O2", "-g", "-Wall", "-Wextra", "-Werror=implicit-function-declaration", "-fPIC", "-pipe",
         "-fno-strict-aliasing", "-fstack-protector-strong", "-std=gnu11", "-MMD", "-MP"]
end, n = time.monotonic() + seconds, 0
while time.monotonic() < end:
    d = rnd.choice(dirs)
    name = f"{d}/file{n}_{rnd.randrange(1 << 20):x}"
    args = ["/bin/true"] + rnd.sample(flags, rnd.randint(4, len(flags)))
    args += [f"-I{rnd.choice(dirs)}/include" for _ in range(rnd.randint(4, 20))]
    args += [f"-DCONFIG_{rnd.choice(['SMP', 'NUMA', 'DEBUG', 'TRACE', 'NET'])}_{i}={rnd.randrange(100)}"
             for i in range(rnd.randint(8, 40))]
    args += ["-c", name + ".c", "-o", name + ".o", "-MF", name + ".d"]
    pid = os.posix_spawn(args[0], args, {})
    os.waitpid(pid, 0)
    n += 1
print(n)
PY

# metric NAME: the sum of the agent's series of NAME
metric() { curl -s "http://127.0.0.1:$METRICS_PORT/metrics" | prom_sum "$1"; }
# procs PID: PID and its children (the stock variant's bpftrace).
procs() { echo "$1"; pgrep -P "$1" || true; }
# agent_ticks: the CPU ticks of the agent and its children (cpu_ticks).
agent_ticks() {
	local p
	mapfile -t p < <(procs "$agent")
	cpu_ticks "${p[@]}"
}
hz=$(getconf CLK_TCK)
# bpf_ns PID: the run time, in ns, of every BPF program PID and its children hold.
bpf_ns() {
	local p
	for p in $(procs "$1"); do bpf_prog_stats "$p"; done | awk '{s += $2} END {printf "%d\n", s}'
}
wire_bytes() { iptables -L OUTPUT -v -x -n | awk '/otelcol-seq-bench-agent/ {print $2; exit}'; }

# one VARIANT ARM ROUND PROFILE?: a fresh gateway and agent, idle, the
# load, the drain; appends a line to runs.tsv.
one() {
	local variant=$1 arm=$2 round=$3 profile=$4 config log
	config=$(config_of "$variant")
	log=$OUT/agent-$variant-$arm-$round.log
	"$COLLECTOR" --config "$OUT/gateway.yaml" >"$OUT/gateway.log" 2>&1 &
	local gw=$!
	pids+=("$gw")
	local extra=()
	if [ "$profile" = 1 ]; then
		extra+=(--config "yaml:extensions::pprof: {endpoint: 127.0.0.1:$PPROF_PORT}"
			--config "yaml:service::extensions: [health_check, pprof]")
	fi
	local e
	for e in $(pipelines_of "$config"); do
		extra+=(--config "yaml:service::pipelines::$e::processors: [memory_limiter]")
	done
	for e in $(exporters_of "$config"); do
		case $e in
		loadbalancing*)
			extra+=(--config "yaml:exporters::$e::resolver: {dns: null, static: {hostnames: [127.0.0.1:$GW_PORT]}}"
				--config "yaml:exporters::$e::protocol::otlp::compression: $arm") ;;
		*)
			extra+=(--config "yaml:exporters::$e::endpoint: 127.0.0.1:$GW_PORT"
				--config "yaml:exporters::$e::compression: $arm") ;;
		esac
	done
	env "${dsenv[@]}" HEALTH_ENDPOINT=127.0.0.1:$HEALTH_PORT K8S_NODE_NAME=bench "$COLLECTOR" \
		--config "$config" \
		--config "yaml:service::telemetry::metrics: {level: normal, readers: [{pull: {exporter: {prometheus: {host: 127.0.0.1, port: $METRICS_PORT}}}}]}" \
		"${extra[@]}" >"$log" 2>&1 &
	local agent=$!
	pids+=("$agent")
	for _ in $(seq 150); do
		curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" >/dev/null && grep -q "Everything is ready" "$log" && break
		kill -0 "$agent" 2>/dev/null || { cat "$log" >&2; exit 1; }
		sleep 0.2
	done
	sleep 2 # the start-up snapshot and its first batches
	local c0 c1
	c0=$(agent_ticks)
	sleep "$IDLE"
	c1=$(agent_ticks)
	local idle
	idle=$(awk -v d=$((c1 - c0)) -v hz="$hz" -v s="$IDLE" 'BEGIN {printf "%.2f", 100 * d / hz / s}')

	iptables -Z OUTPUT
	local s0 b0 w0 execs=0
	s0=$(metric otelcol_exporter_sent_log_records)
	b0=$(bpf_ns "$agent")
	w0=$(wire_bytes)
	c0=$(agent_ticks)
	local loads=()
	for w in $(seq "$WORKERS"); do
		python3 "$OUT/load.py" "$SECONDS_LOAD" "$((round * 100 + w))" >"$OUT/load-$w.out" &
		loads+=($!)
	done
	if [ "$profile" = 1 ]; then
		sleep 3
		curl -s -o "$OUT/cpu.pprof" "http://127.0.0.1:$PPROF_PORT/debug/pprof/profile?seconds=$PROFILE"
	fi
	for p in "${loads[@]}"; do wait "$p"; done
	for w in $(seq "$WORKERS"); do execs=$((execs + $(cat "$OUT/load-$w.out"))); done
	# The drain: until the sent count stands still for a second (at most 20 s).
	local last=-1 now
	for _ in $(seq 20); do
		sleep 1
		now=$(metric otelcol_exporter_sent_log_records)
		[ "$now" = "$last" ] && break
		last=$now
	done
	c1=$(agent_ticks)
	local s1 b1 w1 failed refused lost hwm
	s1=$(metric otelcol_exporter_sent_log_records)
	b1=$(bpf_ns "$agent")
	w1=$(wire_bytes)
	failed=$(metric otelcol_exporter_send_failed_log_records)
	refused=$(metric otelcol_receiver_refused_log_records)
	lost=$(($(metric otelcol_receiver_seq_events_lost) + $(metric otelcol_receiver_bpftrace_lost_events)))
	hwm=$(awk '/^VmHWM:/ {printf "%.0f", $2 / 1024}' "/proc/$agent/status")
	kill "$agent" "$gw"
	wait "$agent" "$gw" 2>/dev/null || true
	local records=$((s1 - s0))
	awk -v variant="$variant" -v arm="$arm" -v round="$round" -v execs="$execs" -v n="$records" -v c=$((c1 - c0)) -v hz="$hz" \
		-v b=$((b1 - b0)) -v w=$((w1 - w0)) -v hwm="$hwm" -v idle="$idle" -v f="$failed" -v r="$refused" -v l="$lost" \
		'BEGIN {
			if (n <= 0 || execs <= 0) { print "no records sent" > "/dev/stderr"; exit 1 }
			a = 1e6 * c / hz / n; k = b / 1e3 / n; x = 1e6 * c / hz / execs; kx = b / 1e3 / execs
			printf "%s\t%s\t%d\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.0f\t%d\t%s\t%d\t%d\t%d\n", variant, arm, round, execs, n, a, k, a + k, x, x + kx, w / n, hwm, idle, f, r, l
		}' >>"$OUT/runs.tsv"
	tail -1 "$OUT/runs.tsv"
}

printf 'variant\tarm\tround\texecs\trecords\tagent_us\tbpf_us\tnode_us\tagent_us_exec\tnode_us_exec\twire_bytes\trss_mib\tidle_pct\tsend_failed\trefused\tlost\n' >"$OUT/runs.tsv"
iptables -I "${rule[@]}"
for round in $(seq "$ROUNDS"); do
	for variant in $VARIANTS; do
		arms=$ARMS
		[ "$variant" = seq ] || arms=$SHIPPED
		for arm in $arms; do
			p=0
			[ "$round" = 1 ] && [ "$variant" = seq ] && [ "$arm" = "$SHIPPED" ] && p=1
			one "$variant" "$arm" "$round" "$p"
		done
	done
done

# The table: each figure's median and range over the rounds, per arm.
python3 - "$OUT/runs.tsv" "$SHIPPED" "$WORKERS" "$SECONDS_LOAD" <<'PY' | tee "$OUT/result.md"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
shipped, workers, secs = sys.argv[2], sys.argv[3], sys.argv[4]
def fig(rs, k, fmt="{:.2f}"):
    v = sorted(float(r[k]) for r in rs)
    m = statistics.median(v)
    return f"{fmt.format(m)} ({fmt.format(v[0])}–{fmt.format(v[-1])})" if len(v) > 1 else fmt.format(m)
groups = list(dict.fromkeys((r["variant"], r["arm"]) for r in rows))
print(f"the agent (seq: deploy/agent.yaml less k8sattributes) and stock parts (bpftrace's execsnoop.bt into the bpftrace receiver, the same exporters), to a gateway on loopback; {workers} workers exec'ing a compiler's argv for {secs} s; median (range) of {len(rows) // len(groups)} runs each, interleaved. An event is a log record sent; per exec divides by the load's execs (seq sends a fork, an exec and an exit record and a span per exec'd process, stock one exec record)")
print()
print("| variant | exporter compression | log records sent a run | agent µs per event | BPF µs per event | node pays µs per event | agent µs per exec | node pays µs per exec | bytes on the wire per event | peak RSS MiB | idle % of a core | send failed, refused, lost |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for variant, arm in groups:
    rs = [r for r in rows if r["variant"] == variant and r["arm"] == arm]
    bad = sum(int(r["send_failed"]) + int(r["refused"]) + int(r["lost"]) for r in rs)
    name = f"**{arm}** (shipped)" if arm == shipped else arm
    print(f"| {variant} | {name} | {fig(rs, 'records', '{:.0f}')} | {fig(rs, 'agent_us')} | {fig(rs, 'bpf_us')} | {fig(rs, 'node_us')} | {fig(rs, 'agent_us_exec')} | {fig(rs, 'node_us_exec')} | {fig(rs, 'wire_bytes', '{:.0f}')} | {fig(rs, 'rss_mib', '{:.0f}')} | {fig(rs, 'idle_pct')} | {bad} |")
PY
echo
if [ -s "$OUT/cpu.pprof" ]; then
	echo "== where the agent's CPU went under the load ($SHIPPED, round 1; go tool pprof -top, ${PROFILE} s profile)"
	go tool pprof -top -nodecount=25 "$COLLECTOR" "$OUT/cpu.pprof" 2>/dev/null | tee "$OUT/top.txt" | head -35
	per=$(awk -F'\t' -v a="$SHIPPED" '$1 == "seq" && $2 == a && $3 == 1 {print $6}' "$OUT/runs.tsv")
	echo
	echo "== the agent's CPU per event by stage (tools/agentprofile)"
	GOWORK=off go -C "$ROOT/tools" run ./agentprofile -profile "$OUT/cpu.pprof" -us-per-event "$per" \
		-png "$OUT/agent-profile.png" | tee "$OUT/agent-profile.md"
fi
