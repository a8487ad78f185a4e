// Package redacttest plants secrets in command lines, for the tests that
// check that none leaves the node: every family of secret that package
// redact knows, with random values, at random places in random scripts
// (exec form, sh -c, nested quotes, heredocs), and the command lines as
// the kernel and the kubelet report them, cut where they cut.
//
// Every planted value starts with Sentinel, which nothing else in a
// planted command holds: a leak of a value's first 4 bytes is a Sentinel
// found in what left, with the 2 bytes after it.
package redacttest

import (
	"strings"
)

// Sentinel starts every planted value.
const Sentinel = "QZ"

// Canary is a word of the planted commands that is no secret: redaction
// keeps it, --argv=none does not.
const Canary = "canaryword"

// A Family is a shape of secret: command lines with §S where its value
// goes.
type Family struct {
	Name string
	// Fragments are commands of a script; §S is the value.
	Fragments []string
	// Alphabet is what a value is made of, MinLen and MaxLen its length
	// (Sentinel included).
	Alphabet       string
	MinLen, MaxLen int
}

const (
	alnum     = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	upperNum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	password  = alnum + "._-+~^%*"
	tokenBody = alnum + "_"
	b64url    = alnum + "-_"
)

// Families are the secret shapes issue 25 listed and their kin.
var Families = []Family{
	{"flag", []string{"app --password §S --verbose", "app --client-secret=§S", "java -Dspring.datasource.password=§S -jar a.jar", "keytool -list -storepass §S"}, password, 8, 32},
	{"env", []string{"SSHPASS=§S sshpass -e ssh h uptime", "REDISCLI_AUTH=§S redis-cli ping", "export DB_PASSWORD=§S", "TS_AUTHKEY=§S tailscale up", "env REGISTRY_CREDS=§S app", "MYSQL_PWD=§S mysql -h db", "PGPASSWORD=§S psql -h db"}, password, 8, 32},
	{"short flag", []string{"mysql -uroot -p§S -e 'select 1'", "redis-cli -a §S ping", "sqlcmd -S db -U sa -P §S -Q 'select 1'", "ldapsearch -x -D cn=admin,dc=x -w §S -b dc=x", "mosquitto_pub -h mq -u me -P §S -t t -m hi", "zip -P §S /tmp/a.zip /etc/hosts", "sshpass -p §S ssh h", "openssl enc -aes-256-cbc -k §S -in f"}, password, 8, 32},
	{"login", []string{"docker login -u me -p §S reg.io", "podman login -u me -p §S reg.io", "helm registry login reg.io -u me -p §S", "skopeo copy --src-creds me:§S docker://a docker://b", "etcdctl --user root:§S get /x"}, password, 8, 32},
	{"positional", []string{"htpasswd -b -c /etc/nginx/.htpasswd admin §S", "htpasswd -nbB admin §S", "rabbitmqctl add_user app §S", "rabbitmqctl change_password app §S", "mc alias set s3 https://s3.example AKEY §S", "vault login §S", "smbclient //srv/share §S -U me", "sqlplus -s system/§S@//db:1521/ORCL @/x.sql", "aws configure set aws_secret_access_key §S"}, password, 8, 32},
	{"user:password", []string{"curl -fsS -u admin:§S http://x/", "smbclient -U me%§S //srv/share", "git clone https://me:§S@git.example/r.git", "psql postgresql://app:§S@db:5432/app -c 'select 1'"}, alnum + "._-~", 8, 32},
	{"header", []string{`curl -fsS -H "Authorization: Bearer §S" http://x/`, `curl -H 'X-Api-Key: §S' http://x/`, `curl -b sessionid=§S http://x/`, `curl -H "Cookie: sid=§S" http://x/`, `wget --header="Authorization: Basic §S" http://x/`}, b64url + ".", 8, 48},
	{"json", []string{`curl -d '{"user":"a","password":"§S"}' http://x/`, `echo '{"auths":{"reg.io":{"auth":"§S"}}}' > /root/.docker/config.json`}, alnum + "._-+", 8, 32},
	{"github token", []string{"git clone https://ghp_§S@github.com/o/r.git", "echo github_pat_§S | gh auth login --with-token", "GH=ghp_§S ./deploy"}, tokenBody, 36, 40},
	{"gitlab slack token", []string{"app --token-from glpat-§S", "notify xoxb-§S"}, b64url, 20, 40},
	{"aws key", []string{"echo AKIA§S"}, upperNum, 16, 16},
	{"vault token", []string{"app hvs.§S", "VAULT=hvs.§S app"}, b64url, 24, 40},
	{"tailscale key", []string{"tailscale up --auth-key=tskey-auth-§S", "up tskey-auth-§S"}, alnum + "-", 16, 40},
	{"jwt", []string{"app --jwt eyJ§S.eyJzdWIiOiIxIn0.c2ln", `curl -H "X-Token: eyJ§S" http://x/`}, b64url, 20, 40},
	{"webhook", []string{"curl -X POST -d @m.json https://hooks.slack.com/services/T00/B00/§S", "notify https://discord.com/api/webhooks/123/§S"}, alnum, 16, 32},
	{"pem", []string{"cat > /k.pem <<EOF\n-----BEGIN RSA PRIVATE KEY-----\n§S\n§S\n-----END RSA PRIVATE KEY-----\nEOF", "printf '%s' '-----BEGIN PRIVATE KEY-----§S-----END PRIVATE KEY-----' > /k"}, alnum + "+/", 40, 64},
}

// filler are the commands around a planted one: no secret, no Sentinel.
var filler = []string{"test -f /tmp/ready", "echo ok", "ls -la /var/run", "grep -q PONG /tmp/out", "sleep 1", "cd /app",
	"export LANG=C", "true", "echo 'all good'", `printf "%s\n" done`}

// Places a planted command can be put in.
var Places = []string{"exec form", "sh -c", "nested quotes", "heredoc", "env"}

// A Planted is a command line with secrets in it.
type Planted struct {
	// Argv is the command line as a pod spec holds it and as the program
	// was started.
	Argv []string
	// Secrets are the values planted.
	Secrets []string
	Family  string
	Place   string
}

// Plant builds a command line of family (an index in Families, modulo
// their number) at place (in Places, modulo) with a value made of
// valueBytes, amid filler commands that fillerSeed picks.
func Plant(family, place int, valueBytes []byte, fillerSeed uint64) Planted {
	f := Families[family%len(Families)]
	frag := f.Fragments[int(fillerSeed%uint64(len(f.Fragments)))]
	secret := value(f, valueBytes)
	cmd := strings.ReplaceAll(frag, "§S", secret)
	pick := func(n int) string { return filler[int(fillerSeed>>(8*n)%uint64(len(filler)))] }
	before := "echo " + Canary + " && " + pick(1)
	after := pick(2)
	p := Planted{Secrets: []string{secret}, Family: f.Name, Place: Places[place%len(Places)]}
	switch p.Place {
	case "exec form":
		if !strings.ContainsAny(cmd, "'\"\n<>|&;") {
			p.Argv = strings.Fields(cmd)
			return p
		}
		p.Place = "sh -c"
		fallthrough
	case "sh -c":
		p.Argv = []string{"sh", "-c", before + " && " + cmd + "; " + after}
	case "nested quotes":
		p.Argv = []string{"sh", "-c", before + ` && su app -c "` + escapeDouble(cmd) + `"; ` + after}
	case "heredoc":
		p.Argv = []string{"sh", "-c", "cat > /tmp/run.sh <<'END'\n" + before + "\n" + cmd + "\n" + after + "\nEND\nsh /tmp/run.sh"}
	case "env":
		p.Argv = []string{"env", "LANG=C", "sh", "-c", before + "\n" + cmd}
	}
	return p
}

// value makes a value of f's alphabet from b: Sentinel, then b's bytes,
// cut or padded to f's lengths.
func value(f Family, b []byte) string {
	v := []byte(Sentinel)
	for _, c := range b {
		if len(v) == f.MaxLen {
			break
		}
		v = append(v, f.Alphabet[int(c)%len(f.Alphabet)])
	}
	for i := 0; len(v) < f.MinLen; i++ {
		v = append(v, f.Alphabet[(i*7+3)%len(f.Alphabet)])
	}
	return string(v)
}

// escapeDouble escapes s for a double-quoted shell string.
func escapeDouble(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`").Replace(s)
}

// Kernel returns argv as the kernel reports it: its first n bytes (the
// arguments and the NUL after each), at most 512, and whether it cut.
func Kernel(argv []string, n int) ([]string, bool) {
	n = min(n, 512)
	var out []string
	for _, a := range argv {
		if len(a) >= n {
			return append(out, a[:n]), true
		}
		out = append(out, a)
		n -= len(a) + 1
	}
	return out, false
}

// ExecSync returns argv as the kubelet's ExecSync uprobe reads it: each
// argument at most 63 bytes.
func ExecSync(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = a[:min(len(a), 63)]
	}
	return out
}

// Leak returns the first secret whose first 4 bytes text holds, and
// where, or "", -1.
func Leak(text string, secrets []string) (string, int) {
	for _, s := range secrets {
		if i := strings.Index(text, s[:4]); i >= 0 {
			return s, i
		}
	}
	return "", -1
}

// HasSentinel reports whether text holds Sentinel: what is not planted
// must not, or Leak could take it for a leak.
func HasSentinel(text string) bool { return strings.Contains(text, Sentinel) }
