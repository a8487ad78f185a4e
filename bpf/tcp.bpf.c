//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tcp.bpf.c follows the TCP connections that watched processes open (the
// kubelet's httpGet and tcpSocket probes) through their state changes:
// connect (SYN_SENT), ESTABLISHED, the closing states and CLOSE, each with
// its kernel time. It uses the BTF-enabled raw tracepoint (tp_btf)
// sock/inet_sock_set_state, so tracefs is not needed.
//
// A socket is followed when a process in watched_tgids moves it to
// SYN_SENT (in connect(), so current is the connecting thread). Later
// transitions are reported whatever context they fire in: most of them run
// in softirq, where current is whichever task the packet interrupted. Each
// record therefore names the connecting thread (hdr.pid/tgid) from the
// conns map, and current separately.
//
// Wire format: every record starts with struct event_header, whose first 20
// bytes (type, pid, boot_ns, tgid) sit where process.bpf.c's do; the Go side
// (collector.DecodeTCPStateChange) reads records by the offsets bpf2go
// generates from these structs, so change them together and run
// `make generate`.

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6

enum event_type {
	EVENT_TCP_STATE = 16, // apart from process.bpf.c's types
};

struct event_header {
	u32 type;    // enum event_type
	u32 pid;     // thread that called connect() (not current)
	u64 boot_ns; // bpf_ktime_get_boot_ns() at the transition: CLOCK_BOOTTIME
	u32 tgid;    // process that called connect()
	u32 _pad;
};

// state_event is one state change of a followed socket.
struct state_event {
	struct event_header hdr;
	u64 cookie;   // socket cookie: the connection's key, never reused
	u64 start_ns; // boot ns of the transition to SYN_SENT (connect)
	u32 cur_pid;  // current at the transition: in softirq, an unrelated task
	u32 cur_tgid;
	u16 family;   // AF_INET or AF_INET6
	u16 sport;    // host byte order; 0 at SYN_SENT unless bound: the port is picked after
	u16 dport;    // host byte order
	u8 oldstate;  // TCP_ESTABLISHED (1) ... TCP_CLOSING (11), as in the kernel
	u8 newstate;
	s32 sk_err;   // sk->sk_err: ECONNREFUSED, ETIMEDOUT, ECONNRESET... when CLOSE is an error
	u32 _pad;
	u8 saddr[16]; // AF_INET: the first 4 bytes; network byte order
	u8 daddr[16];
};

// Force BTF for the event types so bpf2go -type can generate Go structs.
const struct state_event *unused_state __attribute__((unused));
const enum event_type *unused_type __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); // 1 MiB; Go may resize before load
} events SEC(".maps");

// watched_tgids: the processes whose connections are followed (userspace
// fills it; the value is unused).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, u32);
	__type(value, u8);
} watched_tgids SEC(".maps");

struct conn {
	u64 cookie;
	u64 start_ns;
	u32 pid;
	u32 tgid;
};

// conns: the followed sockets, by struct sock address, until CLOSE. An LRU
// so that sockets whose CLOSE is never seen cannot fill it.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, u64);
	__type(value, struct conn);
} conns SEC(".maps");

// drops[cpu]: records lost because the ring buffer was full.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} drops SEC(".maps");

#include "ringbuf.h"
// The PID namespace watched_tgids are numbered in (readyline's own, by the
// device and inode of /proc/self/ns/pid); 0: the initial namespace.
volatile const u64 pidns_dev = 0;
volatile const u64 pidns_ino = 0;

// current_tgid is the connecting process as the watch list numbers it.
static __always_inline u32 current_tgid(void)
{
	if (pidns_ino) {
		struct bpf_pidns_info ns = {};
		if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)))
			return 0; // not visible in readyline's namespace
		return ns.tgid;
	}
	return bpf_get_current_pid_tgid() >> 32;
}



static __always_inline void report(const struct sock *sk, const struct conn *c, int oldstate, int newstate)
{
	struct state_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(&drops);
		return;
	}
	u64 cur = bpf_get_current_pid_tgid();
	e->hdr.type = EVENT_TCP_STATE;
	e->hdr.pid = c->pid;
	e->hdr.boot_ns = bpf_ktime_get_boot_ns();
	e->hdr.tgid = c->tgid;
	e->hdr._pad = 0;
	e->cookie = c->cookie;
	e->start_ns = c->start_ns;
	e->cur_pid = (u32)cur;
	e->cur_tgid = cur >> 32;
	// tp_btf arguments are BTF pointers: plain loads (CO-RE relocated),
	// far cheaper than bpf_probe_read_kernel, fault-safe all the same.
	const struct sock_common *skc = &sk->__sk_common;
	e->family = skc->skc_family;
	// inet_sport, not skc_num: at CLOSE the port is released (skc_num = 0)
	// before the tracepoint fires, but inet_sport is left alone. inet_sock
	// extends sock, which the verifier knows sk as: read it the slow way.
	e->sport = bpf_ntohs(BPF_CORE_READ((struct inet_sock *)sk, inet_sport));
	e->dport = bpf_ntohs(skc->skc_dport);
	e->oldstate = oldstate;
	e->newstate = newstate;
	e->sk_err = sk->sk_err;
	e->_pad = 0;
	if (e->family == AF_INET6) {
		__builtin_memcpy(e->saddr, skc->skc_v6_rcv_saddr.in6_u.u6_addr8, sizeof(e->saddr));
		__builtin_memcpy(e->daddr, skc->skc_v6_daddr.in6_u.u6_addr8, sizeof(e->daddr));
	} else {
		__builtin_memset(e->saddr, 0, sizeof(e->saddr));
		__builtin_memset(e->daddr, 0, sizeof(e->daddr));
		*(u32 *)e->saddr = skc->skc_rcv_saddr;
		*(u32 *)e->daddr = skc->skc_daddr;
	}
	bpf_ringbuf_submit(e, submit_flags(&events));
}

// handle_set_state runs for every TCP state change on the node, so its path
// for an unfollowed socket is one hash lookup (or two, at connect).
SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(handle_set_state, const struct sock *sk, int oldstate, int newstate)
{
	u64 key = (u64)sk;

	if (newstate == TCP_SYN_SENT) {
		// A (re)connect starts a new connection on this socket.
		u32 watched = current_tgid();
		u32 tgid = bpf_get_current_pid_tgid() >> 32;
		if (!watched || !bpf_map_lookup_elem(&watched_tgids, &watched) ||
		    sk->sk_protocol != IPPROTO_TCP)
			return 0; // a stale entry for sk fails the cookie check below
		struct conn c = {
			.cookie = bpf_get_socket_cookie((void *)sk),
			.start_ns = bpf_ktime_get_boot_ns(),
			.pid = (u32)bpf_get_current_pid_tgid(),
			.tgid = tgid,
		};
		bpf_map_update_elem(&conns, &key, &c, BPF_ANY);
		report(sk, &c, oldstate, newstate);
		return 0;
	}

	struct conn *c = bpf_map_lookup_elem(&conns, &key);
	if (!c)
		return 0;
	// The address of a freed socket can come back as another one; the
	// cookie (never reused) tells them apart.
	if (c->cookie != bpf_get_socket_cookie((void *)sk)) {
		bpf_map_delete_elem(&conns, &key);
		return 0;
	}
	struct conn copy = *c; // c may go away once deleted
	if (newstate == TCP_CLOSE)
		bpf_map_delete_elem(&conns, &key);
	report(sk, &copy, oldstate, newstate);
	return 0;
}
