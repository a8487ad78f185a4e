package main

import (
	"slices"
	"testing"
)

func TestCommandFirst(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{nil, nil},
		{[]string{"explain", "-n", "a", "p"}, []string{"explain", "-n", "a", "p"}},
		{[]string{"--kubeconfig", "k", "explain", "-n", "a", "p"}, []string{"explain", "--kubeconfig", "k", "-n", "a", "p"}},
		{[]string{"--context=c", "list", "-A"}, []string{"list", "--context=c", "-A"}},
		{[]string{"-h"}, []string{"-h"}},
		{[]string{"--kubeconfig", "k"}, []string{"--kubeconfig", "k"}},
	} {
		if got := commandFirst(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("commandFirst(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
