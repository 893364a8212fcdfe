/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Helpers shared by the ebpf_exporter-format test fixtures in this
 * directory. Built by `make ebpf-programs` against bpf/headers.
 */
#ifndef EBPFX_BPF_H
#define EBPFX_BPF_H

#include "vmlinux.h"
#include "bpf_helpers.h"
#include "bpf_tracing.h"
#include "bpf_core_read.h"
#include "bpf_endian.h"

/* The syscall numbers the fixtures filter on, and the entry point of
 * getpriority the kprobe and fentry fixtures attach to: each architecture's
 * (make ebpf-programs builds every fixture for x86_64 and for arm64). */
#if defined(__TARGET_ARCH_arm64)
/* asm-generic numbers (include/uapi/asm-generic/unistd.h). */
#define EBPFX_NR_GETPPID 173
#define EBPFX_NR_GETPGID 155
#define EBPFX_NR_GETSID 156
#define EBPFX_NR_CLOCK_NANOSLEEP 115
#define EBPFX_SYS_GETPRIORITY "__arm64_sys_getpriority"
#elif defined(__TARGET_ARCH_x86)
#define EBPFX_NR_GETPPID 110
#define EBPFX_NR_GETPGID 121
#define EBPFX_NR_GETSID 124
#define EBPFX_NR_CLOCK_NANOSLEEP 230
#define EBPFX_SYS_GETPRIORITY "__x64_sys_getpriority"
#else
#error "build with -D__TARGET_ARCH_x86 or -D__TARGET_ARCH_arm64 (make ebpf-programs)"
#endif

/* ebpfx_add adds inc to the u64 at key, creating it at zero first. */
static __always_inline void ebpfx_add(void *map, const void *key, u64 inc)
{
	u64 *v = bpf_map_lookup_elem(map, key);
	if (!v) {
		u64 zero = 0;
		bpf_map_update_elem(map, key, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(map, key);
		if (!v)
			return;
	}
	__sync_fetch_and_add(v, inc);
}

/* ebpfx_log2 is floor(log2(v)), 0 for v == 0. */
static __always_inline u32 ebpfx_log2(u64 v)
{
	u32 r = 0;
	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r;
}

static __always_inline u32 ebpfx_tgid(void)
{
	return bpf_get_current_pid_tgid() >> 32;
}

#endif
