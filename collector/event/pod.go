package event

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Event types of the API server's view and of the clock.
const (
	TypePod  Type = "pod"
	TypeTick Type = "tick"
)

// PodAction says what the watch reported.
type PodAction string

// Pod watch actions.
const (
	PodAdded   PodAction = "add"
	PodUpdated PodAction = "update"
	PodDeleted PodAction = "delete"
)

// PodUpdate is one pod object as the API server's watch delivered it.
type PodUpdate struct {
	// Time is when readyline observed the update (ms precision): the API's
	// own lastTransitionTime has only 1 s.
	Time   time.Time   `json:"time"`
	Action PodAction   `json:"action"`
	Pod    *corev1.Pod `json:"pod"`
}

func (*PodUpdate) Type() Type        { return TypePod }
func (e *PodUpdate) When() time.Time { return e.Time }

// Tick is the daemon's clock reading, fed to the correlator for timeouts.
// It is recorded with the other events so a replay decides exactly as the
// daemon did.
type Tick struct {
	// Time is the wall clock (CLOCK_REALTIME), which NTP or an operator may
	// step.
	Time time.Time `json:"time"`
	// Mono is CLOCK_BOOTTIME read with Time: it never steps, and it is the
	// clock the kernel's events are stamped with (bpf_ktime_get_boot_ns),
	// so Time - Mono is the offset the kernel sources add to them. The
	// correlator runs its timeouts on it and tells a step of the wall clock
	// from a change of that offset. Zero in recordings made before it
	// existed: their ticks' Time is then the only clock.
	Mono time.Duration `json:"mono,omitempty"`
}

func (*Tick) Type() Type        { return TypeTick }
func (e *Tick) When() time.Time { return e.Time }
