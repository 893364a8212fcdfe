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
# BENCH_GRPC_RATES="2000 5000 10000 0" instead runs the curve: baseline and
# receiver rows at each fixed rate (ghz -r; 0: as fast as it goes) for
# BENCH_GRPC_SECONDS (10) each, in BENCH_GRPC_ROUNDS interleaved rounds, with
# the receiver's BPF time per RPC (the h2_* programs' run time,
# kernel.bpf_stats_enabled, over the calls; both ends of each call are on
# this host, so it is two ends' worth) and its collector CPU per call;
# tools/grpccurve turns curve.tsv into results-curve.md (medians) and
# bench-grpc.png; results-curve.md also has the collector's idle CPU
# (BENCH_GRPC_IDLE seconds, 10, before the rounds) and the BPF time per
# program (curve-programs.tsv).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${BENCH_CACHE:-$HOME/.cache/otelcol-seq/bench-grpc}
ROUNDS=${BENCH_GRPC_ROUNDS:-5}
N=${BENCH_GRPC_N:-50000}
C=${BENCH_GRPC_C:-50}
GHZ_VERSION=v0.120.0 # @latest resolves to 2021's v0.93.0
COLLECTOR=$ROOT/bin/otelcol-seq
OUT=${BENCH_GRPC_OUT:-$ROOT/bench-results/grpc}
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
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

"$CACHE/bin/greeter_server" -port 50051 >/dev/null 2>&1 &
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
  server s1 127.0.0.1:50051 proto h2
CFG
haproxy -f "$OUT/haproxy.cfg" -db >"$OUT/haproxy.log" 2>&1 &
pids+=($!)

cat >"$OUT/collector.yaml" <<CFG
receivers:
  grpc: {}
exporters:
  debug:
    verbosity: basic
service:
  telemetry:
    metrics:
      level: normal
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: 18888
  pipelines:
    traces:
      receivers: [grpc]
      exporters: [debug]
CFG
sleep 1

ghz_run() { # TARGET JSONFILE [ghz options]
	local target=$1 out=$2
	shift 2
	"$CACHE/bin/ghz" --insecure --import-paths "$PROTO_DIR" --proto helloworld.proto \
		--call helloworld.Greeter.SayHello -d '{"name":"bench"}' \
		-n "$N" -c "$C" --connections 1 "$@" -O json "$target" >"$out"
}

copied() { curl -s http://127.0.0.1:18888/metrics | awk -F' ' '/otelcol_receiver_grpc_kernel.*counter="bytes_copied"/ {print $2}' | head -1; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# bpf_ns FILE: the run time of the loaded h2_* programs so far, in ns
# (bpf_stats); each program's run time and run count go into FILE as JSON.
bpf_ns() {
	bpftool -j prog show 2>/dev/null | python3 -c '
import json, sys
progs = {}
for p in json.load(sys.stdin):
    if p.get("name", "").startswith("h2_"):
        n = progs.setdefault(p["name"], [0, 0])
        n[0] += p.get("run_time_ns", 0)
        n[1] += p.get("run_cnt", 0)
json.dump(progs, open(sys.argv[1], "w"))
print(sum(t for t, _ in progs.values()))' "$1"
}

# start_collector: the collector in the background (cpid), once it is ready.
start_collector() {
	"$COLLECTOR" --config "$OUT/collector.yaml" >"$OUT/collector.log" 2>&1 &
	cpid=$!
	for _ in $(seq 1 100); do grep -q "Everything is ready" "$OUT/collector.log" && break; sleep 0.2; done
	sleep 1
}

if [ -n "${BENCH_GRPC_RATES:-}" ]; then
	SECS=${BENCH_GRPC_SECONDS:-10}
	sysctl -qw kernel.bpf_stats_enabled=1
	ghz_run 127.0.0.1:50051 /dev/null # warm-up
	# The collector's CPU with no calls at all (the greeter idle, the hooks
	# seeing only the host's background).
	IDLE=${BENCH_GRPC_IDLE:-10}
	start_collector
	t0=$(cpu_ticks "$cpid")
	sleep "$IDLE"
	t1=$(cpu_ticks "$cpid")
	kill -TERM "$cpid"; wait "$cpid" || true
	idle_pct=$(python3 -c "print(f'{($t1-$t0)/$(getconf CLK_TCK)/$IDLE*100:.2f}')")
	echo "idle: the collector used $idle_pct % of a core over $IDLE s with no calls"
	curve=$OUT/curve.tsv
	printf 'round\trate\trow\trps\tp50_ms\tp99_ms\tcpu_us_per_call\tbpf_ns_per_rpc\n' >"$curve"
	progs=$OUT/curve-programs.tsv
	printf 'round\trate\tprogram\truns_per_rpc\tns_per_run\tns_per_rpc\n' >"$progs"
	for round in $(seq 1 "$ROUNDS"); do
	for rate in $BENCH_GRPC_RATES; do
		n=$((rate > 0 ? rate * SECS : N))
		for row in baseline receiver; do
			cpid=
			[ "$row" = receiver ] && { start_collector; t0=$(cpu_ticks "$cpid"); k0=$(bpf_ns "$OUT/bpf0.json"); }
			N=$n ghz_run 127.0.0.1:50051 "$OUT/ghz.json" -r "$rate"
			cpu=- bpf=-
			if [ -n "$cpid" ]; then
				sleep 1.5
				t1=$(cpu_ticks "$cpid"); k1=$(bpf_ns "$OUT/bpf1.json")
				python3 - "$OUT/bpf0.json" "$OUT/bpf1.json" "$round" "$rate" "$n" >>"$progs" <<'PY'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
n = int(sys.argv[5])
for name in sorted(b):
    t = b[name][0] - a.get(name, [0, 0])[0]
    c = b[name][1] - a.get(name, [0, 0])[1]
    if c:
        print(f"{sys.argv[3]}\t{sys.argv[4]}\t{name}\t{c / n:.2f}\t{t / c:.0f}\t{t / n:.0f}")
PY
				cpu=$(python3 -c "print(f'{($t1-$t0)/$(getconf CLK_TCK)/$n*1e6:.1f}')")
				bpf=$(python3 -c "print(f'{($k1-$k0)/$n:.0f}')")
				kill -TERM "$cpid"; wait "$cpid" || true
			fi
			python3 - "$OUT/ghz.json" "$round" "$rate" "$row" "$cpu" "$bpf" >>"$curve" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
lat = {d["percentage"]: d["latency"] / 1e6 for d in r.get("latencyDistribution") or []}
print(f"{sys.argv[2]}\t{sys.argv[3]}\t{sys.argv[4]}\t{r['rps']:.0f}\t{lat.get(50, 0):.2f}\t{lat.get(99, 0):.2f}\t{sys.argv[5]}\t{sys.argv[6]}")
PY
			tail -1 "$curve"
		done
	done
	done
	sysctl -qw kernel.bpf_stats_enabled=0
	{
		echo "ghz -r RATE for $SECS s (0: -n $N as fast as it goes), -c $C --connections 1, $ROUNDS interleaved rounds, medians"
		echo
		echo "Idle (no calls, $IDLE s): the collector used $idle_pct % of a core."
		echo
		(cd "$ROOT/tools" && GOWORK=off go run ./grpccurve -in "$curve" -png "$OUT/bench-grpc.png")
		echo
		echo "Where the BPF time goes, per program (medians over the rounds; both ends of every call):"
		echo
		python3 - "$progs" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
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
	exit 0
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
			start_collector
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
