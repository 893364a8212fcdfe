#!/usr/bin/env bash
# summarize.sh KERNEL DIR: the results of one guest run of test/kernels/run.sh.
# Prints per binary the top-level tests run/passed/failed/skipped, each failed
# test with its first error lines, and last a Markdown table row (also written
# to DIR/summary.txt). Exits 1 on any failure, or when a binary did not run.
set -uo pipefail

k=$1 dir=$2
version=$(sed -n 's/^uname: //p' "$dir/kernel.txt" 2>/dev/null)
realtime=$(sed -n 's/^realtime: //p' "$dir/kernel.txt" 2>/dev/null)
arch=$(sed -n 's/^arch: //p' "$dir/kernel.txt" 2>/dev/null)
wall=$(cat "$dir/wall-seconds" 2>/dev/null || echo '?')
total_run=0 total_pass=0 total_fail=0 total_skip=0 bad=0

# first_error LOG TEST: the first error lines of TEST's output (testify's
# Error: and its continuation, else the first file:line message, else a panic).
first_error() {
	awk -v t="$2" '
	function out(s) { gsub(/[ \t]+/, " ", s); sub(/^ /, "", s); if (s != "") { print "      " s; n++ } }
	$0 ~ "^=== (RUN|CONT) +" t "$" { in_t = 1; next }
	in_t && $0 ~ "^--- (FAIL|PASS|SKIP): " t " " { exit }
	in_t && n == 0 && /^[ \t]+Error:[ \t]/ { out($0); cont = 1; next }
	in_t && cont && n < 3 {
		if ($0 ~ /^[ \t]+(Test|Messages|Error Trace):/ || $0 ~ /^(===|---)/) { cont = 0; next }
		out($0); next
	}
	in_t && n == 0 && !cand && /^[ \t]+[A-Za-z0-9_]+\.go:[0-9]+: ./ { cand = $0 }
	in_t && n == 0 && /^panic: / { out($0); exit }
	END { if (n == 0 && cand != "") out(cand) }
	' "$1"
}

{
	boots=$(cat "$dir/boot-attempts" 2>/dev/null || echo 1)
	echo "== $k ($version, realtime=$realtime): wall ${wall}s$([ "$boots" -gt 1 ] && echo ", booted $boots times (stalled boots retried)")"
	while IFS=';' read -r name _ _ _ _; do
		log=$dir/$name.log
		rc=$(cat "$dir/$name.rc" 2>/dev/null || echo none)
		secs=$(cat "$dir/$name.seconds" 2>/dev/null || echo '?')
		if [ ! -f "$log" ]; then
			echo "  $name: did not run"
			bad=1
			continue
		fi
		pass=$(grep -cE '^--- PASS: ' "$log")
		fail=$(grep -cE '^--- FAIL: ' "$log")
		skip=$(grep -cE '^--- SKIP: ' "$log")
		run=$((pass + fail + skip))
		echo "  $name: $run run, $pass passed, $fail failed, $skip skipped (exit $rc, ${secs}s)"
		while read -r t; do
			echo "    FAIL $t"
			first_error "$log" "$t"
		done < <(sed -nE 's/^--- FAIL: ([^ ]+) .*/\1/p' "$log")
		if [ "$rc" != 0 ] && [ "$fail" = 0 ]; then
			# No failed test, yet the binary failed: a panic, a timeout, a crash.
			echo "    FAIL $name (binary exited $rc without a failed test):"
			grep -m1 -E '^(panic|fatal error|FAIL|.*test timed out)' "$log" | sed 's/^/      /'
			fail=$((fail + 1))
		fi
		total_run=$((total_run + run)) total_pass=$((total_pass + pass))
		total_fail=$((total_fail + fail)) total_skip=$((total_skip + skip))
	done <"$dir/manifest"
	[ -s "$dir/guest-status" ] || { echo "  the guest wrote no status (see $dir/console.log)"; bad=1; }
	# The fork storm's accounting, as TestForkStormAccounting logged it.
	storm=$(sed -nE 's/.* issued ([0-9]+) tickets, delivered ([0-9]+) \([0-9]+ records\), lost ([0-9]+);.*/\1 | \2 | \3/p' "$dir/seqreceiver.log" 2>/dev/null | head -1)
	echo "| $k | $version | ${arch:-?} | $total_run | $total_pass | $total_fail | $total_skip | ${storm:-- | - | -} | ${wall}s |"
} | tee "$dir/summary.txt"
# tee runs in a subshell: recompute the verdict from what was written.
grep -qE '^    FAIL |did not run|wrote no status' "$dir/summary.txt" && exit 1
exit 0
