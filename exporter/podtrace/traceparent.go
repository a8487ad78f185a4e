package podtrace

import (
	"encoding/hex"
	"errors"
	"fmt"
)

// TraceParent is what a W3C Trace Context traceparent of version 00 names:
// a trace, a span in it (the parent) and the trace flags.
type TraceParent struct {
	TraceID TraceID
	SpanID  SpanID
	Flags   byte
}

// traceParentLen is the length of a version 00 traceparent:
// "00-" 32 hex "-" 16 hex "-" 2 hex.
const traceParentLen = 55

// ParseTraceParent parses a W3C Trace Context traceparent value, strictly:
// version 00, then a trace id of 32 and a parent span id of 16 lowercase hex
// digits, neither all zeros, and 2 lowercase hex digits of flags, separated
// by dashes, nothing around them. Any other value is an error whose text
// is why, alone: "version ff is forbidden" (the exporter's
// ParseTraceParent wraps it; the waterfalls show it).
func ParseTraceParent(s string) (TraceParent, error) {
	if len(s) >= 2 {
		switch v := s[:2]; {
		case !isLowerHex(v):
			return TraceParent{}, errors.New("the version is not 2 lowercase hex digits")
		case v == "ff":
			return TraceParent{}, errors.New("version ff is forbidden")
		case v != "00":
			return TraceParent{}, errors.New("version " + v + " is not supported (only 00)")
		}
	}
	switch {
	case len(s) > traceParentLen:
		return TraceParent{}, fmt.Errorf("longer than %d characters", traceParentLen)
	case len(s) < traceParentLen:
		return TraceParent{}, fmt.Errorf("%d characters, want %d", len(s), traceParentLen)
	case s[2] != '-' || s[35] != '-' || s[52] != '-':
		return TraceParent{}, errors.New("not version-traceid-parentid-flags separated by dashes")
	}
	switch {
	case !isLowerHex(s[3:35]):
		return TraceParent{}, errors.New("the trace id is not 32 lowercase hex digits")
	case !isLowerHex(s[36:52]):
		return TraceParent{}, errors.New("the parent id is not 16 lowercase hex digits")
	case !isLowerHex(s[53:]):
		return TraceParent{}, errors.New("the flags are not 2 lowercase hex digits")
	}
	var tp TraceParent
	var flags [1]byte
	// Lowercase hex of the right lengths: these cannot fail.
	_, _ = hex.Decode(tp.TraceID[:], []byte(s[3:35]))
	_, _ = hex.Decode(tp.SpanID[:], []byte(s[36:52]))
	_, _ = hex.Decode(flags[:], []byte(s[53:]))
	tp.Flags = flags[0]
	switch {
	case tp.TraceID == (TraceID{}):
		return TraceParent{}, errors.New("the trace id is all zeros")
	case tp.SpanID == (SpanID{}):
		return TraceParent{}, errors.New("the parent id is all zeros")
	}
	return tp, nil
}

func isLowerHex(s string) bool {
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
