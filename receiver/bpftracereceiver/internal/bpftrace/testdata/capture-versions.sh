#!/bin/bash
# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
# Regenerates testdata/versions/<version>/*: the `bpftrace -f json` output of
# the same scripts on each bpftrace version (root):
#   sudo ./capture-versions.sh [BPFTRACE...]
# Default: the host's bpftrace (Debian 12: 0.17) and the chroots of
# scripts/bpftrace-chroot.sh (trixie: 0.23, sid: 0.27), built if missing.
# The program file is copied to /tmp: the chroot wrappers see only /tmp.
set -eu
cd "$(dirname "$0")"
root=$(git rev-parse --show-toplevel)
if [ $# -eq 0 ]; then
	set -- "$(command -v bpftrace)"
	for suite in trixie sid; do
		"$root/scripts/bpftrace-chroot.sh" build "$suite" >&2
		set -- "$@" "$("$root/scripts/bpftrace-chroot.sh" path "$suite")"
	done
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp versions/*.bt "$tmp/"
for bin in "$@"; do
	v=$("$bin" --version | sed -n 's/^bpftrace v\([0-9]*\.[0-9]*\).*/\1/p')
	out=versions/$v
	mkdir -p "$out"
	"$bin" --version > "$out/version.txt"
	timeout -s INT 10 "$bin" -f json "$tmp/selfprint.bt" > "$out/selfprint.jsonl" 2> "$out/selfprint.stderr" || true
	if [ "$v" = 0.27 ]; then
		timeout -s INT 10 "$bin" -f json "$tmp/newer.bt" > "$out/newer.jsonl" 2> "$out/newer.stderr" || true
		timeout -s INT 10 "$bin" -f json --test "$tmp/newer.bt" > "$out/newer_test.jsonl" 2> "$out/newer_test.stderr" || true
		timeout -s INT 30 "$bin" -f json --bench "$tmp/newer.bt" > "$out/newer_bench.jsonl" 2> "$out/newer_bench.stderr" || true
	fi
	sed -i "s|$tmp/|testdata/versions/|g" "$out"/*.stderr "$out"/*.jsonl
	echo "$v: $(cat "$out/version.txt"): $(cat "$out"/*.jsonl | wc -l) records"
done
