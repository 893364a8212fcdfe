/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * A perf_event_array counter (ebpfx_getppid_events_total: every getppid
 * sends its pid and thread name) and a perf_event/ sampling program
 * (ebpfx_cpu_clock_samples_total{cpu}: software cpu-clock at 99 Hz).
 */
#include "ebpfx.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} ebpfx_getppid_events_total SEC(".maps");

struct getppid_event {
	u32 pid;
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} ebpfx_cpu_clock_samples_total SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_getppid")
int ebpfx_getppid_event(void *ctx)
{
	struct getppid_event ev = {};
	ev.pid = ebpfx_tgid();
	bpf_get_current_comm(&ev.comm, sizeof(ev.comm));
	bpf_perf_event_output(ctx, &ebpfx_getppid_events_total, BPF_F_CURRENT_CPU, &ev, sizeof(ev));
	return 0;
}

/* PERF_TYPE_SOFTWARE (1), PERF_COUNT_SW_CPU_CLOCK (0), 99 samples/s. */
SEC("perf_event/type=1,config=0,frequency=99")
int ebpfx_cpu_clock(struct bpf_perf_event_data *ctx)
{
	u32 zero = 0;
	u64 *v = bpf_map_lookup_elem(&ebpfx_cpu_clock_samples_total, &zero);
	if (v)
		*v += 1;
	return 0;
}
