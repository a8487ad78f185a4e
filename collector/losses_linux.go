package collector

import "github.com/readyline/readyline/collector/event"

// Losses are the records the kernel could not put in the full ring
// buffer, those that could not be decoded, and the events whose cgroup
// was gone before it was named (they name no pod).
func (s ProcessStats) Losses() []Loss {
	return []Loss{
		{event.ReasonRingFull, s.KernelDrops},
		{event.ReasonDecodeError, s.DecodeErrors},
		{event.ReasonUnattributed, s.Unattributed},
	}
}

// Losses are the records the kernel could not put in the full ring
// buffer, those that could not be decoded, and the connections forgotten
// before their close (their earlier states are lost).
func (s TCPStats) Losses() []Loss {
	return []Loss{
		{event.ReasonRingFull, s.KernelDrops},
		{event.ReasonDecodeError, s.DecodeErrors},
		{event.ReasonEvicted, s.Evicted},
	}
}

// Losses are the calls the kernel could not put in the full ring buffer,
// the records that could not be decoded, and the calls whose saved entry
// was pushed out of the full map of calls in flight: those are reported
// without their start and arguments. The calls under way when the probes
// attached come the same way, but are no loss (KubeletCallStats.BeforeAttach). The kernel's counters are left out
// when they read all zero: Stats reads zeros when it cannot read them, and
// counters that seem to start over would be counted again once read.
func (s KubeletCallStats) Losses() []Loss {
	losses := []Loss{{event.ReasonDecodeError, s.DecodeErrors}}
	if s.Kernel != (KubeletCallStats{}).Kernel {
		losses = append(losses,
			Loss{event.ReasonRingFull, s.Kernel.Drops},
			Loss{event.ReasonEntryMissed, s.EntriesLost})
	}
	return losses
}
