// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package ebpfexporter runs an existing Cloudflare ebpf_exporter config
// directory unmodified and turns its maps into OpenTelemetry metrics and
// its tracing.spans ring buffers into spans.
//
// It is the runner that ties the receiver's inner packages together, and
// the only one the receiver calls: per config it reads the YAML (package
// spec), has it loaded and attached (package loader, kernel-facing), and
// starts the readers: span ring buffers (package spans), perf_event_array
// counters and the cgroup_id_map here; every collection it reads the maps
// and maps them to metrics here, decoding labels with package decoder and
// charging what it keeps to one budget (package budget).
//
// # Files
//
// Config.ConfigDir holds, for every name in Config.Names, <name>.yaml (the
// ebpf_exporter config) next to <name>.bpf.o (the compiled object), exactly
// as ebpf_exporter's --config.dir / --config.names read them. The
// ebpf_exporter receiver calls Collect every collection interval (through
// the collector's scraperhelper).
//
//	e, _ := ebpfexporter.New(cfg, logger) // checks cfg; loads nothing
//	e.SetSpanSink(sink)                   // optional: read the span ring buffers into sink
//	_ = e.Start(ctx)                      // loads and attaches each config; per-config failures are logged and counted
//	md := e.Collect()                     // reads the maps now (what the receiver does every interval)
//	_ = e.Shutdown(ctx)                   // closes every link, perf event, reader, program and map
//
// Failures (config name -> error), Programs (config -> program -> nil or
// why it is not attached) and Stats (configs loaded/failed, decoder errors
// per config, collections, lost perf samples, span counters) are there for
// the receiver's own telemetry.
//
// # Config schema
//
// spec.ProgramConfig and its types are ebpf_exporter's config structs with the
// same YAML keys: metrics.counters (name, help, perf_event_array,
// flush_interval, labels), metrics.histograms (name, help, bucket_type,
// bucket_min, bucket_max, bucket_multiplier, bucket_keys, labels), labels
// (name, size, padding, decoders), decoders (name, static_map, regexps,
// allow_unknown), kaddrs, cgroup_id_map (name, type, regexps) and
// tracing.spans (name, ringbuf, service, labels). Unknown keys are ignored
// as ebpf_exporter ignores them, with a logged warning.
//
// A config ebpf_exporter refuses is refused, with a spec.ConfigError naming the
// file and the field (e.g. "metrics.counters[0].labels[1].size"): no
// metrics and no tracing; a counter or histogram without name or help; a
// span without ringbuf (ebpf_exporter dies at start); a cgroup_id_map of another type than hash
// or cgrp_storage, or without regexps; YAML that does not decode. So is,
// at load rather than at every collection, what ebpf_exporter only fails on
// when it reads the map (it then counts a decoder error and skips the
// metric, every time): a label of size 0 or without decoders, an unknown
// decoder name, a regexp decoder without (or with a bad) regexp, a uint
// label not 1, 2, 4 or 8 bytes (ksym: 8, kstack: multiple of 8, ifname and
// majorminor: at least 4), an unknown bucket_type, bucket_max equal to
// bucket_min, fixed without bucket_keys, a histogram without labels (it
// panics ebpf_exporter); and what Prometheus registration refuses in
// ebpf_exporter: invalid metric or label names, duplicate label names, a
// metric name used twice in one config. Stricter than ebpf_exporter (its
// output would not be a histogram): bucket_max below bucket_min, bucket
// upper bounds that do not strictly increase (unsorted bucket_keys, a
// negative multiplier), a label named "le" besides the bucket label.
//
// At load the object is checked against the config: every counter and
// histogram needs a map of its own name (hash, array, lru_hash or their
// per-CPU variants) with 8-byte (u64) values, and the label sizes plus
// paddings must add up exactly to the map's key size from its BTF / map
// definition (the error gives both sizes and the BTF key type). A
// perf_event_array counter needs a perf event array of its name, a span a
// ring buffer, a cgroup_id_map a map with 8-byte keys (hash) or 4-byte
// keys (cgrp_storage) and u64 values.
//
// # Map semantics (as ebpf_exporter)
//
//   - The map is named like the metric. Values are u64 in host byte order.
//   - The key is cut into the labels in order: Size bytes, then Padding
//     bytes skipped; each label's decoders run in turn on those bytes.
//   - A metric with no labels reads key uint32(0) only.
//   - Per-CPU maps: the values of all CPUs are summed; but when the last
//     label is named cpu, the CPU number (a host-order uint16, so the label
//     has size 2) is appended to the key and each CPU is its own series
//     (every possible CPU, zeros included). A per-CPU map whose only label
//     is cpu reads key uint32(0) and drops those 4 bytes.
//   - Keys that decode to the same label values are summed.
//   - A decoder returning ErrSkipLabelSet (regexp without a match) drops
//     the key. Any other decoder error skips the whole metric for that
//     collection and counts one decoder error for the config
//     (decoder_errors_total).
//   - Decoded labels are cached per raw key between collections (only for
//     keys seen in the previous collection).
//
// # Reading the maps
//
// Each collection reads a metric's whole map with BPF_MAP_LOOKUP_BATCH
// (cilium/ebpf Map.BatchLookup with a cursor, up to 4096 elements a call,
// into buffers the map keeps between collections) where the kernel has it
// for the map's type (Linux 5.6+); elsewhere one element at a time
// (BPF_MAP_GET_NEXT_KEY and BPF_MAP_LOOKUP_ELEM), decided once per map on
// ErrNotSupported. Series come out sorted by their label values; while a
// collection brings no key the last one had not, they are placed by their
// rank in the last full sort instead of being sorted again. The cost
// against ebpf_exporter itself: make bench-ebpf-exporter,
// docs/benchmarks.md.
//
// # Histograms
//
// The last label is the bucket index (decoded, then parsed like
// strconv.ParseUint(s, 0, 64); a bucket label that does not parse skips
// the histogram for that collection). The other labels make the series.
// With m = bucket_multiplier (1 when unset or 0), the buckets are:
//
//	exp2:     indexes i = bucket_min..bucket_max, upper bound 2^i * m
//	exp2zero: indexes i = bucket_min..bucket_max, upper bound 0 for i = 0,
//	          2^(i-1) * m otherwise (the BPF side puts 0 in bucket 0 and
//	          v > 0 in bucket floor(log2 v) + 1)
//	linear:   indexes i = bucket_min..bucket_max, upper bound i * m
//	fixed:    indexes k in bucket_keys (in order), upper bound k * m
//
// For exp2 this is ebpf_exporter's own convention: bucket floor(log2 v)
// holds [2^i, 2^(i+1)) but is exported with le = 2^i. Indexes missing from
// the map count zero; indexes outside the list are ignored (the BPF side
// clamps to bucket_max). The sum is the value at index bucket_max + 1
// (fixed: last bucket key + 1) times m, zero when absent. The count is the
// total of the listed buckets.
//
// # OpenTelemetry mapping
//
// Each config is one ScopeMetrics, scope name "ebpf_exporter/<config>"
// with scope attribute ebpf_exporter.config = <config>, so two configs
// never collide. Metric names, descriptions (help) and attribute names
// are the config's names, unchanged; attribute values are the decoded
// label strings. No unit is set.
//
//   - Counter: monotonic cumulative Sum, int values, start time = when the
//     config was loaded. perf_event_array counters count one per event
//     (the event's first label-sizes bytes are the key) and start over
//     every flush_interval (default 1h), with a new start time.
//   - Histogram: cumulative explicit-bucket Histogram with the upper
//     bounds above, per-bucket counts plus an empty overflow bucket (every
//     observation is in a finite bucket, as ebpf_exporter's +Inf bucket
//     equals the count), Count and Sum as above.
//   - Scope "ebpf_exporter": enabled_configs (gauge 1, attribute name) and
//     decoder_errors_total (monotonic Sum, attribute config), like
//     ebpf_exporter's own series.
//
// Through the collector's Prometheus exporter as config/ebpf_exporter.yaml
// sets it up (namespace "ebpf_exporter", translation_strategy
// UnderscoreEscapingWithoutSuffixes, without_scope_info), a metric <name>
// is served as ebpf_exporter_<name> exactly as ebpf_exporter serves it (a
// histogram as ebpf_exporter_<name>_bucket{le}, _sum and _count), with
// ebpf_exporter's labels and no otel_scope_* ones; enabled_configs and
// decoder_errors_total become ebpf_exporter_enabled_configs and
// ebpf_exporter_decoder_errors_total.
//
// # Decoders
//
// Package decoder. Output strings are byte for byte ebpf_exporter's:
//
//	uint          1/2/4/8 bytes, host order -> decimal ("unknown value length" error otherwise)
//	string        bytes up to the first NUL
//	hex           lowercase hex of the bytes
//	ksym          8-byte address -> symbol starting exactly there (/proc/kallsyms),
//	              else "unknown_addr:0x<hex>"; module symbols keep "name\t[module]"
//	kstack        8-byte addresses up to the first 0 -> symbols they fall in, "\n"-joined, "??" below all
//	syscall       decimal -> x86_64 or arm64 syscall name as ebpf_exporter's tables, else "unknown_syscall:<n>"
//	errno         decimal -> E* name (x/sys/unix), else "unknown:<n>"
//	cgroup        decimal cgroup id -> /sys/fs/cgroup/... path (cgroup v2 ids), else "unknown_cgroup_id:<id>"
//	static_map    value -> mapped value; unmapped: "unknown:<value>", or the value with allow_unknown;
//	              no map: "empty mapping"
//	regexp        value kept if any regexp matches, else the key is dropped
//	dname         DNS wire-format name -> dotted ("." for empty; returned as is when it overruns)
//	inet_ip       4 or 16 bytes -> address as Go's net.IP prints it
//	ifname        4-byte ifindex -> interface name, else "unknown:<idx>"
//	majorminor    4-byte new_encode_dev() number -> /proc/partitions name, else "unknown:<major>:<minor>"
//	pci_vendor    decimal -> vendor name from /usr/share/misc/pci.ids, else "unknown pci vendor: 0x<%02x>"
//	pci_device    decimal (vendor<<16|device) -> device name, else "unknown pci device: 0x<%04x>"
//	pci_class     decimal -> class name, else "unknown pci class: 0x<%02x>"
//	pci_subclass  decimal (class<<8|subclass) -> subclass name, else
//	              "unknown pci subclass: 0x<ss> (class 0x<cc>)" / "unknown pci class: 0x<cc>"
//
// Without /usr/share/misc/pci.ids the pci_* decoders print "missing pci.ids
// db", as ebpf_exporter does. kallsyms is re-read on a miss at most every
// 10s and the cgroup tree at most every second.
//
// # Attaching
//
// Package loader. cilium/ebpf loads the object (BTF maps, CO-RE, .rodata/.data, .kconfig)
// but does not attach; programs are attached from their section names as
// libbpf's auto-attach (and ebpf_exporter's perf_event/ and xdp/ handlers)
// would:
//
//	tracepoint/<cat>/<name>, tp/...        perf tracepoint
//	raw_tp/<name>, raw_tracepoint/<name>   raw tracepoint
//	tp_btf/<name>                          BTF tracepoint
//	fentry/, fexit/, fmod_ret/<func>       BPF trampoline
//	lsm/<hook>                             LSM
//	kprobe/<func>[+off], kretprobe/<func>  kprobe; ksyscall/<name> -> kprobe on <arch prefix><name>
//	uprobe/<bin>:<func>[+off], uretprobe/  uprobe; <bin> with a slash is used as is, a *.so* name is
//	                                       searched in LD_LIBRARY_PATH, /usr/lib64, /usr/lib and the
//	                                       multiarch dirs, other names in PATH, /usr/bin, /usr/sbin
//	perf_event/type=N,config=N,frequency=N perf event opened on every online CPU, all threads
//	xdp/<ifname>                           XDP on that interface
//
// Sections without a target ("kprobe", "tp", "uprobe", "xdp", "perf_event")
// are loaded but not attached, as libbpf does; "?"-prefixed sections are
// not loaded. kaddrs set const volatile u64 kaddr_<symbol> from
// /proc/kallsyms; maps pinned by name are pinned under /sys/fs/bpf.
//
// As in ebpf_exporter, a program that cannot be attached (or whose section
// names no target, which libbpf does not auto-attach) is logged with the
// section and the reason and reported by Programs, and the rest of its
// config runs. With Config.Strict the config fails instead, closed and
// reported with that reason (ebpf_exporter's --config.strict exits the
// whole exporter); the other configs keep running. A program the kernel
// refuses to load fails its config either way, as in ebpf_exporter.
// Kernels without CONFIG_KPROBES fail kprobes with that explanation;
// kernels refusing BPF trampolines fail fentry/fexit/fmod_ret with EPERM
// at load and that explanation.
//
// Not attachable here (ErrNotSupported): usdt/ sections (they need
// libbpf's USDT spec/argument machinery, which cilium/ebpf does not have;
// a uprobe on the probed function is the alternative), and program types
// that cannot be auto-attached (socket, tc, cgroup/*, sk_*, iter/,
// struct_ops, kprobe.multi, uprobe.multi, ...). Such programs are not
// loaded either: they would never run. Maps declared __weak (libbpf's
// <bpf/usdt.bpf.h> declares its two so) are read as libbpf reads them, as
// the object's own maps, which cilium/ebpf alone refuses.
//
// # Spans
//
// With a span sink (SetSpanSink), each tracing.spans ring buffer is read
// as it fills and every record becomes a span with ebpf_exporter's rules
// (package spans): the labels trace_id, parent_span_id, span_id,
// span_monotonic_timestamp_ns, span_duration_ns and span_name fill the
// span, the other labels become attributes, plus ebpf_exporter.config.
// Resource service.name is the span's service, else $OTEL_SERVICE_NAME,
// else "ebpf_exporter"; scope TracingScope. Spans are handed over in
// batches (at most 1024, or as soon as the ring buffer is empty).
// Records that do not decode are logged and counted (Stats.Spans and the
// config's decoder errors); spans the sink refuses are counted as dropped.
// Without a sink the ring buffers are loaded and left unread.
//
// The cgroup_id_map is filled at
// load and refreshed at every collection by walking the cgroup v2 tree,
// where ebpf_exporter follows cgroup creation with fanotify.
package ebpfexporter
