/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Shared helpers of the ready-to-use ebpf_exporter programs in this
 * directory. They need vmlinux.h and libbpf's bpf_helpers.h /
 * bpf_tracing.h / bpf_core_read.h on the include path (bpf/headers in this
 * repository; `make ebpf-programs` builds them).
 */
#ifndef PROGRAMS_BPF_H
#define PROGRAMS_BPF_H

#include "vmlinux.h"
#include "bpf_helpers.h"
#include "bpf_tracing.h"
#include "bpf_core_read.h"

/* add_u64 adds inc to the u64 at key, creating it at zero first. */
static __always_inline void add_u64(void *map, const void *key, u64 inc)
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

/* log2_u64 is floor(log2(v)), 0 for v == 0. */
static __always_inline u32 log2_u64(u64 v)
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

#endif
