#!/usr/bin/env bash
# Runs every Go fuzz target of the module (func FuzzX in a _test.go file),
# one at a time, each for FUZZTIME (default 60s): `make fuzz`. `make test`
# runs each briefly (FUZZTIME=5s) after the unit tests, which run the seed
# corpora (testdata/fuzz/<FuzzX>/) as ordinary tests. A failing input is
# written by go test to the package's testdata/fuzz/<FuzzX>/ (commit it as a
# seed once fixed). The targets assert resources (memory, work), not only
# the absence of panics.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-60s}
# Go minimises every new interesting input (not only failures) for up to
# 60 s by default, and a minimisation still running at the deadline fails
# the run with "context deadline exceeded" and no failing input: CI went red
# that way on FuzzTrackerBudget (a 27 s stall in a 5 s run). Minimisation is
# bounded well inside the run instead.
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-5s}
# FUZZ_ONLY: a regular expression of target names to run (default: all).
FUZZ_ONLY=${FUZZ_ONLY:-.}
# fuzz_one NAME PKG runs one target. Go before 1.27 can fail a run at its
# -fuzztime deadline with "context deadline exceeded" and no failing input
# (a race in its fuzzing coordinator: go.dev/issue/75804; CI went red so on
# FuzzTracker with 0 new inputs): such a run, and only such a run (nothing
# written to testdata/fuzz/NAME), is run once more; a written input always
# fails.
fuzz_one() {
	local name=$1 pkg=$2 out before after
	out=$(mktemp)
	before=$(ls "$pkg/testdata/fuzz/$name" 2>/dev/null | wc -l)
	for try in 1 2; do
		if $GO test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME" "$pkg" 2>&1 | tee "$out"; [ "${PIPESTATUS[0]}" = 0 ]; then
			rm -f "$out"
			return 0
		fi
		after=$(ls "$pkg/testdata/fuzz/$name" 2>/dev/null | wc -l)
		if [ "$try" = 2 ] || [ "$after" != "$before" ] || ! grep -q '^    context deadline exceeded$' "$out"; then
			break
		fi
		echo "fuzz: $name: context deadline exceeded with no failing input written (go.dev/issue/75804): once more"
	done
	rm -f "$out"
	return 1
}

failed=()
n=0
while IFS=: read -r file name; do
	[[ $name =~ $FUZZ_ONLY ]] || continue
	pkg=./$(dirname "$file")
	n=$((n + 1))
	echo "fuzz: $name in $pkg for $FUZZTIME"
	if ! fuzz_one "$name" "$pkg"; then
		failed+=("$name ($pkg)")
	fi
done < <(grep -rHo --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]+' receiver internal | sed -E 's/:func /:/' | sort -u)
if ((${#failed[@]})); then
	echo "fuzz: ${#failed[@]} of $n targets failed: ${failed[*]}" >&2
	exit 1
fi
echo "fuzz: $n targets, each $FUZZTIME, no failure"
