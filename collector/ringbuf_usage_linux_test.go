package collector

import "testing"

// TestRingUsage: the peak is the most seen, never past the size, and a nil
// follower follows nothing.
func TestRingUsage(t *testing.T) {
	var u ringUsage
	u.sized(8192)
	for _, n := range []int{100, 5000, 300, 4999} {
		u.saw(n)
	}
	if got := u.usage(); got != (RingUsage{Size: 8192, Peak: 5000}) {
		t.Errorf("usage %+v, want size 8192 peak 5000", got)
	}
	u.saw(9000) // a record's padding counted on a full ring
	if got := u.usage(); got.Peak != 8192 {
		t.Errorf("peak %d, want it capped at the size 8192", got.Peak)
	}
	var none *ringUsage
	none.sized(4096)
	none.saw(10)
}
