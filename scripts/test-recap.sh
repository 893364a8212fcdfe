#!/usr/bin/env bash
# Usage: scripts/test-recap.sh LOG [LINES]
#
# Prints, for every test that failed in LOG (the output of `go test -v`),
# the last LINES (default 80) lines the test itself logged: a CI log shows
# only its end, and parallel or long suites put a failing test's own lines
# far above it. Lines are a test's from its `=== RUN`, `=== NAME` or
# `=== CONT` marker to the next marker of any test. Then, last of all (a CI
# log's tail shows them even when a test dumps pages of diagnostics), each
# failing test's testify assertions: "Error Trace:" to "Messages:" and its
# continuation lines.
set -euo pipefail
log=$1
lines=${2:-80}
[[ -r $log ]] || { echo "test-recap: cannot read $log" >&2; exit 2; }
mapfile -t failed < <(sed -n 's/^ *--- FAIL: \([^ ]*\) .*/\1/p' "$log" | sort -u)
((${#failed[@]})) || exit 0
echo
echo "=== recap: ${#failed[@]} failing tests, each one's own last $lines lines (full log: $log)"
for name in "${failed[@]}"; do
	echo "--- recap of $name"
	awk -v name="$name" '
		/^=== (RUN|NAME|CONT|PAUSE) / { cur = $3; next }
		/^ *--- (PASS|FAIL|SKIP): / { if ($3 == name) print; next }
		cur == name { print }
	' "$log" | tail -n "$lines"
done
for name in "${failed[@]}"; do
	awk -v name="$name" '
		/^=== (RUN|NAME|CONT|PAUSE) / { cur = $3; inblock = 0; next }
		cur != name { next }
		/^ +\tError Trace:/ { if (!shown++) print "--- assertions of " name; print prev; inblock = 1; print; next }
		inblock && /^ +\t/ { print; next }
		{ inblock = 0; prev = $0 }
	' "$log"
done
