package redact

import (
	"strings"
)

// commandForms are the ways the kubelet and its CRI client write a command
// line into a message, each as the text before and after it:
//
//	Exec lifecycle hook ([sh -c echo hi]) for Container ...  (lifecycle/handlers.go, %v of the command)
//	command 'sh -c echo hi' exited with 1: ...              (cri-client remote_runtime.go ExecSync)
//	command timed out: "sh -c sleep 5" timed out after 1s   (the same, %q)
var commandForms = [...]struct{ open, close string }{
	{"hook ([", "]) "},
	{"command '", "' exited with"},
	{`command timed out: "`, `" timed out after`},
}

// Message returns what p lets leave the node of a message the kubelet or
// the runtime wrote (a container's waiting or terminated message, a
// condition's, an Event's): every command line in it that the kubelet put
// there in one of its forms (commandForms) as p lets a command line leave
// (with ProgramOnly, its program's name only), and the rest redacted as
// an argument of a command line is (package redact's rules: an Unhealthy
// probe's output, a hook's, may hold anything). It reads at most MaxBytes
// of msg, as Argv does.
func (p Policy) Message(msg string) string {
	if msg == "" {
		return msg
	}
	head, msg := volumeHead(msg)
	if p == ProgramOnly {
		msg = programsOnly(msg)
	}
	return head + Argv([]string{msg})[0]
}

// volumeForm is how the kubelet names the volume of a failed mount
// operation before its error (operationexecutor GenerateError:
// `MountVolume.SetUp failed for volume "cfg" : configmap "cfg" not found`).
const volumeForm = ` for volume "`

// volumeHead splits a message of the kubelet about a volume into its head,
// the operation and the volume's name up to the colon before the error,
// kept as it is, and the rest. Read as a script, the head's
// `"secret-0" : secret` would be a JSON key and its value: the kubelet's
// own word would be redacted. Only the kubelet's form is a head: an
// operation of letters and dots ("MountVolume.SetUp failed"), a volume's
// name (a DNS subdomain: a Kubernetes name); any other message is all rest.
func volumeHead(msg string) (head, rest string) {
	i := strings.Index(msg, volumeForm)
	if i < 0 || i > 64 || strings.TrimLeft(msg[:i], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz. ") != "" {
		return "", msg
	}
	name := i + len(volumeForm)
	end := strings.IndexByte(msg[name:], '"')
	if end <= 0 || end > 253 || strings.TrimLeft(msg[name:name+end], "abcdefghijklmnopqrstuvwxyz0123456789.-") != "" ||
		!strings.HasPrefix(msg[name+end:], `" : `) {
		return "", msg
	}
	cut := name + end + len(`" : `)
	return msg[:cut], msg[cut:]
}

// programsOnly replaces each command line of msg in one of commandForms
// by its program's name.
func programsOnly(msg string) string {
	var b strings.Builder
	rest := msg
	for {
		at, form := -1, 0
		for i, f := range commandForms {
			if j := strings.Index(rest, f.open); j >= 0 && (at < 0 || j < at) {
				at, form = j, i
			}
		}
		if at < 0 {
			break
		}
		f := commandForms[form]
		start := at + len(f.open)
		end := strings.Index(rest[start:], f.close)
		if end < 0 {
			// Cut before the form closes: the command runs to the end.
			end = len(rest) - start
		}
		cmd := rest[start : start+end]
		b.WriteString(rest[:start])
		if fields := strings.Fields(cmd); len(fields) > 0 {
			b.WriteString(strings.Join(ProgramOnly.Argv(fields[:1]), " "))
			if len(fields) > 1 {
				b.WriteString(" " + Marker)
			}
		}
		rest = rest[start+end:]
	}
	if b.Len() == 0 {
		return msg
	}
	b.WriteString(rest)
	return b.String()
}
