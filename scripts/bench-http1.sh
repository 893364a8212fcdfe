#!/usr/bin/env bash
# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
#
# make bench-http1 (root): what an HTTP/1.1 request costs under the grpc
# receiver (its HTTP/1.x spans, on by default). Debian's nginx-light (apt-get
# when missing) serves a 1 KiB and a 64 KiB file on 127.0.0.1:18080 (one
# worker, keep-alive, sendfile as Debian ships it: the 64 KiB body goes by
# sendfile, a hole the capture skips), driven by hey v0.1.4 (built once into
# $BENCH_CACHE, default ~/.cache/otelcol-seq/bench-http1; keep-alive, -c
# connections, -q RATE/-c a connection, -z SECONDS). Rows, interleaved in
# each round (the machine's run-to-run spread is larger than the effect):
#   baseline   no collector
#   receiver   bin/otelcol-seq --config config/grpc.yaml (the shipped config:
#              grpc and seq receivers, batch, debug and file exporters), plus
#              a telemetry overlay that serves its metrics on 127.0.0.1:18889
# at each rate of BENCH_HTTP1_RATES ("2000 5000 0"; 0: as fast as hey goes)
# for BENCH_HTTP1_SECONDS (5) each, for each file, in BENCH_HTTP1_ROUNDS (3)
# rounds. Per row the median and the spread (min..max) over the rounds of
# RPS, p50 and p99, and for the receiver rows, per request: the collector's
# CPU (user+system, /proc), the h2_* BPF programs' run time
# (the kernel's BPF statistics, held on by scripts/lib/bench.sh's
# bpf_stats_start; client and server are both on this host, so it is two
# ends' worth), the bytes the kernel copied (bytes_copied), the spans
# of the file exporter for the file asked (client and server: 2 a request)
# and the share of server spans whose parent is their client span; and the
# calls throttled (over their connection's share, max_capture_rate, and
# over their user's, max_capture_rate_per_user) and the records lost
# (kernel counters) over the row.
# Also the collector's idle CPU (BENCH_HTTP1_IDLE seconds, 10, before the
# rounds). Results: bench-results/http1/{runs.tsv,results.md,bench-http1-*.png}.
#   BENCH_HTTP1_C (4)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${BENCH_CACHE:-$HOME/.cache/otelcol-seq/bench-http1}
ROUNDS=${BENCH_HTTP1_ROUNDS:-3}
RATES=${BENCH_HTTP1_RATES:-2000 5000 0}
SECS=${BENCH_HTTP1_SECONDS:-5}
C=${BENCH_HTTP1_C:-4}
IDLE=${BENCH_HTTP1_IDLE:-10}
SIZES="1024 65536"
PORT=18080
METRICS=127.0.0.1:18889
HEY_VERSION=v0.1.4
COLLECTOR=$ROOT/bin/otelcol-seq
OUT=${BENCH_HTTP1_OUT:-$ROOT/bench-results/http1}
mkdir -p "$CACHE/bin" "$OUT"
# shellcheck source=scripts/lib/bench.sh
. "$ROOT/scripts/lib/bench.sh"

[ -x "$COLLECTOR" ] || { echo "bin/otelcol-seq is missing: make build" >&2; exit 1; }
if [ ! -x "$CACHE/bin/hey" ]; then
	echo "== building hey $HEY_VERSION"
	GOBIN=$CACHE/bin go install "github.com/rakyll/hey@$HEY_VERSION"
fi
command -v nginx >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null; }

pids=()
cpid=
www=$(mktemp -d)
cleanup() {
	for p in "${pids[@]}" $cpid; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$www"
}
trap cleanup EXIT

# The files (nginx's workers run as nobody: a world-readable folder).
chmod 755 "$www"
for size in $SIZES; do head -c "$size" /dev/urandom >"$www/f$size.bin"; done
chmod 644 "$www"/*.bin
mkdir -p "$www/tmp"
cat >"$OUT/nginx.conf" <<CFG
worker_processes 1;
daemon off;
pid $www/nginx.pid;
error_log $OUT/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_timeout 65;
  keepalive_requests 1000000;
  default_type application/octet-stream;
  client_body_temp_path $www/tmp/body;
  proxy_temp_path $www/tmp/proxy;
  fastcgi_temp_path $www/tmp/fastcgi;
  uwsgi_temp_path $www/tmp/uwsgi;
  scgi_temp_path $www/tmp/scgi;
  server {
    listen 127.0.0.1:$PORT;
    root $www;
  }
}
CFG
nginx -c "$OUT/nginx.conf" &
pids+=($!)

# The shipped config as it is; this overlay only serves its metrics.
cat >"$OUT/telemetry.yaml" <<CFG
service:
  telemetry:
    metrics:
      level: normal
      readers:
        - pull:
            exporter:
              prometheus:
                host: ${METRICS%:*}
                port: ${METRICS#*:}
CFG
for _ in $(seq 1 50); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/f1024.bin" && break; sleep 0.1; done

# hey_run SIZE RATE FILE: hey's report of a run into FILE.
hey_run() {
	local q=()
	[ "$2" -gt 0 ] && q=(-q $(($2 / C)))
	"$CACHE/bin/hey" -z "${SECS}s" -c "$C" "${q[@]}" "http://127.0.0.1:$PORT/f$1.bin" >"$3"
}

# kernel NAME: the receiver's kernel counter NAME (receiver_grpc_kernel);
# lost: the records lost (receiver_grpc_records_lost).
kernel() { curl -s "http://$METRICS/metrics" | prom_sum otelcol_receiver_grpc_kernel "counter=\"$1\""; }
lost() { curl -s "http://$METRICS/metrics" | prom_sum otelcol_receiver_grpc_records_lost; }

# bpf_snap PID FILE: the run time and run count so far of each h2_*
# program PID holds (its file descriptors' prog_id: other collectors on the
# host load programs of the same names), by program id, into FILE as JSON
# (bpf_stats).
bpf_snap() {
	bpftool -j prog show 2>/dev/null | python3 -c '
import glob, json, sys
ids = set()
for f in glob.glob(f"/proc/{sys.argv[1]}/fdinfo/*"):
    try:
        ids.update(int(l.split()[1]) for l in open(f) if l.startswith("prog_id:"))
    except OSError:
        pass
progs = [p for p in json.load(sys.stdin) if p.get("name", "").startswith("h2_") and p["id"] in ids]
json.dump({p["id"]: [p["name"], p.get("run_time_ns", 0), p.get("run_cnt", 0)] for p in progs}, open(sys.argv[2], "w"))' "$1" "$2"
}

# start_collector: the collector in the background (cpid), once it is ready;
# its spans go to $OUT/spans.jsonl.
start_collector() {
	rm -f "$OUT/spans.jsonl"
	GRPC_OUTPUT=$OUT/spans.jsonl SEQ_OUTPUT=/dev/null \
		"$COLLECTOR" --config "$ROOT/config/grpc.yaml" --config "$OUT/telemetry.yaml" >"$OUT/collector.log" 2>&1 &
	cpid=$!
	for _ in $(seq 1 300); do grep -q "Everything is ready" "$OUT/collector.log" && break; sleep 0.2; done
	grep -q "Everything is ready" "$OUT/collector.log" || { echo "the collector was not ready in 60 s:" >&2; tail -20 "$OUT/collector.log" >&2; exit 1; }
	sleep 1
}

stop_collector() {
	kill -TERM "$cpid"
	wait "$cpid" || true
	cpid=
}

bpf_stats_start bench-http1 "$OUT/bpf-stats"
hey_run 1024 0 /dev/null # warm-up

# The collector's CPU with no requests (nginx idle, the hooks seeing only
# the host's background).
start_collector
t0=$(cpu_ticks "$cpid")
sleep "$IDLE"
t1=$(cpu_ticks "$cpid")
stop_collector
idle_pct=$(python3 -c "print(f'{($t1-$t0)/$(getconf CLK_TCK)/$IDLE*100:.2f}')")
echo "idle: the collector used $idle_pct % of a core over $IDLE s with no requests"

runs=$OUT/runs.tsv
progs=$OUT/programs.tsv
printf 'size\tround\trate\tprogram\truns_per_req\tns_per_run\tns_per_req\n' >"$progs"
printf 'size\tround\trate\trow\trequests\trps\tp50_ms\tp99_ms\tcpu_us_per_req\tbpf_ns_per_req\tbytes_per_req\tspans_per_req\tclient_per_req\tserver_per_req\tjoined\tthrottled\tthrottled_user\tlost\n' >"$runs"
for round in $(seq 1 "$ROUNDS"); do
for size in $SIZES; do
for rate in $RATES; do
	for row in baseline receiver; do
		[ "$row" = receiver ] && {
			start_collector
			bpf_snap "$cpid" "$OUT/bpf0.json"
			t0=$(cpu_ticks "$cpid") b0=$(kernel bytes_copied)
			th0=$(kernel throttled) tu0=$(kernel throttled_user) l0=$(lost)
		}
		hey_run "$size" "$rate" "$OUT/hey.txt"
		stats=()
		if [ -n "$cpid" ]; then
			sleep 1.5 # the reader's last batch, the counters' next snapshot
			bpf_snap "$cpid" "$OUT/bpf1.json"
			t1=$(cpu_ticks "$cpid") b1=$(kernel bytes_copied)
			th1=$(kernel throttled) tu1=$(kernel throttled_user) l1=$(lost)
			stop_collector # the batch and the file exporter flush
			# The BPF time: the programs loaded at both snapshots.
			python3 - "$OUT/bpf0.json" "$OUT/bpf1.json" "$size" "$round" "$rate" "$OUT/hey.txt" "$progs" >"$OUT/bpf.txt" <<'PY'
import json, re, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
n = sum(int(c) for c in re.findall(r"\[\d+\]\s+(\d+) responses", open(sys.argv[6]).read()))
if not n:
    sys.exit(print("-"))
by = {}
for pid, (name, t, c) in b.items():
    if pid in a:
        x = by.setdefault(name, [0, 0])
        x[0] += t - a[pid][1]
        x[1] += c - a[pid][2]
with open(sys.argv[7], "a") as out:
    for name, (t, c) in sorted(by.items()):
        if c:
            print(f"{sys.argv[3]}\t{sys.argv[4]}\t{sys.argv[5]}\t{name}\t{c / n:.2f}\t{t / c:.0f}\t{t / n:.0f}", file=out)
print(f"{sum(t for t, _ in by.values()) / n:.0f}")
PY
			bpf=$(cat "$OUT/bpf.txt")
			stats=("$t0" "$t1" "$bpf" "$b0" "$b1" "$((th1 - th0))" "$((tu1 - tu0))" "$((l1 - l0))")
		fi
		python3 - "$OUT/hey.txt" "$OUT/spans.jsonl" "$size" "$round" "$rate" "$row" "$(getconf CLK_TCK)" "${stats[@]}" >>"$runs" <<'PY'
import json, re, sys
hey, spans, size, rnd, rate, row, tck = sys.argv[1:8]
text = open(hey).read()
codes = {int(c): int(n) for c, n in re.findall(r"\[(\d+)\]\s+(\d+) responses", text)}
if set(codes) - {200} or "Error distribution" in text:
    sys.exit(f"hey: requests failed in {row} {size} {rate}:\n{text}")
n = codes.get(200, 0)
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
lat = {int(p): float(s) * 1e3 for p, s in re.findall(r"(\d+)% in ([\d.]+) secs", text)}
cols = [size, rnd, rate, row, str(n), f"{rps:.0f}", f"{lat[50]:.3f}", f"{lat[99]:.3f}"]
if row == "baseline":
    cols += ["-"] * 10
else:
    t0, t1, bpf, b0, b1, throttled, throttled_user, lost = sys.argv[8:16]
    path = f"/f{size}.bin"
    client, server = set(), {}
    for line in open(spans):
        for rs in json.loads(line).get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for s in ss.get("spans", []):
                    a = {x["key"]: x["value"] for x in s.get("attributes", [])}
                    if a.get("url.path", {}).get("stringValue") != path:
                        continue
                    if s.get("kind") == 3:
                        client.add(s["spanId"])
                    elif s.get("kind") == 2:
                        server[s["spanId"]] = s.get("parentSpanId", "")
    joined = sum(p in client for p in server.values()) / len(server) if server else 0
    cols += [f"{(int(t1) - int(t0)) / int(tck) / n * 1e6:.1f}", bpf,
             f"{(int(b1) - int(b0)) / n:.0f}", f"{(len(client) + len(server)) / n:.3f}",
             f"{len(client) / n:.3f}", f"{len(server) / n:.3f}", f"{joined:.3f}", throttled, throttled_user, lost]
print("\t".join(cols))
PY
		tail -1 "$runs"
	done
done
done
done

{
	echo "nginx-light $(nginx -v 2>&1 | sed 's,.*/,,'), one worker, sendfile; hey $HEY_VERSION -c $C (keep-alive), -z ${SECS}s, -q RATE/$C (rate 0: as fast as it goes); $ROUNDS interleaved rounds; $(nproc) CPUs."
	echo "Per request: both ends (hey and nginx) are on this host, so the BPF time and the bytes copied are two ends' worth and 2 spans are expected."
	echo
	echo "Idle (no requests, $IDLE s): the collector used $idle_pct % of a core."
	echo
	python3 - "$runs" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
def cell(rs, k, fmt):
    v = [float(r[k]) for r in rs if r[k] not in ("-", "")]
    if not v:
        return ""
    return f"{statistics.median(v):{fmt}} ({min(v):{fmt}}..{max(v):{fmt}})"
def total(rs, k):
    return str(sum(int(r[k]) for r in rs if r[k] not in ("-", "")))
print("Medians over the rounds (min..max).\n")
print("| file | rate asked | row | rounds | RPS | p50 ms | p99 ms | collector µs CPU / req | BPF ns / req | bytes copied / req | spans / req (client + server) | server spans joined | calls throttled (connection + user shares) | records lost |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for size in dict.fromkeys(r["size"] for r in rows):
    for rate in dict.fromkeys(r["rate"] for r in rows):
        for row in ("baseline", "receiver"):
            rs = [r for r in rows if (r["size"], r["rate"], r["row"]) == (size, rate, row)]
            if not rs:
                continue
            recv = row == "receiver"
            print(f"| {int(size) // 1024} KiB | {'max' if rate == '0' else rate} | {row} | {len(rs)} | {cell(rs, 'rps', '.0f')} | "
                  f"{cell(rs, 'p50_ms', '.2f')} | {cell(rs, 'p99_ms', '.2f')} | {cell(rs, 'cpu_us_per_req', '.1f')} | "
                  f"{cell(rs, 'bpf_ns_per_req', '.0f')} | {cell(rs, 'bytes_per_req', '.0f')} | {cell(rs, 'spans_per_req', '.3f')}"
                  f"{'' if not recv else ' = ' + cell(rs, 'client_per_req', '.3f').split()[0] + ' + ' + cell(rs, 'server_per_req', '.3f').split()[0]} | "
                  f"{cell(rs, 'joined', '.3f')} | {total(rs, 'throttled') + ' + ' + total(rs, 'throttled_user') if recv else ''} | {total(rs, 'lost') if recv else ''} |")
PY
	echo
	echo "Where the BPF time goes, per program (medians over the rounds; both ends of every request):"
	echo
	python3 - "$progs" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
keys = list(dict.fromkeys((r["size"], r["rate"]) for r in rows))
names = sorted({r["program"] for r in rows})
med = lambda vs: statistics.median(float(v) for v in vs)
print("| program | " + " | ".join(f"{int(s) // 1024} KiB at {'max' if r == '0' else r}: runs / req, ns / run, ns / req" for s, r in keys) + " |")
print("|---|" + "---|" * len(keys))
for name in names:
    cells = []
    for k in keys:
        rs = [r for r in rows if r["program"] == name and (r["size"], r["rate"]) == k]
        cells.append(f"{med([r['runs_per_req'] for r in rs]):.2f}, {med([r['ns_per_run'] for r in rs]):.0f}, {med([r['ns_per_req'] for r in rs]):.0f}" if rs else "")
    print(f"| {name} | " + " | ".join(cells) + " |")
PY
} | tee "$OUT/results.md"

# The plots: tools/grpccurve's, one a file.
for size in $SIZES; do
	awk -F'\t' -v s="$size" 'NR == 1 {print "round\trate\trow\trps\tp50_ms\tp99_ms\tcpu_us_per_call\tbpf_ns_per_rpc"; next}
		$1 == s {print $2 "\t" $3 "\t" $4 "\t" $6 "\t" $7 "\t" $8 "\t" $9 "\t" $10}' "$runs" >"$OUT/curve-$size.tsv"
	(cd "$ROOT/tools" && GOWORK=off go run ./grpccurve -in "$OUT/curve-$size.tsv" -xlabel "RPS asked (hey -q × -c)" \
		-png "$OUT/bench-http1-$((size / 1024))k.png" >/dev/null)
done
