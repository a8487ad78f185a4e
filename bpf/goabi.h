// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// goabi.h: where Go's register calling convention (ABIInternal, see
// $GOROOT/src/cmd/compile/abi-internal.md) leaves a function's integer
// arguments and results, and the running goroutine, in a uprobe's saved
// registers, for the arch bpf2go compiles for: it passes
// -D__TARGET_ARCH_x86 for -target amd64 and -D__TARGET_ARCH_arm64 for arm64.
//
// Userspace names a register by its index in the arch's sequence of integer
// argument registers (a func_spec's fields). Go assigns arguments and
// results to that sequence by the same algorithm on every arch, and only
// the sequence's length differs: an index below amd64's 9 means the same
// argument or result on amd64 and arm64.

#ifndef READYLINE_GOABI_H
#define READYLINE_GOABI_H

// go_regs holds the integer argument registers, copied out of the ctx in
// sequence order: the verifier refuses a ctx pointer moved by a computed
// offset, so the registers are read at constant offsets first.
struct go_regs {
	u64 r[16];
};

#if defined(__TARGET_ARCH_x86)

// RAX RBX RCX RDI RSI R8 R9 R10 R11; the goroutine (runtime.g) in R14.
#define GO_REGS 9

// x86's struct pt_regs comes from vmlinux.h (read through CO-RE, as the
// uprobe's ctx is the kernel's pt_regs).
static __always_inline void load_regs(struct pt_regs *ctx, struct go_regs *g)
{
	g->r[0] = ctx->ax;
	g->r[1] = ctx->bx;
	g->r[2] = ctx->cx;
	g->r[3] = ctx->di;
	g->r[4] = ctx->si;
	g->r[5] = ctx->r8;
	g->r[6] = ctx->r9;
	g->r[7] = ctx->r10;
	g->r[8] = ctx->r11;
}

static __always_inline u64 go_goroutine(struct pt_regs *ctx)
{
	return ctx->r14;
}

#elif defined(__TARGET_ARCH_arm64)

// R0-R15; the goroutine (runtime.g) in R28.
#define GO_REGS 16
#define GO_G_REG 28

// A uprobe's ctx on arm64 is struct user_pt_regs (the kernel's
// bpf_user_pt_regs_t; its struct pt_regs begins with one). It is UAPI
// (arch/arm64/include/uapi/asm/ptrace.h), so its layout cannot change:
// declared here, after vmlinux.h's CO-RE pragma has ended, it is read at
// fixed offsets with no relocation, and no arm64 vmlinux.h is needed. Named
// apart from the kernel's so an arm64 vmlinux.h would not clash.
struct go_arm64_regs {
	u64 regs[31];
	u64 sp;
	u64 pc;
	u64 pstate;
};

static __always_inline void load_regs(struct pt_regs *ctx, struct go_regs *g)
{
	const struct go_arm64_regs *regs = (const void *)ctx;
#pragma unroll
	for (int i = 0; i < GO_REGS; i++)
		g->r[i] = regs->regs[i];
}

static __always_inline u64 go_goroutine(struct pt_regs *ctx)
{
	return ((const struct go_arm64_regs *)(const void *)ctx)->regs[GO_G_REG];
}

#else
#error "goabi.h: no Go register ABI for this target: build with bpf2go -target amd64 or arm64"
#endif

#endif
