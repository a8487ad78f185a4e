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
	// secretSuffixes make a name secret at its end: DB_PASS, MYSQL_PWD, API_KEY.
	secretSuffixes = []string{"_key", "-key", ".key", "_pass", "-pass", ".pass", "_pwd", "-pwd", ".pwd"}
	// secretNames are secret as a whole name only: --pass, not --bypass.
	secretNames = []string{"pass", "pwd", "passin", "passout"}
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
	n := strings.TrimLeft(name, "-")
	if len(n) < 3 {
		return false
	}
	for _, s := range pathSuffixes {
		if hasSuffixFold(n, s) {
			return false
		}
	}
	for _, s := range secretSuffixes {
		if hasSuffixFold(n, s) {
			return true
		}
	}
	if anyEqualFold(n, secretNames) {
		return true
	}
	return containsSecretWord(n)
}

// wordsByFirst are secretWords by their first letter.
var wordsByFirst = func() (m [26][]string) {
	for _, w := range secretWords {
		m[w[0]-'a'] = append(m[w[0]-'a'], w)
	}
	return m
}()

// containsSecretWord reports whether s contains one of secretWords,
// ignoring ASCII case, in one pass over s.
func containsSecretWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := lower(s[i])
		if c < 'a' || c > 'z' {
			continue
		}
		for _, w := range wordsByFirst[c-'a'] {
			if i+len(w) <= len(s) && equalFoldAt(s, i, w) {
				return true
			}
		}
	}
	return false
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
