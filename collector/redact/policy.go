package redact

import (
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"
)

// Policy says what of a command line leaves the node: readyline run's
// --argv. Its zero value is Redacted.
type Policy uint8

const (
	// Redacted keeps command lines with their secrets replaced by Marker
	// (--argv=redacted, the default).
	Redacted Policy = iota
	// ProgramOnly keeps the program's name of a command line, the base
	// name of argv[0] (redacted too), and nothing else (--argv=none).
	ProgramOnly
)

var policyNames = [...]string{Redacted: "redacted", ProgramOnly: "none"}

// Argv returns what of argv p lets leave the node. argv is not modified.
func (p Policy) Argv(argv []string) []string {
	if p == Redacted || len(argv) == 0 {
		return Argv(argv)
	}
	if argv[0] == "" {
		return nil
	}
	name := path.Base(argv[0])
	if len(argv) == 1 && name == argv[0] {
		return Argv(argv)
	}
	return Argv([]string{name})
}

// String returns the --argv value of p.
func (p Policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("Policy(%d)", p)
}

// Set sets p from an --argv value: redacted or none. With String, it makes
// *Policy a flag.Value.
func (p *Policy) Set(s string) error {
	for q, name := range policyNames {
		if s == name {
			*p = Policy(q)
			return nil
		}
	}
	return fmt.Errorf("%q is neither redacted nor none", s)
}

// StripCommands applies p to the command lines of pod's spec, in place:
// with ProgramOnly, a container's command becomes its program's name and
// its args go (with no command, both go: the program is the image's), and
// a probe's or hook's exec command becomes its program's name. With
// Redacted it leaves them: what leaves the node is redacted on its way.
func (p Policy) StripCommands(pod *corev1.Pod) {
	if p != ProgramOnly || pod == nil {
		return
	}
	execCommands(&pod.Spec, func(command, args *[]string) {
		*command = nilIfEmpty(p.Argv(*command))
		if args != nil {
			*args = nil
		}
	})
}

// StripMessages applies p's Message to every message of pod's status, in
// place: the pod's, its conditions', and its containers' waiting and
// terminated messages (the kubelet writes a failed hook's command line and
// output there, a container its termination message).
func (p Policy) StripMessages(pod *corev1.Pod) {
	if pod == nil {
		return
	}
	st := &pod.Status
	st.Message = p.Message(st.Message)
	for i := range st.Conditions {
		st.Conditions[i].Message = p.Message(st.Conditions[i].Message)
	}
	for _, list := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses, st.EphemeralContainerStatuses} {
		for i := range list {
			for _, s := range []*corev1.ContainerState{&list[i].State, &list[i].LastTerminationState} {
				if s.Waiting != nil {
					s.Waiting.Message = p.Message(s.Waiting.Message)
				}
				if s.Terminated != nil {
					s.Terminated.Message = p.Message(s.Terminated.Message)
				}
			}
		}
	}
}
