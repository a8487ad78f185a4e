package redact

import "strings"

// charset is a set of bytes: a token's body.
type charset [256]bool

func newCharset(extra string, upper, lower, digits bool) charset {
	var cs charset
	for c := 0; c < 256; c++ {
		b := byte(c)
		cs[c] = upper && 'A' <= b && b <= 'Z' || lower && 'a' <= b && b <= 'z' || digits && '0' <= b && b <= '9' ||
			strings.IndexByte(extra, b) >= 0
	}
	return cs
}

var (
	alnum     = newCharset("", true, true, true)
	alnumU    = newCharset("_", true, true, true)   // a word's characters
	alnumUD   = newCharset("_-", true, true, true)  // most tokens' bodies: more than some need, failing closed
	upperNum  = newCharset("", true, false, true)   // AWS access key ids
	jwtChars  = newCharset("_-.", true, true, true) // base64url parts joined by dots
	base64Std = newCharset("+/=", true, true, true) // a base64 PEM
	pathChars = newCharset("-._~%/+", true, true, true)
)

// shape is a token recognised by its prefix, wherever it stands.
type shape struct {
	prefix string
	body   *charset
	// min is the shortest body of a whole token; a body that runs to the
	// end of the argument (where the kernel may have cut it) goes from 4
	// characters on.
	min int
	// keep keeps the prefix, which says what the token was: ghp_<redacted>.
	keep bool
}

var shapes = []shape{
	// GitHub: personal, OAuth, user-to-server, server-to-server, refresh
	// and fine-grained personal tokens.
	{"ghp_", &alnumUD, 20, true}, {"gho_", &alnumUD, 20, true}, {"ghu_", &alnumUD, 20, true},
	{"ghs_", &alnumUD, 20, true}, {"ghr_", &alnumUD, 20, true}, {"github_pat_", &alnumUD, 20, true},
	// GitLab personal, deploy and runner tokens.
	{"glpat-", &alnumUD, 16, true}, {"gldt-", &alnumUD, 16, true}, {"glrt-", &alnumUD, 16, true},
	// Slack bot, user, app and other tokens.
	{"xoxb-", &alnumUD, 10, true}, {"xoxp-", &alnumUD, 10, true}, {"xoxa-", &alnumUD, 10, true},
	{"xoxr-", &alnumUD, 10, true}, {"xoxs-", &alnumUD, 10, true}, {"xoxe-", &alnumUD, 10, true}, {"xapp-", &alnumUD, 10, true},
	// AWS access key ids, long-lived and temporary.
	{"AKIA", &upperNum, 16, true}, {"ASIA", &upperNum, 16, true},
	// Vault service, batch and recovery tokens.
	{"hvs.", &alnumUD, 20, true}, {"hvb.", &alnumUD, 20, true}, {"hvr.", &alnumUD, 20, true},
	{"tskey-", &alnumUD, 10, true},           // Tailscale auth and API keys
	{"npm_", &alnum, 36, true},               // npm (npm_config_* variables have a shorter body)
	{"sk_live_", &alnum, 16, true},           // Stripe secret keys
	{"rk_live_", &alnum, 16, true},           // Stripe restricted keys
	{"AIza", &alnumUD, 30, true},             // Google API keys
	{"eyJ", &jwtChars, 16, false},            // a JWT ({"alg":...), header and all
	{"LS0tLS1CRUdJTi", &base64Std, 16, true}, // base64 of "-----BEGIN": a PEM in a Secret's encoding
	// Webhook URLs, whose path is the credential.
	{"hooks.slack.com/services/", &pathChars, 1, true}, {"hooks.slack.com/workflows/", &pathChars, 1, true},
	{"hooks.slack.com/triggers/", &pathChars, 1, true}, {"discord.com/api/webhooks/", &pathChars, 1, true},
	{"discordapp.com/api/webhooks/", &pathChars, 1, true}, {"webhook.office.com/webhookb2/", &pathChars, 1, true},
}

// shapesByFirst are the shapes by the first byte of their prefix.
var shapesByFirst = func() (m [256][]shape) {
	for _, sh := range shapes {
		m[sh.prefix[0]] = append(m[sh.prefix[0]], sh)
	}
	return m
}()

// shapeStart says which two bytes start a shape: bit b of
// shapeStart[c][b>>6] for c then b.
var shapeStart = func() (m [256][4]uint64) {
	for _, sh := range shapes {
		c, b := sh.prefix[0], sh.prefix[1]
		m[c][b>>6] |= 1 << (b & 63)
	}
	return m
}()

// shapes redacts what is secret by its shape or by its key wherever it
// stands in s, a whole argument: PEM private keys and the JSON values of
// secret keys. Tokens are redacted word by word (tokens), where wordEnd
// finds them.
func (st *state) shapes(s string) string {
	return jsonValues(st.pemKeys(s))
}

// shapeAt returns hasShape when a token may start at s[i], the first of a
// run of word characters.
func shapeAt(s string, i int) chars {
	if i+1 < len(s) {
		if c, b := s[i], s[i+1]; shapeStart[c][b>>6]&(1<<(b&63)) != 0 {
			return hasShape
		}
	}
	return 0
}

// tokens redacts the tokens of s that start at a word boundary. Every
// prefix starts with a letter: only the first of a run of word characters
// is looked at. atEnd says s ends its argument, where the kernel may have
// cut a token short.
func tokens(s string, atEnd bool) string {
	e := edit{s: s}
	for i := 0; i < len(s); {
		for i < len(s) && !alnumU[s[i]] {
			i++
		}
		j := i + 1
		if shapeAt(s, i) != 0 {
			j = max(j, e.token(i, atEnd))
		}
		for j < len(s) && alnumU[s[j]] {
			j++
		}
		i = j
	}
	return e.result()
}

// token redacts the token at e.s[i], if one starts there, and returns its
// end (or i).
func (e *edit) token(i int, atEnd bool) int {
	s := e.s
	for _, sh := range shapesByFirst[s[i]] {
		if !strings.HasPrefix(s[i:], sh.prefix) {
			continue
		}
		b := i + len(sh.prefix)
		j := b
		for j < len(s) && sh.body[s[j]] {
			j++
		}
		if n := j - b; n < sh.min && (j < len(s) || !atEnd || n < min(sh.min, 4)) {
			continue
		}
		from := i
		if sh.keep {
			from = b
		}
		e.replace(from, j, Marker)
		return j
	}
	return i
}

// pemKeys redacts the body of every PEM private key in s (-----BEGIN ...
// PRIVATE KEY----- to -----END), keeping its header and footer and the
// spaces around the body. A key that does not end in s runs to its end
// and on into the next arguments (pemContinued).
func (st *state) pemKeys(s string) string {
	const begin = "-----BEGIN "
	e := edit{s: s}
	for from := 0; ; {
		k := strings.Index(s[from:], begin)
		if k < 0 {
			return e.result()
		}
		b := from + k + len(begin)
		n := strings.Index(s[b:min(len(s), b+64)], "-----")
		if n < 0 {
			from = b
			continue
		}
		label, body := s[b:b+n], b+n+len("-----")
		from = body
		if !strings.Contains(label, "PRIVATE") && !strings.Contains(label, "ENCRYPTED") {
			continue
		}
		end := strings.Index(s[body:], "-----END")
		if end < 0 {
			end, st.pem = len(s), true
		} else {
			end += body
		}
		redactBody(&e, s, body, end)
		from = end
	}
}

// pemContinued redacts the start of an argument that continues a PEM
// private key, up to its -----END.
func (st *state) pemContinued(s string) string {
	end := strings.Index(s, "-----END")
	if end < 0 {
		return replaceAll(s)
	}
	st.pem = false
	e := edit{s: s}
	redactBody(&e, s, 0, end)
	return e.result()
}

// redactBody replaces s[i:j], the spaces around it left out.
func redactBody(e *edit, s string, i, j int) {
	for i < j && isSpace(s[i]) {
		i++
	}
	for j > i && isSpace(s[j-1]) {
		j--
	}
	if i < j && !isRedacted(s[i:j]) {
		e.replace(i, j, Marker)
	}
}
