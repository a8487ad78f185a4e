package redact

import "strings"

var (
	// secretWords make a flag, variable, key or parameter name secret
	// wherever they stand in it (lower case).
	secretWords = []string{
		"password", "passwd", "passphrase", "secret", "token", "credential", "bearer",
		"apikey", "api-key", "api_key", "accesskey", "access-key", "access_key",
		"privatekey", "private-key", "private_key",
	}
	// secretSuffixes make a name secret at its end: DB_PASS, MYSQL_PWD,
	// API_KEY, REDISCLI_AUTH, TS_AUTHKEY, REGISTRY_CREDS, SESSION_COOKIE,
	// keytool's -storepass and -keypass.
	secretSuffixes = []string{"_key", "-key", ".key", "_pass", "-pass", ".pass", "_pwd", "-pwd", ".pwd",
		"_auth", "authkey", "creds", "_cookie", "storepass", "keypass"}
	// secretNames are secret as a whole name only: --pass, not --bypass.
	secretNames = []string{"pass", "pwd", "passin", "passout", "sshpass", "cookie"}
	// pathSuffixes end names whose values are paths, not secrets
	// (--token-file, DB_PASSWORD_FILE), or that take no value
	// (docker login --password-stdin).
	pathSuffixes = []string{"-file", "_file", ".file", "-path", "_path", "-dir", "_dir", "-stdin", "_stdin"}
	// secretParams are query and connection-string parameters that are
	// secret beyond isSecretName: ?key=, ?sig=, ;pwd=.
	secretParams = []string{"key", "sig", "signature", "x-amz-signature", "x-goog-signature", "auth"}
	// authHeaders carry credentials after an optional scheme word, up to
	// the end of the header.
	authHeaders = []string{"authorization", "proxy-authorization", "cookie", "set-cookie"}
	// authSchemes are the words an Authorization value may start with.
	authSchemes = []string{"bearer", "basic", "token", "digest", "negotiate", "ntlm", "apikey", "key", "sso-key", "aws4-hmac-sha256"}
)

// isSecretName reports whether a flag, variable or key name (leading
// dashes allowed) names a secret: *password*, *token*, *secret*, *_KEY,
// *_PASS, *_PWD and the like, but not --token-file or DB_PASSWORD_FILE,
// whose values are paths.
func isSecretName(name string) bool {
	n := name
	for n != "" && n[0] == '-' {
		n = n[1:]
	}
	if len(n) < 3 {
		return false
	}
	last := lower(n[len(n)-1])
	if anySuffixFold(n, pathSuffixesByLast[last]) {
		return false
	}
	if anySuffixFold(n, secretSuffixesByLast[last]) || anyEqualFold(n, secretNamesByLast[last]) {
		return true
	}
	return len(n) >= shortestSecretWord && containsSecretWord(n)
}

// The lists by the last byte of their words: a name is compared only with
// the words that end as it does.
var (
	pathSuffixesByLast   = byLast(pathSuffixes)
	secretSuffixesByLast = byLast(secretSuffixes)
	secretNamesByLast    = byLast(secretNames)
)

func byLast(words []string) (m [256][]string) {
	for _, w := range words {
		m[w[len(w)-1]] = append(m[w[len(w)-1]], w)
	}
	return m
}

// shortestSecretWord is the length of the shortest of secretWords.
var shortestSecretWord = func() int {
	n := len(secretWords[0])
	for _, w := range secretWords {
		n = min(n, len(w))
	}
	return n
}()

func anySuffixFold(s string, suffixes []string) bool {
	for _, w := range suffixes {
		if hasSuffixFold(s, w) {
			return true
		}
	}
	return false
}

// containsSecretWord reports whether s contains one of secretWords,
// ignoring ASCII case, in one pass over s: a byte, a step of an automaton.
func containsSecretWord(s string) bool {
	a := &secretWordAutomaton
	state := uint8(0)
	for i := 0; i < len(s); i++ {
		state = a.next[state][a.symbol[s[i]]&31]
		if a.accept[state] {
			return true
		}
	}
	return false
}

// automaton is the Aho-Corasick automaton of a set of lower-case words
// (of at most 31 bytes in all, together at most 255), as a table of
// transitions: it reads a byte at a time, case folded, and is in an
// accepting state right after a word.
type automaton struct {
	symbol [256]uint8     // the byte's column in next; 0 for a byte of no word
	next   [256][32]uint8 // state, symbol -> state
	accept [256]bool      // a word ends in the state
}

var secretWordAutomaton = newAutomaton(secretWords)

func newAutomaton(words []string) automaton {
	var a automaton
	symbols := 1
	for _, w := range words {
		for i := 0; i < len(w); i++ {
			if c := w[i]; a.symbol[c] == 0 {
				a.symbol[c] = uint8(symbols)
				if 'a' <= c && c <= 'z' {
					a.symbol[c-'a'+'A'] = uint8(symbols)
				}
				symbols++
			}
		}
	}
	// The trie: its edges, 0 for none (no edge leads back to the root).
	trie := [][32]uint8{{}}
	for _, w := range words {
		s := 0
		for i := 0; i < len(w); i++ {
			c := a.symbol[w[i]]
			if trie[s][c] == 0 {
				trie = append(trie, [32]uint8{})
				trie[s][c] = uint8(len(trie) - 1)
			}
			s = int(trie[s][c])
		}
		a.accept[s] = true
	}
	if symbols > 32 || len(trie) > 256 {
		panic("redact: too many secret words for the automaton")
	}
	// Breadth first: the failure of a state is the longest proper suffix of
	// its path that is a path of the trie, and its missing edges are its
	// failure's (computed before it, being shallower).
	var fail [256]uint8
	var queue []uint8
	for c := range symbols {
		if t := trie[0][c]; t != 0 {
			a.next[0][c] = t
			queue = append(queue, t)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		a.accept[s] = a.accept[s] || a.accept[fail[s]]
		for c := range symbols {
			if t := trie[s][c]; t != 0 {
				fail[t] = a.next[fail[s]][c]
				a.next[s][c] = t
				queue = append(queue, t)
			} else {
				a.next[s][c] = a.next[fail[s]][c]
			}
		}
	}
	return a
}

// isCredsName reports whether a flag names a user:password (skopeo
// --creds, --src-creds, --dest-creds), whose user is kept.
func isCredsName(name string) bool {
	return strings.HasPrefix(name, "--") && hasSuffixFold(name, "creds")
}

// isSecretJSONKey: a JSON key whose value is secret; "auth" is one there
// (a Docker config's base64 user:password), not as a flag (mongod --auth).
func isSecretJSONKey(name string) bool {
	return isSecretName(name) || strings.EqualFold(name, "auth")
}

// isSecretKey reports whether Name: (a header, a YAML key) is followed by a
// secret: Authorization, Cookie, X-Api-Key, X-Auth-Token, password.
func isSecretKey(name string) bool {
	return anyEqualFold(name, authHeaders) || isSecretName(name)
}

// isAuthHeader: a header whose whole value is a credential.
func isAuthHeader(name string) bool { return anyEqualFold(name, authHeaders) }

// isAuthScheme: Bearer, Basic and the other schemes of an Authorization
// value, which are kept.
func isAuthScheme(w string) bool { return anyEqualFold(w, authSchemes) }

// isSecretParam reports whether a URL query or connection-string parameter
// (token, access_token, password, key, sig, pwd, ...) is secret.
func isSecretParam(name string) bool {
	return anyEqualFold(name, secretParams) || isSecretName(name)
}

func anyEqualFold(s string, words []string) bool {
	for _, w := range words {
		if len(s) == len(w) && hasSuffixFold(s, w) {
			return true
		}
	}
	return false
}

// hasSuffixFold reports whether s ends with the lower-case ASCII word w,
// ignoring ASCII case.
func hasSuffixFold(s, w string) bool {
	return len(s) >= len(w) && equalFoldAt(s, len(s)-len(w), w)
}

func equalFoldAt(s string, i int, w string) bool {
	for j := 0; j < len(w); j++ {
		if lower(s[i+j]) != w[j] {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
