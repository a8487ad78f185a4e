package redact

import (
	"strings"
	"unicode/utf8"
)

// capped returns argv, or, when argv is longer than limit (see MaxBytes),
// its first limit-2 bytes as arguments, the last one cut (maybe to ""),
// and true: with " <redacted>" after it, the result is no longer than
// limit. It reads at most twice the bytes it keeps, plus one argument's
// Markers.
func capped(argv []string, limit int) ([]string, bool) {
	raw := 0
	for _, a := range argv {
		raw += len(a)
	}
	if raw <= limit || fits(argv, limit) {
		return argv, false
	}
	budget := limit - 2
	for i, a := range argv {
		n, used := prefixOfSize(a, budget)
		if n == len(a) {
			budget -= used
			continue
		}
		out := make([]string, i+1)
		copy(out, argv[:i])
		// A backslash at the cut would escape the space before the Marker.
		out[i] = strings.TrimRight(a[:n], `\`)
		return out, true
	}
	return argv, false // not reached: argv does not fit
}

// fits reports whether the arguments' size is at most budget.
func fits(argv []string, budget int) bool {
	for _, a := range argv {
		n, used := prefixOfSize(a, budget)
		if n < len(a) {
			return false
		}
		budget -= used
	}
	return true
}

// prefixOfSize returns the length of the longest prefix of s whose size
// (bytes, a Marker counting as one) is at most budget, ending on a rune
// boundary and outside a Marker, and that size.
func prefixOfSize(s string, budget int) (n, used int) {
	i := 0
	for used < budget && i < len(s) {
		take := min(len(s)-i, budget-used) // what fits if no Marker is in it
		k := strings.IndexByte(s[i:i+take], '<')
		if k < 0 {
			i, used = i+take, used+take
			break
		}
		i, used = i+k+1, used+k+1
		if strings.HasPrefix(s[i-1:], Marker) {
			i += len(Marker) - 1
		}
	}
	for i < len(s) && i > 0 && !utf8.RuneStart(s[i]) {
		i--
		used--
	}
	return i, used
}

// size is the size of an argv as MaxBytes counts it.
func size(argv []string) int {
	n := 0
	for _, a := range argv {
		n += len(a) - (len(Marker)-1)*strings.Count(a, Marker)
	}
	return n
}
