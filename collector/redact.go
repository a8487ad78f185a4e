package collector

import (
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/readyline/readyline/collector/event"
)

// Redacted replaces values that look like secrets in argv.
const Redacted = event.Redacted

var (
	// --flag=value, or --flag value inside one argument (a shell script).
	flagValue = regexp.MustCompile(`(?i)(--?[a-z0-9][a-z0-9_.-]*)(=|\s+)([^\s'"-][^\s'"]*)`)
	// NAME=value, as in `env DB_PASSWORD=... cmd` or a script.
	envValue = regexp.MustCompile(`\b([A-Za-z_][A-Za-z0-9_]*)=([^\s'"]+)`)
	// scheme://user:password@host
	urlPassword = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]*):[^@\s/]+@`)
	// Authorization: Bearer ... (curl -H, wget --header)
	authHeader = regexp.MustCompile(`(?i)(authorization:\s*(?:bearer\s+|basic\s+|token\s+)?)[^\s'"]+`)

	secretWords = []string{
		"password", "passwd", "passphrase", "secret", "token", "credential",
		"apikey", "api-key", "api_key", "accesskey", "access-key", "access_key",
		"privatekey", "private-key", "private_key",
	}
	// Names of flags and variables whose values are paths, not secrets.
	pathSuffixes = []string{"-file", "_file", "-path", "_path", "-dir", "_dir"}
)

// isSecretName reports whether a flag or variable name (dashes allowed)
// names a secret value: *password*, *token*, *secret*, *_KEY and the like,
// but not --token-file or DB_PASSWORD_FILE, whose values are paths.
func isSecretName(name string) bool {
	n := strings.ToLower(strings.TrimLeft(name, "-"))
	for _, s := range pathSuffixes {
		if strings.HasSuffix(n, s) {
			return false
		}
	}
	if strings.HasSuffix(n, "_key") || strings.HasSuffix(n, "-key") {
		return true
	}
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// RedactArgv returns argv with values that look like secrets replaced by
// Redacted: --password=x, --token x, AWS_SECRET_ACCESS_KEY=x, API_KEY=x,
// user:password@ in URLs, Authorization headers, also inside shell scripts
// passed as one argument. argv itself is not modified.
func RedactArgv(argv []string) []string {
	var out []string // a copy, made on the first change
	for i, arg := range argv {
		red := arg
		if i > 0 && isBareSecretFlag(argv[i-1]) && !strings.HasPrefix(arg, "-") {
			red = Redacted
		} else {
			red = redactArg(arg)
		}
		if red != arg && out == nil {
			out = slices.Clone(argv)
		}
		if out != nil {
			out[i] = red
		}
	}
	if out == nil {
		return argv
	}
	return out
}

// isBareSecretFlag: an argument like --password whose value is the next one.
func isBareSecretFlag(arg string) bool {
	return strings.HasPrefix(arg, "-") && !strings.ContainsAny(arg, "= \t") && isSecretName(arg)
}

// hints are the substrings (lower case) without which no rule can match.
var hints = append([]string{"key", "://", "authorization"}, secretWords...)

// mightHoldSecret is a fast, allocation-free screen before the regexps.
func mightHoldSecret(arg string) bool {
	if !strings.ContainsAny(arg, "= \t:") {
		return false
	}
	for _, h := range hints {
		if containsFold(arg, h) {
			return true
		}
	}
	return false
}

// containsFold reports whether s contains the lower-case ASCII word w,
// ignoring ASCII case.
func containsFold(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		j := 0
		for ; j < len(w); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != w[j] {
				break
			}
		}
		if j == len(w) {
			return true
		}
	}
	return false
}

func redactArg(arg string) string {
	if !mightHoldSecret(arg) {
		return arg
	}
	arg = flagValue.ReplaceAllStringFunc(arg, func(m string) string {
		sub := flagValue.FindStringSubmatch(m)
		if !isSecretName(sub[1]) {
			return m
		}
		return sub[1] + sub[2] + Redacted
	})
	arg = envValue.ReplaceAllStringFunc(arg, func(m string) string {
		name, _, _ := strings.Cut(m, "=")
		if !isSecretName(name) {
			return m
		}
		return name + "=" + Redacted
	})
	arg = urlPassword.ReplaceAllString(arg, "$1:"+Redacted+"@")
	return authHeader.ReplaceAllString(arg, "${1}"+Redacted)
}

// DefaultCNIBinDirs are where CNI plugins are installed on common nodes.
var DefaultCNIBinDirs = []string{"/opt/cni/bin", "/usr/lib/cni", "/usr/libexec/cni"}

// runtimeHelpers are host programs that build containers: their argv is
// worth keeping (container ids, bundle paths).
var runtimeHelpers = map[string]bool{
	"runc": true, "crun": true, "runsc": true, "youki": true, "conmon": true,
}

// HelperScope says whether the program at filename is a container runtime
// helper: ScopeRuntime for an OCI runtime, a containerd shim or conmon,
// ScopeCNI for a CNI plugin (any program in one of cniBinDirs), ScopeHost
// for anything else.
func HelperScope(filename string, cniBinDirs []string) event.Scope {
	base := path.Base(filename)
	if runtimeHelpers[base] || strings.HasPrefix(base, "containerd-shim") {
		return event.ScopeRuntime
	}
	dir := path.Dir(filename)
	for _, d := range cniBinDirs {
		if dir == d {
			return event.ScopeCNI
		}
	}
	return event.ScopeHost
}
