/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * What differs between the two architectures the grpc receiver's programs
 * are built for (bpf2go -target amd64,arm64 defines __TARGET_ARCH_x86 or
 * __TARGET_ARCH_arm64; receiver/grpcreceiver/internal/capture/gen.go):
 *   - the system call numbers of the eight calls followed (hooks.h);
 *   - where a call's number and arguments are in the task's saved user
 *     registers, read at the call's exit (hooks.h): H2_SYS_*;
 *   - whether the running call is a 32-bit compat one (raw_sys skips it);
 *   - Go's register ABI (tls_go.h): H2_GO_*.
 * OpenSSL's uprobes use bpf_tracing.h's BPF_KPROBE, which knows both.
 *
 * bpf/headers/vmlinux.h is x86-64's. arm64's register structures are
 * declared here, only the fields read, with preserve_access_index: the
 * loader relocates every access against the running kernel's BTF (CO-RE),
 * where regs[31], sp, pc and pstate sit in an anonymous union of struct
 * pt_regs. The ___h2arm64 flavour keeps them apart from x86-64's struct
 * pt_regs and from bpf_tracing.h's own struct pt_regs___arm64.
 */
#ifndef H2_ARCH_H
#define H2_ARCH_H

#if defined(__TARGET_ARCH_x86)

/* x86-64 system call numbers (arch/x86/entry/syscalls/syscall_64.tbl). */
#define NR_READ 0
#define NR_WRITE 1
#define NR_READV 19
#define NR_WRITEV 20
#define NR_SENDTO 44
#define NR_RECVFROM 45
#define NR_SENDMSG 46
#define NR_RECVMSG 47

/* At the call's exit: the number in orig_ax, the arguments in di, si, dx,
 * r10 (the return value went to ax). regs: a struct pt_regs pointer. */
#define H2_SYS_NR(regs) BPF_CORE_READ(regs, orig_ax)
#define H2_SYS_ARG0(regs) BPF_CORE_READ(regs, di)
#define H2_SYS_ARG1(regs) BPF_CORE_READ(regs, si)
#define H2_SYS_ARG2(regs) BPF_CORE_READ(regs, dx)
#define H2_SYS_ARG3(regs) BPF_CORE_READ(regs, r10)
/* The number, from a BTF pointer (tp_btf's argument), read directly. */
#define H2_SYS_NR_BTF(regs) ((regs)->orig_ax)

/* thread_info.status: a 32-bit (ia32) system call is running. */
#define TS_COMPAT 0x0002

static __always_inline bool h2_compat_syscall(void)
{
#ifdef RING_NO_FETCH
	/* Linux 5.10: no bpf_get_current_task_btf (5.11). */
	struct task_struct *t = (void *)bpf_get_current_task();

	return BPF_CORE_READ(t, thread_info.status) & TS_COMPAT;
#else
	return bpf_get_current_task_btf()->thread_info.status & TS_COMPAT;
#endif
}

/* Go's amd64 register ABI: integer arguments and results in RAX, RBX, RCX,
 * ...; the goroutine (g) in R14. ctx: a uprobe's struct pt_regs. */
#define H2_GO_INT0(ctx) ((ctx)->ax)
#define H2_GO_INT1(ctx) ((ctx)->bx)
#define H2_GO_INT2(ctx) ((ctx)->cx)
#define H2_GO_G(ctx) ((ctx)->r14)

#elif defined(__TARGET_ARCH_arm64)

/* asm-generic system call numbers (include/uapi/asm-generic/unistd.h). */
#define NR_READ 63
#define NR_WRITE 64
#define NR_READV 65
#define NR_WRITEV 66
#define NR_SENDTO 206
#define NR_RECVFROM 207
#define NR_SENDMSG 211
#define NR_RECVMSG 212

/* What a uprobe's context is, and what bpf_tracing.h's arm64 macros cast to. */
struct user_pt_regs {
	__u64 regs[31];
	__u64 sp;
	__u64 pc;
	__u64 pstate;
} __attribute__((preserve_access_index));

struct pt_regs___h2arm64 {
	__u64 regs[31];
	__u64 orig_x0;
	__s32 syscallno;
} __attribute__((preserve_access_index));

struct thread_info___h2arm64 {
	unsigned long flags;
} __attribute__((preserve_access_index));

struct task_struct___h2arm64 {
	struct thread_info___h2arm64 thread_info;
} __attribute__((preserve_access_index));

/* At the call's exit: the number in syscallno, the arguments in x0..x5,
 * but x0 then holds the return value: the first argument is orig_x0. */
#define H2_ARM64_REGS(regs) ((struct pt_regs___h2arm64 *)(regs))
#define H2_SYS_NR(regs) BPF_CORE_READ(H2_ARM64_REGS(regs), syscallno)
#define H2_SYS_ARG0(regs) BPF_CORE_READ(H2_ARM64_REGS(regs), orig_x0)
#define H2_SYS_ARG1(regs) BPF_CORE_READ(H2_ARM64_REGS(regs), regs[1])
#define H2_SYS_ARG2(regs) BPF_CORE_READ(H2_ARM64_REGS(regs), regs[2])
#define H2_SYS_ARG3(regs) BPF_CORE_READ(H2_ARM64_REGS(regs), regs[3])
#define H2_SYS_NR_BTF(regs) (H2_ARM64_REGS(regs)->syscallno)

/* thread_info.flags: TIF_32BIT, an AArch32 task (its calls are numbered
 * as 32-bit ARM's: 63 is dup2 there). */
#define TIF_32BIT 22

static __always_inline bool h2_compat_syscall(void)
{
#ifdef RING_NO_FETCH
	struct task_struct___h2arm64 *t = (void *)bpf_get_current_task();

	return BPF_CORE_READ(t, thread_info.flags) & (1UL << TIF_32BIT);
#else
	struct task_struct___h2arm64 *t = (void *)bpf_get_current_task_btf();

	return t->thread_info.flags & (1UL << TIF_32BIT);
#endif
}

/* Go's arm64 register ABI: integer arguments and results in R0, R1, R2,
 * ...; the goroutine (g) in R28. */
#define H2_GO_INT0(ctx) (((struct user_pt_regs *)(ctx))->regs[0])
#define H2_GO_INT1(ctx) (((struct user_pt_regs *)(ctx))->regs[1])
#define H2_GO_INT2(ctx) (((struct user_pt_regs *)(ctx))->regs[2])
#define H2_GO_G(ctx) (((struct user_pt_regs *)(ctx))->regs[28])

#else
#error "bpf/h2: build with -D__TARGET_ARCH_x86 or -D__TARGET_ARCH_arm64 (bpf2go -target amd64,arm64)"
#endif

#endif /* H2_ARCH_H */
