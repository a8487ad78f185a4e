//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// goprobe.bpf.c times calls of Go functions in another process (the
// kubelet's CRI client) and reads their arguments and results under the Go
// register ABI (ABIInternal, amd64 or arm64: goabi.h). One generic program
// pair serves every probed function: the attach cookie names the function,
// and a per-function spec (filled by userspace) says which registers hold
// what.
//
// Entry probes save the arguments per goroutine; return probes sit on every
// RET instruction of the function (never uretprobes: they rewrite the return
// address on the goroutine stack, which Go moves) and emit one record per
// call with start, end, arguments, results and whether an error was
// returned.

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "goabi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define MAX_FUNCS 32
#define STR_LEN 256   // a power of two: the verifier bound relies on it
#define CMD_ARGS 6
#define CMD_ARG_LEN 64 // a power of two
#define NO_REG 0xff

enum go_call_event_type {
	EVENT_GO_CALL = 16,
};

// How to read a string through a pointer argument.
enum deref_kind {
	DEREF_NONE = 0,
	DEREF_STRING = 1,    // the string at *(reg + off1)
	DEREF_PTR_STRING = 2, // the string at *(*(reg + off1) + off2)
};

struct deref_spec {
	u8 reg;
	u8 kind;
	u16 _pad;
	u32 off1;
	u32 off2;
};

// func_spec describes one probed function's interesting registers, each by
// its index in the Go ABI's integer register sequence (goabi.h), < GO_REGS.
struct func_spec {
	u8 str_arg;   // register of a string argument (ptr, len), or NO_REG
	u8 slice_arg; // register of a []string argument (ptr, len, cap), or NO_REG
	u8 ret_str;   // register of a string result, or NO_REG
	u8 ret_err;   // register of the error result's itab word, or NO_REG
	u32 _pad;
	struct deref_spec deref[2];
};

// The arguments saved at entry, per goroutine and function.
struct go_call_args {
	u64 start_ns;
	u32 entry_tid; // the thread of the entry (the return's may differ)
	u32 str_len, deref_len[2], cmd_n; // full Go lengths (a longer string was cut)
	char str[STR_LEN];
	char deref[2][STR_LEN];
	char cmd[CMD_ARGS][CMD_ARG_LEN];
};

struct go_call_event {
	u32 type; // EVENT_GO_CALL
	u32 pid;  // thread of the return
	u64 boot_ns; // return time, CLOCK_BOOTTIME
	u32 tgid;
	u32 func;     // function id (cookie)
	u64 goroutine; // runtime.g pointer (R14 on amd64, R28 on arm64)
	u8 has_entry; // the entry was seen: args and start_ns are valid
	u8 err;       // a non-nil error was returned
	u8 _pad[2];
	u32 ret_len;
	char ret[STR_LEN];
	struct go_call_args args;
};

const struct go_call_event *unused_go_call_event __attribute__((unused));
const struct func_spec *unused_func_spec __attribute__((unused));
const enum go_call_event_type *unused_go_call_event_type __attribute__((unused));
const enum deref_kind *unused_deref_kind __attribute__((unused));

struct call_key {
	u64 goroutine;
	u32 tgid;
	u32 func;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_FUNCS);
	__type(key, u32);
	__type(value, struct func_spec);
} func_specs SEC(".maps");

// Calls in flight. LRU: a call whose return was never seen (a panic) ages out.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct call_key);
	__type(value, struct go_call_args);
} calls SEC(".maps");

// Scratch space: go_call_args is too big for the 512-byte BPF stack.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct go_call_args);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 21);
} go_events SEC(".maps");

// go_counters[cpu]: 0 records lost (ring buffer full), 1 entries, 2 returns
// (of probed functions), 3 returns without a saved entry, 4 calls saved in a
// key of their own (not a stack-growth re-entry, not over an earlier call
// that never returned). With the calls the map holds, user space tells the
// saved calls the LRU pushed out (a loss) from the returns of calls under
// way before the probes attached (none: no start readyline watched).
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 5);
	__type(key, u32);
	__type(value, u64);
} go_counters SEC(".maps");

#include "ringbuf.h"

// All zeroes, to clear buffers too big for an inline memset.
const volatile struct go_call_args zero_args = {};

// A second entry of the same call within this long is the stack-growth
// path (morestack jumps back to the entry): keep the first start.
#define REENTRY_NS 1000000ULL

static __always_inline void bump(u32 idx)
{
	u64 *v = bpf_map_lookup_elem(&go_counters, &idx);
	if (v)
		__sync_fetch_and_add(v, 1);
}

static __always_inline u64 go_reg(const struct go_regs *g, u32 i)
{
	return g->r[i & 15];
}

static __always_inline u32 read_go_string(char *dst, u64 ptr, u64 len)
{
	if (!ptr || !len)
		return 0;
	u64 n = len < STR_LEN - 1 ? len : STR_LEN - 1;
	n &= STR_LEN - 1;
	bpf_probe_read_user(dst, n, (void *)ptr);
	return len > 0xffffffff ? 0xffffffff : (u32)len;
}

struct go_string {
	u64 ptr;
	u64 len;
};

static __always_inline u32 read_deref(const struct go_regs *g, const struct deref_spec *d, char *dst)
{
	if (d->kind == DEREF_NONE || d->reg >= GO_REGS)
		return 0;
	u64 p = go_reg(g, d->reg);
	if (!p)
		return 0;
	if (d->kind == DEREF_PTR_STRING) {
		u64 inner = 0;
		if (bpf_probe_read_user(&inner, sizeof(inner), (void *)(p + d->off1)) || !inner)
			return 0;
		p = inner + d->off2;
	} else {
		p += d->off1;
	}
	struct go_string s = {};
	if (bpf_probe_read_user(&s, sizeof(s), (void *)p))
		return 0;
	return read_go_string(dst, s.ptr, s.len);
}

static __always_inline int on_entry(struct pt_regs *ctx, u32 func)
{
	bump(1);
	struct func_spec *spec = bpf_map_lookup_elem(&func_specs, &func);
	if (!spec)
		return 0;
	struct call_key key = {
		.goroutine = go_goroutine(ctx),
		.tgid = bpf_get_current_pid_tgid() >> 32,
		.func = func,
	};
	u64 now = bpf_ktime_get_boot_ns();
	struct go_call_args *old = bpf_map_lookup_elem(&calls, &key);
	if (old && now - old->start_ns < REENTRY_NS)
		return 0; // the stack-growth re-entry of a call already saved

	u32 zero = 0;
	struct go_call_args *a = bpf_map_lookup_elem(&scratch, &zero);
	if (!a)
		return 0;
	struct go_regs g;
	load_regs(ctx, &g);
	bpf_probe_read_kernel(a, sizeof(*a), (void *)&zero_args);
	a->start_ns = now;
	a->entry_tid = (u32)bpf_get_current_pid_tgid();
	if (spec->str_arg < GO_REGS)
		a->str_len = read_go_string(a->str, go_reg(&g, spec->str_arg), go_reg(&g, spec->str_arg + 1));
	a->deref_len[0] = read_deref(&g, &spec->deref[0], a->deref[0]);
	a->deref_len[1] = read_deref(&g, &spec->deref[1], a->deref[1]);
	if (spec->slice_arg < GO_REGS) {
		u64 base = go_reg(&g, spec->slice_arg);
		u64 n = go_reg(&g, spec->slice_arg + 1);
		a->cmd_n = n > 0xffffffff ? 0xffffffff : (u32)n;
		for (int i = 0; i < CMD_ARGS; i++) {
			if (!base || i >= n)
				break;
			struct go_string s = {};
			if (bpf_probe_read_user(&s, sizeof(s), (void *)(base + i * sizeof(s))))
				break;
			u64 l = s.len < CMD_ARG_LEN - 1 ? s.len : CMD_ARG_LEN - 1;
			l &= CMD_ARG_LEN - 1;
			if (s.ptr && l)
				bpf_probe_read_user(a->cmd[i], l, (void *)s.ptr);
		}
	}
	bpf_map_update_elem(&calls, &key, a, BPF_ANY);
	if (!old)
		bump(4); // saved, or lost if the update failed: a loss either way once gone
	return 0;
}

static __always_inline int on_return(struct pt_regs *ctx, u32 func)
{
	struct func_spec *spec = bpf_map_lookup_elem(&func_specs, &func);
	if (!spec)
		return 0;
	bump(2);
	u64 id = bpf_get_current_pid_tgid();
	struct call_key key = {.goroutine = go_goroutine(ctx), .tgid = id >> 32, .func = func};
	struct go_call_event *e = bpf_ringbuf_reserve(&go_events, sizeof(*e), 0);
	if (!e) {
		bump(0);
		bpf_map_delete_elem(&calls, &key);
		return 0;
	}
	e->type = EVENT_GO_CALL;
	e->pid = (u32)id;
	e->boot_ns = bpf_ktime_get_boot_ns();
	e->tgid = id >> 32;
	e->func = func;
	e->goroutine = go_goroutine(ctx);
	e->err = 0;
	e->ret_len = 0;
	e->ret[0] = 0;
	__builtin_memset(e->_pad, 0, sizeof(e->_pad));
	struct go_call_args *a = bpf_map_lookup_elem(&calls, &key);
	if (a) {
		e->has_entry = 1;
		bpf_probe_read_kernel(&e->args, sizeof(e->args), a);
		bpf_map_delete_elem(&calls, &key);
	} else {
		e->has_entry = 0;
		bump(3);
		bpf_probe_read_kernel(&e->args, sizeof(e->args), (void *)&zero_args);
	}
	struct go_regs g;
	load_regs(ctx, &g);
	if (spec->ret_str < GO_REGS)
		e->ret_len = read_go_string(e->ret, go_reg(&g, spec->ret_str), go_reg(&g, spec->ret_str + 1));
	if (spec->ret_err < GO_REGS)
		e->err = go_reg(&g, spec->ret_err) != 0; // a nil interface has a nil type word
	bpf_ringbuf_submit(e, submit_flags(&go_events));
	return 0;
}

// Cookie: bits 0-15 the function id, bit 16 set on return probes.
#define COOKIE_RETURN (1 << 16)

static __always_inline int dispatch(struct pt_regs *ctx)
{
	u64 cookie = bpf_get_attach_cookie(ctx);
	u32 func = cookie & 0xffff;
	if (func >= MAX_FUNCS)
		return 0;
	if (cookie & COOKIE_RETURN)
		return on_return(ctx, func);
	return on_entry(ctx, func);
}

// ctx holds the probed thread's user registers: x86's struct pt_regs, or
// arm64's user_pt_regs (the type named here is vmlinux.h's x86 one, but
// only goabi.h reads through it, and on arm64 as its own struct).

// uprobe_multi (Linux 6.6+): one link for every address, no CAP_SYS_ADMIN.
SEC("uprobe.multi")
int go_call_multi(struct pt_regs *ctx) { return dispatch(ctx); }

// Classic perf-event uprobes, one link per address (needs CAP_SYS_ADMIN).
SEC("uprobe")
int go_call(struct pt_regs *ctx) { return dispatch(ctx); }
