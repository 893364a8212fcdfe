#!/bin/sh
# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
# A stand-in for bpftrace in the supervisor tests (no root, no kernel): it
# prints records as `bpftrace -f json` does. What it does is chosen by the
# program's "// fake: MODE" line; it writes the program it was given to
# $FAKE_DIR/<mode>.bt, its argv to $FAKE_DIR/<mode>.argv, its pid to
# $FAKE_DIR/<mode>.pids and the pids of the children it starts to
# $FAKE_DIR/<mode>.children.
if [ "$1" = "--version" ]; then
	echo "bpftrace ${FAKE_BPFTRACE_VERSION:-v0.17.0}"
	exit 0
fi
# The program is the argument after "--" (the positional parameters follow
# it), else the last argument. The whole argv goes to $FAKE_DIR/<mode>.argv,
# one argument a line.
prog=
after=0
for a; do
	if [ "$after" = 1 ]; then prog=$a; after=2; continue; fi
	if [ "$after" = 0 ] && [ "$a" = "--" ]; then after=1; continue; fi
	[ "$after" = 0 ] && prog=$a
done
mode=$(sed -n 's|^// fake: *||p' "$prog" | head -n 1)
cp "$prog" "$FAKE_DIR/$mode.bt"
: > "$FAKE_DIR/$mode.argv"
for a; do printf '%s\n' "$a" >> "$FAKE_DIR/$mode.argv"; done
echo $$ >> "$FAKE_DIR/$mode.pids"
rec() { printf '%s\n' "$1"; }
echo 'ERROR: Unknown error -1: couldn'"'"'t set RLIMIT_MEMLOCK for bpftrace. If your program is not loading, you can try "ulimit -l 8192" to fix the problem' >&2

case "$mode" in
compile_error)
	echo "$prog:2:9-15: ERROR: Undefined map: @nope" >&2
	exit 1
	;;
crash)
	rec '{"type": "attached_probes", "data": {"probes": 1}}'
	rec '{"type": "printf", "data": "crashing\n"}'
	sleep 0.3
	exit 3
	;;
run)
	# SIGINT: END output, then exit 0 (as bpftrace does).
	on_int() {
		rec '{"type": "printf", "data": "END block\n"}'
		rec '{"type": "map", "data": {"@c": 7}}'
		rec '{"type": "printf", "data": "unterminated"}'
		exit 0
	}
	trap on_int INT
	rec '{"type": "attached_probes", "data": {"probes": 2}}'
	rec '{"type": "printf", "data": "1234       42    "}'
	rec '{"type": "join", "data": "/bin/true a b"}'
	rec '{"type": "map", "data": {"@c": 3}}'
	rec '{"type": "map", "data": {"@internal": 3}}'
	rec '{"type": "lost_events", "data": {"events": 5}}'
	rec 'garbage that is not JSON'
	rec '{"type": "helper_error", "helper": "map_update_elem", "retcode": -7, "line": 1, "col": 26}'
	echo "WARNING: something $prog said" >&2
	while :; do sleep 0.05; done
	;;
args)
	rec '{"type": "attached_probes", "data": {"probes": 1}}'
	rec '{"type": "printf", "data": "args\n"}'
	while :; do sleep 0.05; done
	;;
flood)
	rec '{"type": "attached_probes", "data": {"probes": 1}}'
	i=0
	while [ $i -lt 2500 ]; do
		rec '{"type": "printf", "data": "line\n"}'
		i=$((i + 1))
	done
	while :; do sleep 0.05; done
	;;
huge)
	# What a traced process can make a script print: lines of
	# ${FAKE_HUGE_BYTES:-1048576} bytes (execsnoop prints argv), then many
	# short ones; $FAKE_DIR/huge.done once all are written.
	rec '{"type": "attached_probes", "data": {"probes": 1}}'
	big=$(head -c "${FAKE_HUGE_BYTES:-1048576}" /dev/zero | tr '\0' 'a')
	i=0
	while [ $i -lt "${FAKE_HUGE_LINES:-100}" ]; do
		rec '{"type": "printf", "data": "'"$i $big"'\n"}'
		i=$((i + 1))
	done
	i=0
	while [ $i -lt "${FAKE_MANY_LINES:-20000}" ]; do
		rec '{"type": "printf", "data": "short line '"$i"'\n"}'
		i=$((i + 1))
	done
	: > "$FAKE_DIR/huge.done"
	while :; do sleep 0.05; done
	;;
config)
	# For the test that every config field arrives: the environment, a
	# keyed map, a long line and a long stderr line.
	env > "$FAKE_DIR/$mode.env"
	rec '{"type": "attached_probes", "data": {"probes": 1}}'
	rec '{"type": "map", "data": {"@k": {"x,y": 5}}}'
	long=$(head -c 300 /dev/zero | tr '\0' 'l')
	rec '{"type": "printf", "data": "'"$long"'\n"}'
	echo "WARNING: $long" >&2
	while :; do sleep 0.05; done
	;;
stubborn)
	# Ignores SIGINT, and leaves a child that ignores it too.
	trap '' INT
	rec '{"type": "attached_probes", "data": {"probes": 1}}'
	sleep 60 &
	echo $! >> "$FAKE_DIR/$mode.children"
	while :; do sleep 0.05; done
	;;
orphan)
	# Exits at once, leaving a child in its process group.
	rec '{"type": "attached_probes", "data": {"probes": 1}}'
	sleep 60 &
	echo $! >> "$FAKE_DIR/$mode.children"
	sleep 0.2
	exit 0
	;;
*)
	echo "fakebpftrace: unknown mode '$mode'" >&2
	exit 2
	;;
esac
