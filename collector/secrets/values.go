// Package secrets removes the values of a pod's Secrets, exactly, from
// every text readyline keeps or sends about the pod: the argv of its
// processes, the kubelet's ExecSync commands, its status messages and the
// Events about it. Package redact recognises secrets by their shape; a
// Secret's value has no shape (a password is any string), so this package
// learns the values themselves.
//
// The pod's spec says which of its environment variables come from Secrets
// (secretKeyRef, envFrom with a secretRef) and which of its volumes are
// Secrets or project them (with the service account token); the values are
// read on the node, where they already are: a container's environment as
// the runtime holds it (the CRI's ContainerStatus, verbose) and the files
// the kubelet wrote into the pod's volumes. They are held in memory only,
// never written, and dropped with the pod.
//
// A value shorter than MinValueBytes, or one of a few common words, is not
// removed by its value: "1", "true", a port, "default" would blank far
// more than secrets. Such values are left to redact's rules for where they
// stand (the value of --password=, of a URL's userinfo, ...).
package secrets

import (
	"bytes"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/readyline/readyline/collector/redact"
)

// MinValueBytes is the shortest value removed wherever it appears.
const MinValueBytes = 6

// commonValues are values of MinValueBytes or more that configuration
// often holds and text often says otherwise; they are not removed by
// value.
var commonValues = map[string]bool{
	"enabled": true, "disabled": true, "default": true, "localhost": true,
	"production": true, "development": true, "staging": true, "secret": true,
	"password": true, "false": true, "true": true,
}

// Removable says whether v is removed wherever it appears: not too short
// and not too common (see the package doc).
func Removable(v string) bool {
	return len(v) >= MinValueBytes && !commonValues[strings.ToLower(v)] && strings.TrimSpace(v) == v
}

// valuesOf returns the values to remove for one value a Secret gave (an
// environment variable's or a file's): the value itself, and when it holds
// several lines or words, each line, each line's value after a "key=" or
// "key: ", and each word, each only when Removable. A script that reads a
// file line by line, or a shell that split a value into words, then leaks
// none of them.
func valuesOf(v string) []string {
	var out []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if Removable(s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	add(v)
	if !strings.ContainsFunc(v, unicode.IsSpace) {
		return out
	}
	for line := range strings.SplitSeq(v, "\n") {
		add(line)
		if _, after, ok := strings.Cut(line, "="); ok {
			add(after)
		} else if _, after, ok := strings.Cut(line, ": "); ok {
			add(after)
		}
		for _, w := range strings.Fields(line) {
			add(w)
		}
	}
	return out
}

// Set is the values of one pod's Secrets, and removes them from text. The
// zero Set holds none. Not safe for concurrent use.
type Set struct {
	values []string // longest first, so that the longer of two overlapping values wins
	rep    *strings.Replacer
}

// Add adds the values that v, a value a Secret gave, holds (valuesOf), and
// says whether any is new.
func (s *Set) Add(v string) bool {
	added := false
	for _, x := range valuesOf(v) {
		if !slices.Contains(s.values, x) {
			s.values = append(s.values, x)
			added = true
		}
	}
	if added {
		slices.SortStableFunc(s.values, func(a, b string) int { return len(b) - len(a) })
		pairs := make([]string, 0, 2*len(s.values))
		for _, x := range s.values {
			pairs = append(pairs, x, redact.Marker)
		}
		s.rep = strings.NewReplacer(pairs...)
	}
	return added
}

// Len is the number of values s removes.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.values)
}

// Bytes is what s holds in memory, roughly.
func (s *Set) Bytes() int {
	if s == nil || len(s.values) == 0 {
		return 0
	}
	n := 64
	for _, v := range s.values {
		n += 2*len(v) + 48 // the value, and the replacer's copy of it
	}
	return n
}

// Text returns text with every value of s replaced by redact.Marker. text
// itself is returned when it holds none.
func (s *Set) Text(text string) string {
	if s == nil || s.rep == nil || text == "" {
		return text
	}
	// Most texts hold none: finding that out allocates nothing, where the
	// replacer always copies.
	for _, v := range s.values {
		if strings.Contains(text, v) {
			return s.rep.Replace(text)
		}
	}
	return text
}

// CutText is Text for a text that was cut short: when it ends with the
// beginning of a value (the rest of it cut off), that beginning is replaced
// by redact.Marker too.
func (s *Set) CutText(text string) string {
	text = s.Text(text)
	if s == nil || text == "" {
		return text
	}
	longest := 0
	for _, v := range s.values {
		longest = max(longest, overlap(text, v))
	}
	if longest == 0 {
		return text
	}
	cut := len(text) - longest
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + redact.Marker
}

// overlap is the length of the longest proper prefix of v that text ends
// with, in time linear in len(v) (the prefix function of v's beginning
// followed by text's end).
func overlap(text, v string) int {
	m := min(len(v)-1, len(text))
	if m <= 0 {
		return 0
	}
	if strings.HasSuffix(text, v[:m]) {
		return m
	}
	var b bytes.Buffer
	b.Grow(2*m + 1)
	b.WriteString(v[:m])
	b.WriteByte(0) // in no value: Removable values have no NUL (argv cannot)
	b.WriteString(text[len(text)-m:])
	s := b.Bytes()
	pi := make([]int32, len(s))
	for i := 1; i < len(s); i++ {
		k := pi[i-1]
		for k > 0 && s[i] != s[k] {
			k = pi[k-1]
		}
		if s[i] == s[k] {
			k++
		}
		pi[i] = k
	}
	return int(pi[len(s)-1])
}

// Argv returns argv with the values of s removed from each argument, a
// copy when any changed (argv is not modified). cut says the kernel or
// the kubelet's probe cut the argument list (its last argument may end
// within a value); cutArg, when not zero, is the length at which each
// argument may have been cut (an ExecSync argument: 63 bytes).
func (s *Set) Argv(argv []string, cut bool, cutArg int) []string {
	if s == nil || s.rep == nil {
		return argv
	}
	var out []string
	for i, a := range argv {
		r := s.Text(a)
		if (cut && i == len(argv)-1) || (cutArg > 0 && len(a) >= cutArg) {
			r = s.CutText(a)
		}
		if r != a && out == nil {
			out = slices.Clone(argv)
		}
		if out != nil {
			out[i] = r
		}
	}
	if out == nil {
		return argv
	}
	return out
}
