// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package bpftrace runs users' bpftrace scripts, unmodified, and turns their
// output into OpenTelemetry data: the maps they fill become metrics, the
// lines they print become logs.
//
// # Configuration
//
//	binary: bpftrace                  # default: bpftrace, looked up on PATH
//	scripts:
//	  - path: /usr/sbin/execsnoop.bt  # printed lines -> logs
//	  - path: /usr/sbin/syscount.bt
//	    pull_interval: 10s            # print the maps below every 10s
//	    maps:
//	      "@syscall": {type: sum, attributes: [syscall], unit: "{syscall}"}
//	      "@process": {type: sum, attributes: [comm]}
//	  - path: /usr/sbin/runqlat.bt
//	    pull_interval: 10s
//	    maps:
//	      "@usecs": {type: histogram, name: sched.runq.latency, unit: us}
//	  - name: getppid
//	    program: 'tracepoint:syscalls:sys_enter_getppid { @c[comm] = count(); }'
//	    pull_interval: 1s
//	    maps:
//	      "@c": {type: sum, attributes: [comm]}
//	  - name: one_pid
//	    program: 'tracepoint:syscalls:sys_enter_openat /pid == $1/ { @[str($2)] = count(); }'
//	    args: ["1234", "nginx"]       # positional parameters $1, $2 (strings)
//
// The maps listed are pulled and exported as configured; a map the script
// prints itself (print(@x), or bpftrace's print of every map at exit) is
// exported too, listed or not (see Output mapping). A listed map must be used
// by the script (Validate and each start check it).
//
// # Running
//
// Each script runs as `bpftrace -f json [-I <script dir>] <program file>`,
// or with args `bpftrace -f json [-I <script dir>] -- <program file> args...`
// (bpftrace's positional parameters $1, $2, ..., $#; the "--" keeps an
// argument such as "-1" from being taken for an option; args are strings,
// a YAML number or boolean is refused: quote it),
// its own process group, supervised: restarted with exponential backoff
// (1s doubling to 1min, back to 1s after a run of a minute or more) whenever
// it ends, whatever the reason; a failure to start (no usable bpftrace, a
// bpftrace older than 0.13, a script that does not compile or attach) is
// logged with bpftrace's error text and counted, and retried the same way,
// while the other scripts run on. Start never fails because of a script.
// Shutdown sends SIGINT, so bpftrace runs the END blocks and prints its
// maps, and that output is delivered; whatever still runs after 5s (or when
// Shutdown's context ends) is killed with SIGKILL, as a process group, and
// reaped.
//
// bpftrace cannot be asked for its maps from outside, so when PullInterval
// is set the program bpftrace runs is the script's text followed by one
// appended probe, `interval:s:N { print(@a); print(@b); }` (interval:ms:N
// for an interval that is not a whole number of seconds), written to a
// temporary file; the script's file is never modified. bpftrace's messages
// name the temporary file as the script's path (or, inline, its name).
//
// # Output mapping
//
// Records of bpftrace's JSON output (0.17, and the shapes of later
// releases):
//
//   - printf, time, join, cat, syscall (system()), value (print() of a
//     non-map value): text. Text accumulates until it ends with a newline, or
//     until a join or value record (which end the line in bpftrace's text
//     output): so execsnoop's printf + join and killsnoop's time + printf
//     are one record each. A partial line is emitted as it is after 1s
//     without more text, or when bpftrace ends. Each is a log record: Body
//     the text without leading/trailing newlines (a printf of several lines,
//     such as a stack, stays one record; blank lines are dropped), severity
//     INFO, Timestamp when its first part was received.
//   - map (count, sum, min, max, plain values), stats (avg() maps: one
//     number; stats() maps: count, average, total), hist (hist() and lhist()
//     maps), tseries (0.2x; the latest interval's value): metrics, per the
//     map's MapConfig (below), or, for a map no MapConfig names, as an auto
//     map: the default name, key parts as attributes key, key.1, key.2...,
//     and the type the record says: hist -> histogram; stats of stats() ->
//     sum (count and total monotonic Sums, average a Gauge); stats of avg(),
//     tseries -> gauge; map -> sum when the script assigns count() or sum()
//     to it, gauge otherwise (min, max, plain values). A printed map with
//     values that are not numbers (strings, tuples, records, null), or that
//     does not fit its MapConfig's type, exports what it can, and its JSON
//     line is passed on (below).
//   - lost_events: added to Counters.LostEvents, and a WARN log record with
//     EventName bpftrace.lost_events and attribute bpftrace.lost_events.
//   - attached_probes: marks the script as running (logged).
//   - runtime_error, error, errorf (0.27): an ERROR log record;
//     helper_error, print_error, warning, warnf (0.27): a WARN log record;
//     each with EventName bpftrace.<type> and the message and location.
//   - Any other record type (test_result and benchmark_result of --test and
//     --bench, later types): passed on, as a map that could not be mapped
//     is: an INFO log record with EventName bpftrace.<type> and the JSON
//     line as body, counted by type in Counters.Unmapped.
//   - A stdout line that is not a record, or a record of a known type whose
//     data has no shape this package knows: a WARN log record with the line
//     (and Counters.ParseErrors).
//
// Lines bpftrace writes to stderr (its errors and warnings, including the
// harmless "couldn't set RLIMIT_MEMLOCK" line bpftrace 0.17 prints on
// kernels that account BPF memory to cgroups) are WARN log records with
// attribute bpftrace.stream=stderr; printed lines have bpftrace.stream=stdout.
//
// Maps become metrics named MapConfig.Name (default
// bpftrace.<script>.<map without @>):
//
//   - type sum: a cumulative Sum, monotonic unless monotonic: false, its start
//     time the start of the bpftrace process (whose maps start empty).
//   - type gauge: a Gauge.
//   - type histogram: a cumulative explicit-bucket Histogram. bpftrace's
//     buckets are trimmed to the range from the first to the last non-zero
//     one; each bucket's upper bound (bpftrace buckets hold the integers
//     [min, max]) is an explicit bound, so the first bucket is open below,
//     and a last bucket with an upper bound is followed by an empty (max,
//     +Inf) one; lhist's [max, ...) bucket is the +Inf bucket. Count is set;
//     sum, min and max are not (bpftrace does not print them).
//   - stats() maps (count, average, total) become three metrics:
//     <name>.count and <name>.total (Sums for type sum, Gauges for type
//     gauge) and <name>.average (a Gauge). avg() maps are one metric.
//
// Integers are int values (bpftrace prints integers a double cannot hold
// as strings: those become double values). Every data point and log record
// carries bpftrace.script (the script's name). A keyed map's key is split
// at commas (bpftrace joins a multi-key map's key parts with commas; a
// string key containing a comma is split too) and part i becomes attribute
// MapConfig.Attributes[i], or key<i> beyond the names given (key, key.1,
// ... for an auto map).
//
// The Output gets logs and metrics from one goroutine, batched: every 100ms,
// or as soon as 1000 log records or data points wait.
package bpftrace
