// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// ringbuf.h: the ring-buffer conventions readyline's programs share.

#ifndef READYLINE_RINGBUF_H
#define READYLINE_RINGBUF_H

// The reader is woken only once this many bytes wait in the ring buffer (the
// loader sets a quarter of its size); otherwise it polls on a short timer.
// Waking it for every record would cost a context switch per event on a busy
// node.
volatile const u64 wakeup_bytes = 1 << 18;

static __always_inline u64 submit_flags(void *ring)
{
	if (bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

// count_drop counts a record the full ring buffer could not take, at index 0
// of the program's per-CPU counter array.
static __always_inline void count_drop(void *counters)
{
	u32 zero = 0;
	u64 *v = bpf_map_lookup_elem(counters, &zero);
	if (v)
		__sync_fetch_and_add(v, 1);
}

#endif
