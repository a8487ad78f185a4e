// Package redact removes secrets from what readyline sends off the node:
// command lines (process argv, the kubelet's ExecSync commands, the probe
// and hook commands of a pod spec) and the pod objects of a recording.
//
// It reads words, not lines: every argument is split into shell-ish words
// (at whitespace outside quotes; a quoted part is read again as a script
// of its own; shell.go), and a word is secret by where it stands
// (words.go): the value of a --password flag or of a NAME_TOKEN=
// assignment, what follows an Authorization or Cookie header name, mysql's
// glued -p<password>, redis-cli's -a and the short flags of other tools
// (tools.go), a positional password (htpasswd -b, rabbitmqctl add_user,
// vault login, sqlplus user/password@db), the password of curl -u
// user:password, of a URL's userinfo or of a DSN, a token= query or JDBC
// parameter, a "password": JSON value. Before the words, every argument is
// searched for what is secret by its shape alone (tokens.go): PEM private
// keys, JWTs, GitHub, GitLab, Slack, AWS, Vault and Tailscale tokens,
// webhook URLs. Whatever is not secret is kept byte for byte.
//
// It fails closed: a quote that does not close (an argv the kernel cut,
// an ExecSync argument cut at 63 bytes) runs to the end of the argument,
// so a secret after it is redacted up to that end, and a token cut short
// at the end of an argument is redacted as a whole one would be.
//
// Redaction is idempotent: redacting a redacted command changes nothing,
// so a command redacted on one side (the kernel's argv) and one redacted on
// the other (a pod spec's probe) compare equal, and a redacted argv that
// the kernel cut is a prefix of the same command redacted whole.
//
// It takes time linear in its input, and reads at most MaxBytes of an
// argv: the rest is replaced by Marker (cap.go).
package redact

import "strings"

// Marker replaces every redacted value, and what follows the first
// MaxBytes of an argv.
const Marker = "<redacted>"

// MaxBytes bounds what Argv reads of an argv: the bytes of its arguments,
// a Marker counting as one. An argv longer than that is cut after
// MaxBytes-1 of them and ends with Marker; the arguments after the cut are
// dropped. The kernel reports at most 512 bytes of argv, so a pod spec's
// command longer than MaxBytes still matches the process it starts.
const MaxBytes = 4096

// Argv returns argv with its secrets replaced by Marker, cut after
// MaxBytes. argv itself is not modified: when something is redacted the
// result is a copy; when nothing is, the result is argv and Argv does not
// allocate. A long argv (the script of a probe) is redacted once: the
// result is remembered for its next calls (memo.go). Argv is safe for
// concurrent use.
func Argv(argv []string) []string {
	in, cut := capped(argv, MaxBytes)
	if !cut && size(in) < memoMinBytes {
		return redactArgv(argv, false)
	}
	return argvMemo.redact(argv, in, cut)
}

// redactArgv redacts in, argv or, when cut, the prefix of it that capped
// returned, which it marks: the copy it returns then ends with Marker.
func redactArgv(in []string, cut bool) []string {
	var st state
	var out []string // a copy, made on the first change
	for i, arg := range in {
		red := st.arg(arg)
		if red != arg && out == nil {
			out = make([]string, len(in))
			copy(out, in)
		}
		if out != nil {
			out[i] = red
		}
	}
	if !cut {
		if out == nil {
			return in
		}
		return out
	}
	if out == nil {
		out = make([]string, len(in))
		copy(out, in)
	}
	// A word of its own: glued to the last word, it could make that word
	// read otherwise the next time (host:80 is a port, host:80<redacted>
	// a password).
	switch last := &out[len(out)-1]; {
	case strings.HasSuffix(*last, Marker):
	case *last == "" || isSpace((*last)[len(*last)-1]):
		*last += Marker
	default:
		*last += " " + Marker
	}
	return out
}
