#!/usr/bin/env bash
# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
#
# make bench-grpc (root): the grpc receiver's cost on a real gRPC load.
# grpc-go's helloworld greeter_server on 127.0.0.1:50051 driven by ghz
# v0.120.0 (one connection, -c concurrent calls, -n calls a run), in rounds of
# interleaved rows (the machine's run-to-run spread is larger than the effect):
#   baseline            no collector
#   receiver            bin/otelcol-seq with the grpc receiver (tracepoints only)
#   haproxy             through HAProxy (Debian, mode http, h2c both sides)
#   haproxy+receiver    both
# Per row the median over rounds of RPS, p50, p99, and for the receiver rows
# the collector's CPU (user+system, % of one core) and the bytes the kernel
# copied per call (otelcol_receiver_grpc_kernel{counter="bytes_copied"}).
# Tools are built once into $BENCH_CACHE (default ~/.cache/otelcol-seq/bench-grpc).
#   BENCH_GRPC_ROUNDS (5) BENCH_GRPC_N (50000) BENCH_GRPC_C (50)
#
# BENCH_GRPC_RATES="2000 5000 10000 0" instead runs the curve, what a call
# costs as a user ships the receiver: at each fixed rate (ghz -r; 0: -n
# BENCH_GRPC_N as fast as it goes) for BENCH_GRPC_SECONDS (10) each, in
# BENCH_GRPC_ROUNDS interleaved rounds, the rows
#   baseline  no collector
#   otlp      config/grpc.yaml's grpc receiver settings and the processors of
#             its traces/grpc pipeline (memory_limiter, batch) as shipped,
#             exporting with the core otlp exporter (OTLP/gRPC) as
#             deploy/agent.yaml's agent sends to each gateway (its
#             compression, snappy, and its sending_queue with batch) to a
#             gateway on loopback (scripts/lib/bench.sh, as bench-agent's: a
#             second bin/otelcol-seq, OTLP in, debug out; its CPU not counted)
#   debug     the same into config/grpc.yaml's debug exporter: no OTLP
#             encoding or export; otlp minus debug is what export costs
# (BENCH_GRPC_ARMS, "debug otlp"). The configs are generated from those two
# files into $OUT/collector-ARM.yaml, with one change: ports: [50051], so
# that only the bench's calls become spans. The filter is applied by the
# reader, after the capture: the kernel sees and copies every call as
# shipped, but the spans counted are ghz's, not the host's other HTTP
# traffic (the gateway's side of each export among it) or the scrapes.
# Per row: the calls ghz says succeeded; the spans expected, SPANS_PER_CALL
# (2) a call: a CLIENT span (ghz's end) and a SERVER span (the greeter's),
# both ends on this host; the spans delivered after a drain (the
# collector's otelcol_exporter_sent_spans and, for otlp, the gateway's
# otelcol_receiver_accepted_spans; they must agree) and the losses the
# receiver and the exporter count; the collector's CPU (/proc/PID/stat) per
# call and per span delivered (from ghz's start to the drain's end); the
# BPF run time of the programs the collector holds over ghz's run
# (BPF_ENABLE_STATS held; every socket call on the host, not only ghz's),
# per call and per end (per span expected), against OBI's 500 ns.
# tools/grpccurve turns curve.tsv into results-curve.md (medians) and
# bench-grpc.png, and exits 1 (so does the script) when a row erred (ghz's
# calls failed, the collector exited, the gateway went down, the spans did
# not settle, no BPF time) or the spans delivered differ from those
# expected beyond the counted losses. results-curve.md also has the collector's idle
# CPU (BENCH_GRPC_IDLE seconds, 10, before the rounds, the last arm's config)
# and the BPF time per program (curve-programs.tsv).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${BENCH_CACHE:-$HOME/.cache/otelcol-seq/bench-grpc}
ROUNDS=${BENCH_GRPC_ROUNDS:-5}
N=${BENCH_GRPC_N:-50000}
C=${BENCH_GRPC_C:-50}
GHZ_VERSION=v0.120.0 # @latest resolves to 2021's v0.93.0
COLLECTOR=$ROOT/bin/otelcol-seq
OUT=${BENCH_GRPC_OUT:-$ROOT/bench-results/grpc}
# Ports apart from bench-agent's (14317, 18888, 18889): the two may share a host.
GRPC_PORT=50051 GW_PORT=14327 GW_METRICS_PORT=18899 METRICS_PORT=18898
M=http://127.0.0.1:$METRICS_PORT/metrics
SPANS_PER_CALL=2
# shellcheck source=scripts/lib/bench.sh
. "$ROOT/scripts/lib/bench.sh"
mkdir -p "$CACHE/bin" "$OUT"

[ -x "$COLLECTOR" ] || { echo "bin/otelcol-seq is missing: make build" >&2; exit 1; }
if [ ! -x "$CACHE/bin/ghz" ]; then
	echo "== building ghz $GHZ_VERSION"
	GOBIN=$CACHE/bin go install "github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION"
fi
if [ ! -x "$CACHE/bin/greeter_server" ]; then
	echo "== building grpc-go's helloworld greeter_server"
	mkdir -p "$CACHE/hw"
	(cd "$CACHE/hw" && { [ -f go.mod ] || printf 'module benchhw\n\ngo 1.26\n' >go.mod; } &&
		go get google.golang.org/grpc/examples/helloworld/greeter_server@latest &&
		go build -o "$CACHE/bin/greeter_server" google.golang.org/grpc/examples/helloworld/greeter_server)
fi
PROTO_DIR=$(cd "$CACHE/hw" && go list -m -f '{{.Dir}}' google.golang.org/grpc/examples)/helloworld/helloworld
command -v haproxy >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null; }

pids=()
cleanup() {
	for p in "${pids[@]}" ${cpid:-}; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT

"$CACHE/bin/greeter_server" -port "$GRPC_PORT" >/dev/null 2>&1 &
pids+=($!)

cat >"$OUT/haproxy.cfg" <<CFG
global
  maxconn 2000
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
frontend fe
  bind 127.0.0.1:50052 proto h2
  default_backend be
backend be
  server s1 127.0.0.1:$GRPC_PORT proto h2
CFG
haproxy -f "$OUT/haproxy.cfg" -db >"$OUT/haproxy.log" 2>&1 &
pids+=($!)

telemetry="{metrics: {level: normal, readers: [{pull: {exporter: {prometheus: {host: 127.0.0.1, port: $METRICS_PORT}}}}]}}"
cat >"$OUT/collector.yaml" <<CFG
receivers:
  grpc: {}
exporters:
  debug:
    verbosity: basic
service:
  telemetry: $telemetry
  pipelines:
    traces:
      receivers: [grpc]
      exporters: [debug]
CFG

# collector_config ARM FILE: the curve's collector (see the header): ARM is
# debug or otlp.
collector_config() {
	(cd "$ROOT" && python3 - config/grpc.yaml deploy/agent.yaml "$1" "127.0.0.1:$GW_PORT" "$GRPC_PORT" "$telemetry") >"$2" <<'PY'
import sys, yaml
shipped, agent = (yaml.safe_load(open(p)) for p in sys.argv[1:3])
arm, gateway, port, telemetry = sys.argv[3], sys.argv[4], int(sys.argv[5]), yaml.safe_load(sys.argv[6])
pipe = shipped["service"]["pipelines"]["traces/grpc"]
if pipe["receivers"] != ["grpc"]:
    sys.exit(f"{sys.argv[1]}: traces/grpc receives from {pipe['receivers']}, not [grpc]")
receiver = dict(shipped["receivers"]["grpc"] or {})
receiver["ports"] = [port]
if arm == "debug":
    exporter = shipped["exporters"]["debug"]
elif arm == "otlp":
    exporter = {"endpoint": gateway, **agent["exporters"]["loadbalancing"]["protocol"]["otlp"]}
else:
    sys.exit(f"BENCH_GRPC_ARMS: {arm}: want debug or otlp")
print(f"# Generated by scripts/bench-grpc.sh: {sys.argv[1]}'s grpc receiver and its traces/grpc")
print("# pipeline's processors as shipped, plus ports (only the bench's calls become spans),")
print("# into " + ("that file's debug exporter (no export)." if arm == "debug" else
                   f"the otlp exporter with {sys.argv[2]}'s per-gateway settings, to {gateway}."))
yaml.safe_dump({
    "receivers": {"grpc": receiver},
    "processors": {p: shipped["processors"][p] for p in pipe["processors"]},
    "exporters": {arm: exporter},
    "service": {"telemetry": telemetry,
                "pipelines": {"traces": {"receivers": ["grpc"], "processors": pipe["processors"], "exporters": [arm]}}},
}, sys.stdout, sort_keys=False)
PY
}
sleep 1

ghz_run() { # TARGET JSONFILE [ghz options]
	local target=$1 out=$2
	shift 2
	"$CACHE/bin/ghz" --insecure --import-paths "$PROTO_DIR" --proto helloworld.proto \
		--call helloworld.Greeter.SayHello -d '{"name":"bench"}' \
		-n "$N" -c "$C" --connections 1 "$@" -O json "$target" >"$out"
}

copied() { curl -s "$M" | prom_sum otelcol_receiver_grpc_kernel 'counter="bytes_copied"'; }

# start_collector CONFIG: the collector in the background (cpid), once it is
# ready.
start_collector() {
	"$COLLECTOR" --config "$1" >"$OUT/collector.log" 2>&1 &
	cpid=$!
	for _ in $(seq 1 100); do grep -q "Everything is ready" "$OUT/collector.log" && break; sleep 0.2; done
	sleep 1
	kill -0 "$cpid" 2>/dev/null || { tail -5 "$OUT/collector.log" >&2; echo "bench-grpc: the collector did not start" >&2; exit 1; }
}

if [ -n "${BENCH_GRPC_RATES:-}" ]; then
	SECS=${BENCH_GRPC_SECONDS:-10}
	ARMS=${BENCH_GRPC_ARMS:-debug otlp}
	IDLE=${BENCH_GRPC_IDLE:-10}
	GW_M=http://127.0.0.1:$GW_METRICS_PORT/metrics
	# counts: "ACCEPTED SENT LOST" spans of the collector now: the grpc
	# receiver's accepted spans, the exporter's sent ones, and every loss
	# the receiver and the exporter count (records lost, calls the kernel
	# skipped, spans refused, dropped or not sent).
	counts() {
		local s k lost=0
		s=$(curl -s "$M") || true # a collector that exited: zeros, and the row's error
		for k in otelcol_receiver_grpc_records_lost otelcol_receiver_grpc_spans_dropped otelcol_receiver_refused_spans \
			otelcol_exporter_send_failed_spans otelcol_exporter_enqueue_failed_spans; do
			lost=$((lost + $(prom_sum "$k" <<<"$s")))
		done
		for k in throttled throttled_user busy ring_no_slot ring_output_failed prog_recursion_misses; do
			lost=$((lost + $(prom_sum otelcol_receiver_grpc_kernel "counter=\"$k\"" <<<"$s")))
		done
		echo "$(prom_sum otelcol_receiver_accepted_spans <<<"$s") $(prom_sum otelcol_exporter_sent_spans <<<"$s") $lost"
	}
	# gateway_spans: the spans the gateway received, or "down".
	gateway_spans() {
		local s
		s=$(curl -sf "$GW_M") || { echo down; return; }
		prom_sum otelcol_receiver_accepted_spans <<<"$s"
	}
	# drain ROW: after the load, until the collector's counts (and the
	# gateway's spans for otlp) stand still for a second; 1 if not in 20 s.
	drain() {
		local last='' now still=0
		for _ in $(seq 40); do
			sleep 0.5
			now="$(counts) $([ "$1" != otlp ] || gateway_spans)"
			if [ "$now" = "$last" ]; then
				still=$((still + 1))
				[ "$still" -lt 2 ] || return 0
			else
				still=0
			fi
			last=$now
		done
		return 1
	}
	bpf_stats_start bench-grpc "$OUT/bpf-stats"
	for arm in $ARMS; do collector_config "$arm" "$OUT/collector-$arm.yaml"; done
	gateway_config "$OUT/gateway.yaml" "$GW_PORT" "$GW_METRICS_PORT"
	"$COLLECTOR" --config "$OUT/gateway.yaml" >"$OUT/gateway.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do curl -sf "$GW_M" >/dev/null && break; sleep 0.2; done
	ghz_run "127.0.0.1:$GRPC_PORT" /dev/null # warm-up
	# The collector with no calls at all (the greeter idle, the hooks seeing
	# only the host's background), on the last arm's config.
	last_arm=${ARMS##* }
	start_collector "$OUT/collector-$last_arm.yaml"
	t0=$(cpu_ticks "$cpid")
	sleep "$IDLE"
	t1=$(cpu_ticks "$cpid")
	kill -TERM "$cpid"; wait "$cpid" || true
	idle_pct=$(python3 -c "print(f'{($t1-$t0)/$(getconf CLK_TCK)/$IDLE*100:.2f}')")
	echo "idle: the collector ($last_arm) used $idle_pct % of a core over $IDLE s with no calls"
	curve=$OUT/curve.tsv
	printf 'round\trate\trow\trps\tp50_ms\tp99_ms\tcpu_us_per_call\tbpf_ns_per_rpc\tcalls_ok\tcalls_failed\tspans_expected\tspans_accepted\tspans_sent\tspans_gateway\tlost\terror\n' >"$curve"
	progs=$OUT/curve-programs.tsv
	printf 'round\trate\trow\tprogram\truns_per_rpc\tns_per_run\tns_per_rpc\n' >"$progs"
	for round in $(seq 1 "$ROUNDS"); do
	for rate in $BENCH_GRPC_RATES; do
		n=$((rate > 0 ? rate * SECS : N))
		for row in baseline $ARMS; do
			cpid='' err=- before="- - -" after="- - -" g0=- g1=- ticks=-
			if [ "$row" != baseline ]; then
				start_collector "$OUT/collector-$row.yaml"
				before=$(counts)
				[ "$row" != otlp ] || g0=$(gateway_spans)
				bpf_prog_stats "$cpid" >"$OUT/bpf0.txt"
				t0=$(cpu_ticks "$cpid")
			fi
			N=$n ghz_run "127.0.0.1:$GRPC_PORT" "$OUT/ghz.json" -r "$rate"
			if [ -n "$cpid" ]; then
				# BPF time over the calls; the collector's CPU until their spans are out.
				bpf_prog_stats "$cpid" >"$OUT/bpf1.txt"
				drain "$row" || err=not-drained
				kill -0 "$cpid" 2>/dev/null || err=collector-exited
				t1=$(cpu_ticks "$cpid")
				ticks=$((t1 - t0))
				# An ended process counts 0 ticks: no CPU figure then.
				[ "$err" != collector-exited ] || ticks=-
				after=$(counts)
				[ "$row" != otlp ] || g1=$(gateway_spans)
				curl -s "$M" >"$OUT/metrics-$round-$rate-$row.txt"
				kill -TERM "$cpid"; wait "$cpid" || true
			fi
			# shellcheck disable=SC2086 # before and after are three words each
			python3 - "$OUT" "$round" "$rate" "$row" "$ticks" "$(getconf CLK_TCK)" "$err" "$SPANS_PER_CALL" \
				$before $after "$g0" "$g1" >>"$curve" <<'PY'
import json, sys
out, rnd, rate, row, ticks, hz, err, per_call, a0, s0, l0, a1, s1, l1, g0, g1 = sys.argv[1:]
r = json.load(open(f"{out}/ghz.json"))
codes = r.get("statusCodeDistribution") or {}
ok = codes.get("OK", 0)
failed = r.get("count", 0) - ok
if ok == 0 and err == "-":
    err = "no-calls"
if "down" in (g0, g1) and err == "-":
    err = "gateway-down"
lat = {d["percentage"]: d["latency"] / 1e6 for d in r.get("latencyDistribution") or []}
cells = [rnd, rate, row, f"{r['rps']:.0f}", f"{lat.get(50, 0):.2f}", f"{lat.get(99, 0):.2f}"]
if ticks == "-":
    print("\t".join(cells + ["-", "-", str(ok), str(failed)] + ["-"] * 5 + [err]))
    sys.exit()
bpf = [{l.split()[0]: (int(l.split()[1]), int(l.split()[2])) for l in open(f"{out}/bpf{i}.txt") if l.strip()} for i in (0, 1)]
total = 0
with open(f"{out}/curve-programs.tsv", "a") as progs:
    for name in sorted(bpf[1]):
        t, c = (bpf[1][name][i] - bpf[0].get(name, (0, 0))[i] for i in (0, 1))
        total += t
        if c and ok:
            print(f"{rnd}\t{rate}\t{row}\t{name}\t{c / ok:.2f}\t{t / c:.0f}\t{t / ok:.0f}", file=progs)
if total == 0 and err == "-":
    err = "no-bpf-time"  # the statistics were off, or the collector held no programs
cpu_us = int(ticks) / int(hz) * 1e6
print("\t".join(cells + [f"{cpu_us / max(ok, 1):.1f}", f"{total / max(ok, 1):.0f}", str(ok), str(failed),
      str(ok * int(per_call)), str(int(a1) - int(a0)), str(int(s1) - int(s0)),
      "-" if g0 == "-" else str(int(g1) - int(g0)) if "down" not in (g0, g1) else "0", str(int(l1) - int(l0)), err]))
PY
			tail -1 "$curve"
		done
	done
	done
	status=0
	(cd "$ROOT/tools" && GOWORK=off go run ./grpccurve -in "$curve" -png "$OUT/bench-grpc.png") >"$OUT/curve.md" || status=$?
	{
		echo "ghz -r RATE for $SECS s (0: -n $N as fast as it goes), -c $C --connections 1, $ROUNDS interleaved rounds, medians;"
		echo "rows: baseline (no collector), $ARMS ($OUT/collector-*.yaml)"
		echo
		echo "Idle (no calls, $IDLE s): the collector ($last_arm) used $idle_pct % of a core."
		echo
		cat "$OUT/curve.md"
		echo
		echo "Where the BPF time goes, per program (the $last_arm row; medians over the rounds; both ends of every call):"
		echo
		python3 - "$progs" "$last_arm" <<'PY'
import csv, statistics, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]), delimiter="\t") if r["row"] == sys.argv[2]]
rates = list(dict.fromkeys(r["rate"] for r in rows))
names = sorted({r["program"] for r in rows})
med = lambda vs: statistics.median(float(v) for v in vs) if vs else 0
print("| program | " + " | ".join(f"{'max' if r == '0' else r}: runs / RPC, ns / run, ns / RPC" for r in rates) + " |")
print("|---|" + "---|" * len(rates))
for name in names:
    cells = []
    for rate in rates:
        rs = [r for r in rows if r["program"] == name and r["rate"] == rate]
        cells.append(f"{med([r['runs_per_rpc'] for r in rs]):.2f}, {med([r['ns_per_run'] for r in rs]):.0f}, {med([r['ns_per_rpc'] for r in rs]):.0f}" if rs else "")
    print(f"| {name} | " + " | ".join(cells) + " |")
PY
	} | tee "$OUT/results-curve.md"
	[ "$status" = 0 ] || echo "bench-grpc: rows failed their checks (above)" >&2
	exit "$status"
fi

results=$OUT/runs.tsv
printf 'round\trow\trps\tp50_ms\tp99_ms\tcpu_pct\tbytes_per_rpc\n' >"$results"
ghz_run 127.0.0.1:50051 /dev/null # warm-up
for round in $(seq 1 "$ROUNDS"); do
	for row in baseline receiver haproxy haproxy+receiver; do
		target=127.0.0.1:50051
		[[ $row == haproxy* ]] && target=127.0.0.1:50052
		cpid=
		if [[ $row == *receiver ]]; then
			start_collector "$OUT/collector.yaml"
			b0=$(copied); t0=$(cpu_ticks "$cpid")
		fi
		s0=$(date +%s.%N)
		ghz_run "$target" "$OUT/ghz.json"
		s1=$(date +%s.%N)
		cpu=- bpr=-
		if [ -n "$cpid" ]; then
			sleep 1.5 # the reader's last batch, the counters' next snapshot
			t1=$(cpu_ticks "$cpid"); b1=$(copied)
			cpu=$(python3 -c "print(f'{($t1-$t0)/$(getconf CLK_TCK)/($s1-$s0)*100:.1f}')")
			bpr=$(python3 -c "print(f'{(${b1:-0}-${b0:-0})/$N:.0f}')")
			kill -TERM "$cpid"; wait "$cpid" || true
		fi
		python3 - "$OUT/ghz.json" "$round" "$row" "$cpu" "$bpr" >>"$results" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
bad = {k: v for k, v in (r.get("statusCodeDistribution") or {}).items() if k != "OK"}
if bad or not r.get("latencyDistribution"):
    sys.exit(f"ghz: calls failed in row {sys.argv[3]}: {bad or r.get('errorDistribution')}")
lat = {d["percentage"]: d["latency"] / 1e6 for d in r.get("latencyDistribution") or []}
print(f"{sys.argv[2]}\t{sys.argv[3]}\t{r['rps']:.0f}\t{lat.get(50, 0):.2f}\t{lat.get(99, 0):.2f}\t{sys.argv[4]}\t{sys.argv[5]}")
PY
		tail -1 "$results"
	done
done

python3 - "$results" "$N" "$C" "$ROUNDS" <<'PY' | tee "$OUT/results.md"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
order = ["baseline", "receiver", "haproxy", "haproxy+receiver"]
def med(vals):
    vals = [float(v) for v in vals if v not in ("-", "")]
    return statistics.median(vals) if vals else None
base = {"baseline": None, "haproxy": None}
print(f"ghz -n {sys.argv[2]} -c {sys.argv[3]} --connections 1, {sys.argv[4]} interleaved rounds, medians\n")
print("| row | RPS | vs. its baseline | p50 ms | p99 ms | collector CPU % | bytes captured / RPC |")
print("|---|---|---|---|---|---|---|")
for name in order:
    rs = [r for r in rows if r["row"] == name]
    rps = med(r["rps"] for r in rs)
    ref = "haproxy" if name.startswith("haproxy") else "baseline"
    if name == ref:
        base[ref] = rps
    rel = "" if name == ref or not base[ref] else f"{(rps / base[ref] - 1) * 100:+.1f} %"
    cpu, bpr = med(r["cpu_pct"] for r in rs), med(r["bytes_per_rpc"] for r in rs)
    print(f"| {name} | {rps:.0f} | {rel} | {med(r['p50_ms'] for r in rs):.2f} | {med(r['p99_ms'] for r in rs):.2f} | "
          f"{'' if cpu is None else f'{cpu:.1f}'} | {'' if bpr is None else f'{bpr:.0f}'} |")
PY
