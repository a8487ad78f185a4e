//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// process.bpf.c reports process lifecycle events: exec, fork (processes, not
// threads) and exit (once per process, when its whole thread group is dead).
// It uses BTF-enabled raw tracepoints (tp_btf), so tracefs is not needed.
//
// Wire format: every record starts with struct event_header; the Go side
// (collector.DecodeProcessEvent) reads records by the offsets bpf2go generates
// from these structs, so change them together and run `make generate`.

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define COMM_LEN 16
#define FILENAME_LEN 256
#define ARGV_LEN 512 // power of two: the verifier bound below relies on it
#define CGROUP_LEVELS 4
#define CGROUP_NAME_LEN 128
#define ENV_MAX 16384  // power of two: the verifier bounds rely on it
#define CNI_ID_LEN 72
#define CNI_CMD_LEN 8
#define CNI_DIRS 3
#define CNI_DIR_LEN 32

enum event_type {
	EVENT_EXEC = 1,
	EVENT_EXIT = 2,
	EVENT_FORK = 3,
	EVENT_CGROUP_NAME = 4,
};

struct event_header {
	u32 type;      // enum event_type
	u32 pid;       // thread id of the task that caused the event (task->pid)
	u64 boot_ns;   // bpf_ktime_get_boot_ns(): CLOCK_BOOTTIME
	u32 tgid;      // process id
	u32 ppid;      // real_parent->tgid
	u64 cgroup_id; // cgroup v2 (unified hierarchy) id of the task (not of current)
	char comm[COMM_LEN];
};

struct exec_event {
	struct event_header hdr;
	u32 argv_len;      // bytes copied into argv (NUL separated)
	u32 argv_full_len; // arg_end - arg_start: > argv_len means truncated
	char filename[FILENAME_LEN];
	char argv[ARGV_LEN];
	// For a CNI plugin (a program in one of cni_dirs): the values of
	// CNI_CONTAINERID (the sandbox it works for) and CNI_COMMAND, read from
	// its environment (libcni puts them anywhere: it dedups through a map).
	// No other variable leaves the kernel.
	char cni_containerid[CNI_ID_LEN];
	char cni_command[CNI_CMD_LEN];
};

struct exit_event {
	struct event_header hdr;
	u32 exit_code; // task->exit_code: (status << 8) | signal | 0x80 on core dump
	u32 _pad;
};

struct fork_event {
	struct event_header hdr; // the child: pid == tgid, ppid is the parent
};

// cgroup_event names a cgroup the first time one of its tasks execs or
// forks, before the event itself: a container's cgroup is often removed
// before userspace could look its id up.
struct cgroup_event {
	struct event_header hdr; // hdr.cgroup_id is the cgroup named
	u32 level;               // depth below the root (the root is 0)
	u32 _pad;
	// names[0] is the cgroup's own directory name, names[1] its parent's...
	// up to CGROUP_LEVELS or the root.
	char names[CGROUP_LEVELS][CGROUP_NAME_LEN];
};

// Force BTF for the event types so bpf2go -type can generate Go structs.
const struct exec_event *unused_exec __attribute__((unused));
const struct exit_event *unused_exit __attribute__((unused));
const struct fork_event *unused_fork __attribute__((unused));
const struct cgroup_event *unused_cgroup __attribute__((unused));
const enum event_type *unused_type __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); // 4 MiB; Go may resize before load
} events SEC(".maps");

// Cgroups already named to userspace (an LRU: a forgotten one is named again).
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, u64);
	__type(value, u8);
} named_cgroups SEC(".maps");

// Scratch space for a CNI plugin's environment (its last ENV_MAX bytes).
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, char[ENV_MAX]);
} env_scratch SEC(".maps");

// drops[cpu]: records lost because the ring buffer was full.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} drops SEC(".maps");

// Set by the loader before load (read-only data, known to the verifier).
volatile const bool exit_has_group_dead = false; // 6.16+: sched_process_exit(p, group_dead)
volatile const bool capture_argv = true;
// readyline's own PID namespace, by inode number; 0 for the initial one.
// When set (a DaemonSet pod on a kind node, whose hostPID is the node
// container's namespace), pids are reported as seen there, and tasks not
// visible there (other nodes, the host) are not reported at all.
volatile const u32 pidns_inum = 0;
#define MAX_PIDNS_LEVEL 8
// How many PID namespaces below readyline's a task reported may be: 1, as
// a node's containers each have a namespace of their own. Deeper ones are
// another node's (a kind node's pods, seen from the host) or a container's
// own containers, and are not followed.
volatile const u32 max_pidns_depth = 0xffffffff;

// Directories of CNI plugins (with a trailing slash); set by the loader.
volatile const char cni_dirs[CNI_DIRS][CNI_DIR_LEN] = {};
// pods_only: report only what a pod start is made of, the processes of
// pods (a task whose cgroup, or an ancestor of it, has "kubepods" in its
// name) and CNI plugins with what they fork; set by the loader for the
// daemon. The node's other processes (the runtime's runc and shims, the
// kubelet's helpers, everything else) are left out here rather than
// decoded and dropped in user space: on a node probed by exec, most of
// the fork/exec/exit events are theirs.
volatile const bool pods_only = false;
#include "ringbuf.h"

#define VERDICT_DROP 1
#define VERDICT_KEEP 2
#define CGROUP_WALK 16 // levels looked at above a task's cgroup
#define KN_NAME_LEN 64 // of a cgroup's name, looked at for "kubepods"

// cgroup_verdicts[cgroup id]: whether tasks there are reported (pods_only).
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, u64);
	__type(value, u8);
} cgroup_verdicts SEC(".maps");

// cni_tasks[tgid]: CNI plugins and the processes they fork, reported
// wherever their cgroup is (pods_only); an entry goes with the exit.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, u8);
} cni_tasks SEC(".maps");

// filtered[cpu]: events left out by pods_only.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} filtered SEC(".maps");



// kernfs_node.parent became __parent in 6.15: both through CO-RE.
struct kernfs_node___old {
	struct kernfs_node *parent;
} __attribute__((preserve_access_index));

static __always_inline struct kernfs_node *kn_parent(struct kernfs_node *kn)
{
	if (bpf_core_field_exists(kn->__parent))
		return BPF_CORE_READ(kn, __parent);
	return BPF_CORE_READ((struct kernfs_node___old *)kn, parent);
}

// cgroup_walk is the state of cgroup_kept's walk up a cgroup's ancestors.
struct cgroup_walk {
	struct kernfs_node *kn; // the next to look at; NULL above the root
	bool kept;
	char name[KN_NAME_LEN];
};

// walk_level looks at one cgroup of the walk: kept when its name contains
// "kubepods" (kubepods.slice, kind's kubelet-kubepods-...-pod<uid>.slice,
// cgroupfs' kubepods), as user space's ParseCgroupPath asks of a pod's
// path. A bpf_loop callback: the verifier checks it once, not once per level.
static long walk_level(u32 level, struct cgroup_walk *w)
{
	struct kernfs_node *kn = w->kn; // CO-RE reads relocate from a kernel type
	if (!kn || bpf_probe_read_kernel_str(w->name, sizeof(w->name), BPF_CORE_READ(kn, name)) < 0)
		return 1;
	for (int i = 0; i + 8 <= KN_NAME_LEN; i++) {
		const char *c = &w->name[i];
		if (c[0] == 0)
			break;
		if (c[0] == 'k' && c[1] == 'u' && c[2] == 'b' && c[3] == 'e' &&
		    c[4] == 'p' && c[5] == 'o' && c[6] == 'd' && c[7] == 's') {
			w->kept = true;
			return 1;
		}
	}
	w->kn = kn_parent(kn);
	return 0;
}

// cgroup_kept: tasks in task's cgroup are reported under pods_only, the
// verdict cached per cgroup (ids are never reused).
static __always_inline bool cgroup_kept(struct task_struct *task)
{
	struct kernfs_node *kn = BPF_CORE_READ(task, cgroups, dfl_cgrp, kn);
	u64 id = BPF_CORE_READ(kn, id);
	u8 *cached = bpf_map_lookup_elem(&cgroup_verdicts, &id);
	if (cached)
		return *cached == VERDICT_KEEP;
	struct cgroup_walk w = {.kn = kn};
	bpf_loop(CGROUP_WALK, walk_level, &w, 0);
	u8 verdict = w.kept ? VERDICT_KEEP : VERDICT_DROP;
	bpf_map_update_elem(&cgroup_verdicts, &id, &verdict, BPF_ANY);
	return w.kept;
}

// cni_task: task is a CNI plugin's process (cni_tasks).
static __always_inline bool cni_task(struct task_struct *task)
{
	u32 tgid = BPF_CORE_READ(task, tgid);
	return bpf_map_lookup_elem(&cni_tasks, &tgid) != NULL;
}

// forget_cni_task removes task from cni_tasks; it returns whether it was there.
static __always_inline bool forget_cni_task(struct task_struct *task)
{
	u32 tgid = BPF_CORE_READ(task, tgid);
	return bpf_map_delete_elem(&cni_tasks, &tgid) == 0;
}

static __always_inline void mark_cni_task(struct task_struct *task)
{
	u32 tgid = BPF_CORE_READ(task, tgid);
	u8 one = 1;
	bpf_map_update_elem(&cni_tasks, &tgid, &one, BPF_ANY);
}

// left_out counts an event pods_only leaves out; it returns 0 for the
// program to return.
static __always_inline int left_out(void)
{
	count_drop(&filtered);
	return 0;
}

// ns_find looks for readyline's PID namespace among pid's (numbers[0..level],
// outermost first): it returns pid's number there, 0 if not seen there, and
// sets *depth to how many namespaces below it pid's own is.
static __always_inline u32 ns_find(struct pid *pid, u32 *depth)
{
	if (!pid)
		return 0;
	u32 level = BPF_CORE_READ(pid, level);
	for (u32 i = 0; i < MAX_PIDNS_LEVEL; i++) {
		if (i > level)
			break;
		struct upid up = {};
		bpf_probe_read_kernel(&up, sizeof(up), &pid->numbers[i]);
		if (up.ns && BPF_CORE_READ(up.ns, ns.inum) == pidns_inum) {
			*depth = level - i;
			return up.nr;
		}
	}
	return 0;
}

// ns_nr is pid's number in readyline's PID namespace, 0 if not seen there.
static __always_inline u32 ns_nr(struct pid *pid)
{
	u32 depth;
	return ns_find(pid, &depth);
}

// fill_ids sets the header's pids, translated to readyline's PID namespace;
// it returns false for a task not visible there.
static __always_inline bool fill_ids(struct event_header *h, struct task_struct *task)
{
	if (pidns_inum == 0) {
		h->pid = BPF_CORE_READ(task, pid);
		h->tgid = BPF_CORE_READ(task, tgid);
		h->ppid = BPF_CORE_READ(task, real_parent, tgid);
		return true;
	}
	h->pid = ns_nr(BPF_CORE_READ(task, thread_pid));
	h->tgid = ns_nr(BPF_CORE_READ(task, group_leader, thread_pid));
	h->ppid = ns_nr(BPF_CORE_READ(task, real_parent, group_leader, thread_pid));
	return h->tgid != 0;
}

// visible reports whether task is seen in readyline's PID namespace, at
// most max_pidns_depth namespaces below it (in the initial namespace, a
// pid's level is its depth).
static __always_inline bool visible(struct task_struct *task)
{
	struct pid *pid = BPF_CORE_READ(task, group_leader, thread_pid);
	if (!pid)
		return false;
	if (pidns_inum == 0)
		return BPF_CORE_READ(pid, level) <= max_pidns_depth;
	u32 depth = 0;
	return ns_find(pid, &depth) != 0 && depth <= max_pidns_depth;
}

static __always_inline void fill_header(struct event_header *h, struct task_struct *task, u32 type)
{
	h->type = type;
	h->boot_ns = bpf_ktime_get_boot_ns();
	fill_ids(h, task);
	// The task's own cgroup: a child cloned into another cgroup
	// (CLONE_INTO_CGROUP) is not in current's.
	h->cgroup_id = BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
	BPF_CORE_READ_STR_INTO(&h->comm, task, comm);
}

// name_cgroup sends a cgroup_event for task's cgroup unless already sent.
static __always_inline void name_cgroup(struct task_struct *task)
{
	struct cgroup *cg = BPF_CORE_READ(task, cgroups, dfl_cgrp);
	struct kernfs_node *kn = BPF_CORE_READ(cg, kn);
	u64 id = BPF_CORE_READ(kn, id);
	u8 one = 1;
	if (bpf_map_lookup_elem(&named_cgroups, &id))
		return;
	struct cgroup_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(&drops);
		return; // not marked as named: the next event tries again
	}
	fill_header(&e->hdr, task, EVENT_CGROUP_NAME);
	e->level = BPF_CORE_READ(cg, level);
	e->_pad = 0;
	for (int i = 0; i < CGROUP_LEVELS; i++) {
		e->names[i][0] = 0;
		if (kn && i < e->level) {
			bpf_probe_read_kernel_str(e->names[i], CGROUP_NAME_LEN, BPF_CORE_READ(kn, name));
			kn = kn_parent(kn);
		}
	}
	bpf_map_update_elem(&named_cgroups, &id, &one, BPF_ANY);
	bpf_ringbuf_submit(e, submit_flags(&events));
}

static __always_inline void read_argv(struct exec_event *e, struct task_struct *task)
{
	unsigned long start = BPF_CORE_READ(task, mm, arg_start);
	unsigned long end = BPF_CORE_READ(task, mm, arg_end);
	if (end <= start)
		return;
	unsigned long len = end - start;
	e->argv_full_len = len;
	if (len > ARGV_LEN)
		len = ARGV_LEN;
	len &= (ARGV_LEN * 2 - 1); // keep the verifier sure of the bound
	if (len > ARGV_LEN)
		len = ARGV_LEN;
	if (bpf_probe_read_user(e->argv, len, (void *)start) == 0)
		e->argv_len = len;
}

static __always_inline bool is_cni_plugin(const char *filename)
{
	for (int d = 0; d < CNI_DIRS; d++) {
		if (cni_dirs[d][0] == 0)
			continue;
		for (int i = 0; i < CNI_DIR_LEN; i++) {
			char want = cni_dirs[d][i];
			if (want == 0)
				return true; // the whole directory prefix matched
			if (filename[i] != want)
				break;
		}
	}
	return false;
}

struct env_scan {
	const char *buf;
	u32 len;
	s32 id_at, cmd_at; // offsets of the values, -1 when not found
};

static __always_inline bool env_has(const char *buf, u32 at, const char *name, u32 n)
{
	for (u32 k = 0; k < n; k++) {
		if (buf[(at + k) & (ENV_MAX - 1)] != name[k])
			return false;
	}
	return true;
}

// scan_env looks at offset i of the environment tail for the start of
// CNI_CONTAINERID= or CNI_COMMAND=.
static long scan_env(u32 i, struct env_scan *s)
{
	if (i + 12 > s->len)
		return 1; // no room left for CNI_COMMAND=, the shorter name
	if (i > 0 && s->buf[(i - 1) & (ENV_MAX - 1)] != 0)
		return 0; // not the start of a variable
	if (!env_has(s->buf, i, "CNI_", 4))
		return 0;
	if (i + 16 <= s->len && env_has(s->buf, i + 4, "CONTAINERID=", 12))
		s->id_at = i + 16;
	else if (env_has(s->buf, i + 4, "COMMAND=", 8))
		s->cmd_at = i + 12;
	return (s->id_at >= 0 && s->cmd_at >= 0) ? 1 : 0;
}

static __always_inline void copy_env_value(char *dst, u32 cap, const char *buf, s32 at, u32 len)
{
	if (at < 0)
		return;
	for (u32 k = 0; k + 1 < cap; k++) {
		u32 i = at + k;
		if (i >= len)
			break;
		char c = buf[i & (ENV_MAX - 1)];
		if (c == 0)
			break;
		dst[k] = c;
	}
}

// read_cni_env fills the CNI fields of a plugin's exec from its environment.
static __always_inline void read_cni_env(struct exec_event *e, struct task_struct *task)
{
	u32 zero = 0;
	char *buf = bpf_map_lookup_elem(&env_scratch, &zero);
	if (!buf)
		return;
	unsigned long start = BPF_CORE_READ(task, mm, env_start);
	unsigned long end = BPF_CORE_READ(task, mm, env_end);
	if (end <= start)
		return;
	unsigned long len = end - start;
	if (len > ENV_MAX)
		len = ENV_MAX;
	len &= (ENV_MAX * 2 - 1);
	if (len > ENV_MAX)
		len = ENV_MAX;
	if (bpf_probe_read_user(buf, len, (void *)(end - len)))
		return;
	struct env_scan s = {.buf = buf, .len = len, .id_at = -1, .cmd_at = -1};
	bpf_loop(ENV_MAX, scan_env, &s, 0);
	copy_env_value(e->cni_containerid, CNI_ID_LEN, buf, s.id_at, len);
	copy_env_value(e->cni_command, CNI_CMD_LEN, buf, s.cmd_at, len);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	if (!visible(p))
		return 0;
	if (pods_only && !cgroup_kept(p)) {
		// Outside pods, a CNI plugin's exec (the prefix of its path
		// tells) is reported; another program's is not, even in a
		// process a plugin forked (user space reports a plugin's
		// forks, and the programs they run as the host's).
		char prefix[CNI_DIR_LEN];
		if (bpf_probe_read_kernel_str(prefix, sizeof(prefix), BPF_CORE_READ(bprm, filename)) < 0 ||
		    !is_cni_plugin(prefix)) {
			forget_cni_task(p);
			return left_out();
		}
		mark_cni_task(p);
	}
	name_cgroup(p);
	struct exec_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(&drops);
		return 0;
	}
	fill_header(&e->hdr, p, EVENT_EXEC);
	e->argv_len = 0;
	e->argv_full_len = 0;
	bpf_probe_read_kernel_str(e->filename, sizeof(e->filename), BPF_CORE_READ(bprm, filename));
	if (capture_argv)
		read_argv(e, p);
	e->cni_containerid[0] = 0;
	e->cni_command[0] = 0;
	if (is_cni_plugin(e->filename)) {
		__builtin_memset(e->cni_containerid, 0, sizeof(e->cni_containerid));
		__builtin_memset(e->cni_command, 0, sizeof(e->cni_command));
		read_cni_env(e, p);
	}
	bpf_ringbuf_submit(e, submit_flags(&events));
	return 0;
}

// sched_process_exit fires for every exiting thread. A process has exited when
// its last thread does: group_dead (an argument since 6.16), or else the
// thread group's live counter having dropped to zero. Filtering on pid == tgid
// instead would report a leader that calls pthread_exit before its workers,
// with the wrong exit code.
SEC("tp_btf/sched_process_exit")
int handle_exit(u64 *ctx)
{
	struct task_struct *p = (struct task_struct *)ctx[0];
	bool group_dead;
	if (exit_has_group_dead)
		group_dead = (bool)ctx[1];
	else
		group_dead = BPF_CORE_READ(p, signal, live.counter) == 0;
	if (!group_dead || !visible(p))
		return 0;
	if (pods_only && !cgroup_kept(p) && !forget_cni_task(p))
		return left_out();

	struct exit_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(&drops);
		return 0;
	}
	fill_header(&e->hdr, p, EVENT_EXIT);
	e->exit_code = BPF_CORE_READ(p, exit_code);
	e->_pad = 0;
	bpf_ringbuf_submit(e, submit_flags(&events));
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(handle_fork, struct task_struct *parent, struct task_struct *child)
{
	if (BPF_CORE_READ(child, pid) != BPF_CORE_READ(child, tgid))
		return 0; // a new thread, not a new process
	if (!visible(child))
		return 0;
	if (pods_only && !cgroup_kept(child)) {
		if (!cni_task(parent))
			return left_out();
		mark_cni_task(child);
	}

	name_cgroup(child);
	struct fork_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(&drops);
		return 0;
	}
	// current is the parent here; its cgroup is the child's until it moves.
	fill_header(&e->hdr, child, EVENT_FORK);
	bpf_ringbuf_submit(e, submit_flags(&events));
	return 0;
}
