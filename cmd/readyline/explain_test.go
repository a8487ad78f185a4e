package main

import (
	"math"
	"testing"
	"time"
)

// TestSecondsDuration: the list's durations saturate instead of wrapping.
func TestSecondsDuration(t *testing.T) {
	for _, tc := range []struct {
		s    float64
		want time.Duration
	}{
		{1.5, 1500 * time.Millisecond},
		{0, 0},
		{-2, -2 * time.Second},
		{(math.MaxInt64 - 1) / 1e9, math.MaxInt64}, // rounds up to 2^63 ns
		{1e300, math.MaxInt64},
		{-1e300, math.MinInt64},
		{math.Inf(1), math.MaxInt64},
		{math.NaN(), 0},
	} {
		if got := secondsDuration(tc.s); got != tc.want {
			t.Errorf("secondsDuration(%g) = %v, want %v", tc.s, got, tc.want)
		}
	}
}
