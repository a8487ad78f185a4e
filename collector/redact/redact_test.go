package redact

import (
	"slices"
	"strings"
	"testing"
)

const R = Marker

var argvTests = []argvTest{
	// What the line-wide regexps already caught.
	{"nothing secret", []string{"nginx", "-g", "daemon off;"}, []string{"nginx", "-g", "daemon off;"}},
	// An empty value after = (kubeadm's static pods pass such flags): the
	// daemon panicked on it on kind.
	{"empty values", []string{"kube-apiserver", "--service-account-jwks-uri=", "A=", "--x=B="}, []string{"kube-apiserver", "--service-account-jwks-uri=", "A=", "--x=B="}},
	{"--password=", []string{"mysql", "--password=hunter2", "-h", "db"}, []string{"mysql", "--password=" + R, "-h", "db"}},
	{"--token value", []string{"agent", "--token", "abc.def", "--verbose"}, []string{"agent", "--token", R, "--verbose"}},
	// A value may start with a dash: the word after a bare secret flag goes,
	// even when it is the next flag.
	{"bare flag then another flag", []string{"x", "--password", "--verbose"}, []string{"x", "--password", R}},
	{"--password-stdin takes no value", []string{"docker", "login", "--password-stdin", "-u", "me", "reg.io"},
		[]string{"docker", "login", "--password-stdin", "-u", "me", "reg.io"}},
	{"bare flag then a dash-led value", []string{"x", "--token", "-xyz", "--verbose"}, []string{"x", "--token", R, "--verbose"}},
	{"--client-secret", []string{"oidc", "--client-secret=s3cr3t"}, []string{"oidc", "--client-secret=" + R}},
	{"--api-key", []string{"x", "--api-key=k"}, []string{"x", "--api-key=" + R}},
	{"--access-key and --secret next word", []string{"s3", "--access-key", "AKIA1", "--secret", "abc"},
		[]string{"s3", "--access-key", R, "--secret", R}},
	{"--passwd and --pass", []string{"x", "--passwd=a", "--pass", "b", "--bypass=c"}, []string{"x", "--passwd=" + R, "--pass", R, "--bypass=c"}},
	{"file flags keep their path", []string{"kube-apiserver", "--token-auth-file=/etc/tokens.csv", "--tls-private-key-file=/k.pem"},
		[]string{"kube-apiserver", "--token-auth-file=/etc/tokens.csv", "--tls-private-key-file=/k.pem"}},
	{"env assignment *_KEY", []string{"env", "AWS_SECRET_ACCESS_KEY=abc", "API_KEY=x", "HOME=/root", "app"},
		[]string{"env", "AWS_SECRET_ACCESS_KEY=" + R, "API_KEY=" + R, "HOME=/root", "app"}},
	{"env assignment *_TOKEN and *PASSWORD", []string{"GITHUB_TOKEN=ghp_x", "DB_PASSWORD=p"},
		[]string{"GITHUB_TOKEN=" + R, "DB_PASSWORD=" + R}},
	{"env assignment *_PASS *_PWD *APIKEY", []string{"env", "DB_PASS=a", "MYSQL_PWD=b", "X_APIKEY=c", "PASSAGE=d", "app"},
		[]string{"env", "DB_PASS=" + R, "MYSQL_PWD=" + R, "X_APIKEY=" + R, "PASSAGE=d", "app"}},
	{"inside a shell script", []string{"sh", "-c", "DB_PASSWORD=p ./run --token=t --port=80"},
		[]string{"sh", "-c", "DB_PASSWORD=" + R + " ./run --token=" + R + " --port=80"}},
	{"space-separated inside a script", []string{"sh", "-c", "login --password hunter2 && start"},
		[]string{"sh", "-c", "login --password " + R + " && start"}},
	{"url credentials", []string{"git", "clone", "https://user:pa55@example.com/r.git"},
		[]string{"git", "clone", "https://user:" + R + "@example.com/r.git"}},
	{"authorization header", []string{"curl", "-H", "Authorization: Bearer eyJhbGci", "http://x"},
		[]string{"curl", "-H", "Authorization: Bearer " + R, "http://x"}},
	{"empty", nil, nil},

	// What they let through.
	{"mysql -p glued", []string{"mysql", "-u", "root", "-psecret", "db"}, []string{"mysql", "-u", "root", "-p" + R, "db"}},
	{"mysql -p alone prompts, the next word is the database", []string{"mysql", "-p", "db"}, []string{"mysql", "-p", "db"}},
	{"mysqladmin probe", []string{"mysqladmin", "ping", "-h", "127.0.0.1", "-u", "root", "-p$MYSQL_ROOT_PASSWORD"},
		[]string{"mysqladmin", "ping", "-h", "127.0.0.1", "-u", "root", "-p" + R}},
	{"mysqladmin probe in sh -c", []string{"sh", "-c", "mysqladmin ping -h 127.0.0.1 -u root -p${MYSQL_ROOT_PASSWORD}"},
		[]string{"sh", "-c", "mysqladmin ping -h 127.0.0.1 -u root -p" + R}},
	{"mysqldump quoted -p", []string{"sh", "-c", "mysqldump -uroot -p'se cret' db > /x"},
		[]string{"sh", "-c", "mysqldump -uroot -p'" + R + "' db > /x"}},
	{"-p is a port elsewhere", []string{"redis-server", "-p", "6379"}, []string{"redis-server", "-p", "6379"}},
	{"-p glued is kept for other tools", []string{"sh", "-c", "nc -p1234 host 80; mysql -pX"},
		[]string{"sh", "-c", "nc -p1234 host 80; mysql -p" + R}},
	{"redis-cli -a", []string{"redis-cli", "-h", "127.0.0.1", "-a", "secret", "ping"},
		[]string{"redis-cli", "-h", "127.0.0.1", "-a", R, "ping"}},
	{"redis-cli -a in a script", []string{"sh", "-c", "redis-cli -a \"$REDIS_PASSWORD\" ping | grep PONG"},
		[]string{"sh", "-c", "redis-cli -a \"" + R + "\" ping | grep PONG"}},
	{"curl -u keeps the user", []string{"curl", "-u", "user:pass", "http://x/"}, []string{"curl", "-u", "user:" + R, "http://x/"}},
	{"curl --user and -U glued", []string{"curl", "--user", "a:b", "-Uproxy:c", "http://x/"},
		[]string{"curl", "--user", "a:" + R, "-Uproxy:" + R, "http://x/"}},
	{"curl -fsSu cluster", []string{"sh", "-c", "curl -fsSu admin:hunter2 http://x/"}, []string{"sh", "-c", "curl -fsSu admin:" + R + " http://x/"}},
	{"curl -u without password", []string{"curl", "-u", "user", "http://x/"}, []string{"curl", "-u", "user", "http://x/"}},
	{"-u is a user elsewhere", []string{"mysql", "-u", "root:x"}, []string{"mysql", "-u", "root:x"}},
	{"sshpass -p", []string{"sshpass", "-p", "pw", "ssh", "host"}, []string{"sshpass", "-p", R, "ssh", "host"}},
	{"quoted --password= in a script", []string{"sh", "-c", `app --password="x y" --db-password='z'`},
		[]string{"sh", "-c", `app --password="` + R + `" --db-password='` + R + `'`}},
	{"quoted env assignment in a script", []string{"sh", "-c", `export DB_PASSWORD='x'; DB_TOKEN="y" ./run`},
		[]string{"sh", "-c", `export DB_PASSWORD='` + R + `'; DB_TOKEN="` + R + `" ./run`}},
	{"X-Api-Key header", []string{"curl", "-H", "X-Api-Key: k1", "http://x/"}, []string{"curl", "-H", "X-Api-Key: " + R, "http://x/"}},
	{"X-Auth-Token header glued in a script", []string{"sh", "-c", "curl -H 'X-Auth-Token:t1' -H \"X-Api-Key: k2\" http://x/"},
		[]string{"sh", "-c", "curl -H 'X-Auth-Token:" + R + "' -H \"X-Api-Key: " + R + "\" http://x/"}},
	{"Cookie and Proxy-Authorization", []string{"curl", "-H", "Cookie: a=1; b=2", "-H", "Proxy-Authorization: Basic dXNlcjpw"},
		[]string{"curl", "-H", "Cookie: " + R, "-H", "Proxy-Authorization: Basic " + R}},
	{"wget --header=", []string{"wget", "--header=Authorization: Bearer t", "http://x/"},
		[]string{"wget", "--header=Authorization: Bearer " + R, "http://x/"}},
	{"other headers are kept", []string{"curl", "-H", "Accept: application/json", "http://x/"},
		[]string{"curl", "-H", "Accept: application/json", "http://x/"}},
	{"query string", []string{"curl", "http://x/api?a=1&token=t&b=2"}, []string{"curl", "http://x/api?a=1&token=" + R + "&b=2"}},
	{"query string: access_token key sig signature apikey", []string{"wget", "https://h/?access_token=a&key=b&sig=c&signature=d&apikey=e&page=2"},
		[]string{"wget", "https://h/?access_token=" + R + "&key=" + R + "&sig=" + R + "&signature=" + R + "&apikey=" + R + "&page=2"}},
	{"query string in a script", []string{"sh", "-c", "curl -fs 'http://127.0.0.1/healthz?password=p&x=1' || exit 1"},
		[]string{"sh", "-c", "curl -fs 'http://127.0.0.1/healthz?password=" + R + "&x=1' || exit 1"}},
	{"JDBC ;password=", []string{"java", "-Ddb.url=jdbc:sqlserver://db:1433;user=sa;password=p;encrypt=true", "-jar", "app.jar"},
		[]string{"java", "-Ddb.url=jdbc:sqlserver://db:1433;user=sa;password=" + R + ";encrypt=true", "-jar", "app.jar"}},
	{"ODBC ;Pwd=", []string{"isql", "Driver=x;Server=db;Uid=sa;Pwd=p;x;"}, []string{"isql", "Driver=x;Server=db;Uid=sa;Pwd=" + R}},
	{"braced ;Pwd=", []string{"isql", "Server=db;Pwd={p;}}x};Uid=sa"}, []string{"isql", "Server=db;Pwd={" + R + "};Uid=sa"}},
	{"query value up to the next parameter", []string{"curl", "http://x/?token=a&b;c&page=2"}, []string{"curl", "http://x/?token=" + R + "&page=2"}},
	{"JDBC query password", []string{"app", "--url=jdbc:postgresql://db/app?user=a&password=p"},
		[]string{"app", "--url=jdbc:postgresql://db/app?user=a&password=" + R}},
	{"java system property", []string{"java", "-Dspring.datasource.password=p", "-jar", "a.jar"},
		[]string{"java", "-Dspring.datasource.password=" + R, "-jar", "a.jar"}},
	{"JSON body", []string{"curl", "-d", `{"user":"a","password":"p"}`, "http://x/"},
		[]string{"curl", "-d", `{"user":"a","password":"` + R + `"}`, "http://x/"}},
	{"JSON with spaces in a script", []string{"sh", "-c", `curl -d '{"user": "a", "client_secret": "p"}' http://x/`},
		[]string{"sh", "-c", `curl -d '{"user": "a", "client_secret": "` + R + `"}' http://x/`}},
	{"escaped JSON in a double-quoted script", []string{"sh", "-c", `curl -d "{\"token\":\"t\"}" http://x/`},
		[]string{"sh", "-c", `curl -d "{\"token\":\"` + R + `\"}" http://x/`}},
	{"YAML key in a heredoc", []string{"sh", "-c", "cat > /c.yaml <<EOF\nuser: a\npassword: p\nEOF"},
		[]string{"sh", "-c", "cat > /c.yaml <<EOF\nuser: a\npassword: " + R + "\nEOF"}},
	{"Go MySQL DSN", []string{"app", "-dsn", "root:pw@tcp(127.0.0.1:3306)/db?parseTime=true"},
		[]string{"app", "-dsn", "root:" + R + "@tcp(127.0.0.1:3306)/db?parseTime=true"}},
	{"DSN in an env assignment", []string{"sh", "-c", "DATABASE_DSN=app:p@w@tcp(db)/x ./app"},
		[]string{"sh", "-c", "DATABASE_DSN=app:" + R + "@tcp(db)/x ./app"}},
	{"user:pw@host", []string{"lftp", "ftpuser:pw@files.example.com"}, []string{"lftp", "ftpuser:" + R + "@files.example.com"}},
	{"image digests and scp targets are kept", []string{"x", "nginx:1.25@sha256:abc", "git@github.com:org/repo.git", "me@host:/tmp"},
		[]string{"x", "nginx:1.25@sha256:abc", "git@github.com:org/repo.git", "me@host:/tmp"}},
	{"port and an @ in the path", []string{"npm", "view", "http://registry:4873/@scope/pkg"}, []string{"npm", "view", "http://registry:4873/@scope/pkg"}},
	{"redis URL without user", []string{"app", "--redis=redis://:pw@redis:6379/0"}, []string{"app", "--redis=redis://:" + R + "@redis:6379/0"}},
	{"nested script", []string{"sh", "-c", `su app -c "mysql -psecret -e 'select 1'"`},
		[]string{"sh", "-c", `su app -c "mysql -p` + R + ` -e 'select 1'"`}},
	{"helm --set", []string{"helm", "install", "x", "--set", "db.password=p,db.user=u"}, []string{"helm", "install", "x", "--set", "db.password=" + R}},
	{"unbalanced quote", []string{"sh", "-c", "echo it's --token=t"}, []string{"sh", "-c", "echo it's --token=" + R}},
	{"the marker is kept", []string{"mysql", "-p" + R, "--password=" + R, "https://u:" + R + "@h/"},
		[]string{"mysql", "-p" + R, "--password=" + R, "https://u:" + R + "@h/"}},
}

func TestRedactArgv(t *testing.T) { testArgv(t, argvTests) }

// argvTest is a table test of Argv.
type argvTest = struct {
	name     string
	in, want []string
}

// testArgv checks that Argv makes want of in, without changing in, and
// that redacting want again keeps it.
func testArgv(t *testing.T, tests []argvTest) {
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			got := Argv(in)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Argv(%q)\n got  %q\n want %q", tt.in, got, tt.want)
			}
			if !slices.Equal(in, tt.in) {
				t.Errorf("Argv modified its input: %q", in)
			}
			if again := Argv(got); !slices.Equal(again, got) {
				t.Errorf("Argv is not idempotent:\n once  %q\n twice %q", got, again)
			}
		})
	}
}

func TestRedactArgvDoesNotCopyWhenNothingChanges(t *testing.T) {
	in := []string{"sh", "-c", "test -f /tmp/ready"}
	if got := Argv(in); &got[0] != &in[0] {
		t.Error("Argv copied an argv with nothing to redact")
	}
}

// fuzzTemplates hold a secret at each §S or §U: the commands of argvTests with a
// planted secret. A template's secret is planted raw, except in URLs, where
// a password or query value is percent-encoded as it has to be, and in a
// JDBC string, where one with a ';' is {braced}.
var fuzzTemplates = [][]string{
	{"mysql", "-u", "root", "-p§S", "db"},
	{"mysqladmin", "ping", "-h", "127.0.0.1", "-u", "root", "-p§S"},
	{"sh", "-c", "mysqladmin ping -h 127.0.0.1 -u root -p§S && echo ok"},
	{"redis-cli", "-a", "§S", "ping"},
	{"sh", "-c", "redis-cli -h 127.0.0.1 -a §S ping | grep PONG"},
	{"curl", "-u", "admin:§S", "http://x/"},
	{"sh", "-c", "curl -fsSu admin:§S http://x/"},
	{"sh", "-c", `app --password="§D" --verbose`},
	{"sh", "-c", "export DB_PASSWORD='§S'; ./run"},
	{"env", "AWS_SECRET_ACCESS_KEY=§S", "app"},
	{"agent", "--token", "§S", "--verbose"},
	{"curl", "-H", "X-Api-Key: §S", "http://x/"},
	{"sh", "-c", `curl -H "X-Auth-Token: §D" http://x/`},
	{"curl", "-H", "Authorization: Bearer §S", "http://x/"},
	{"curl", "http://x/api?a=1&token=§U&b=2"},
	{"git", "clone", "https://user:§U@example.com/r.git"},
	{"java", "-Ddb.url=jdbc:sqlserver://db:1433;user=sa;password={§B};encrypt=true", "-jar", "app.jar"},
	{"isql", "Driver=x;Server=db;Uid=sa;Pwd={§B}"},
	{"curl", "-d", `{"user":"a","password":"§S"}`, "http://x/"},
	{"sh", "-c", `curl -d '{"api_key": "§S"}' http://x/`},
	{"app", "-dsn", "root:§S@tcp(127.0.0.1:3306)/db"},
	{"sh", "-c", "cat > /c.yaml <<EOF\npassword: §S\nEOF"},
	{"sh", "-c", `su app -c "mysql -p§D -e 'select 1'"`},
}

// planted are the forms a secret takes in a template: §S raw, §U
// percent-encoded, §B in JDBC braces ('}' doubled), §D in shell double
// quotes (\ \$ \` escaped).
func planted(secret string) []string {
	return []string{
		"§S", secret,
		"§U", urlEscape(secret),
		"§B", strings.ReplaceAll(secret, "}", "}}"),
		"§D", strings.NewReplacer(`\`, `\\`, "$", `\$`, "`", "\\`").Replace(secret),
	}
}

// plant returns the template with the secret planted.
func plant(tmpl []string, secret string) []string {
	r := strings.NewReplacer(planted(secret)...)
	out := make([]string, len(tmpl))
	for i, a := range tmpl {
		out[i] = r.Replace(a)
	}
	return out
}

// urlEscape percent-encodes everything but RFC 3986 unreserved characters.
func urlEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteString("%" + strings.ToUpper(string("0123456789abcdef"[c>>4])+string("0123456789abcdef"[c&15])))
	}
	return b.String()
}

// fuzzSecret turns fuzz bytes into a secret: printable ASCII without
// spaces or quotes, 6 to 40 characters.
func fuzzSecret(b []byte) string {
	const alphabet = "!#$%&()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"
	if len(b) > 40 {
		b = b[:40]
	}
	s := make([]byte, 0, 40)
	for _, c := range b {
		s = append(s, alphabet[int(c)%len(alphabet)])
	}
	for len(s) < 6 {
		s = append(s, 'x')
	}
	return string(s)
}

func FuzzRedact(f *testing.F) {
	f.Add(uint8(0), []byte("hunter2"))
	f.Add(uint8(14), []byte("a&b=c;d"))
	f.Add(uint8(19), []byte("p@ss/w:rd"))
	f.Add(uint8(8), []byte(`x\y$z`))
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		tmpl := fuzzTemplates[int(which)%len(fuzzTemplates)]
		secret := fuzzSecret(b)
		in := plant(tmpl, secret)
		got := Argv(in)
		line := strings.Join(got, " ")
		forms := planted(secret)
		for i := 1; i < len(forms); i += 2 {
			if strings.Contains(line, forms[i]) {
				t.Fatalf("secret %q left in %q (from %q)", forms[i], got, in)
			}
		}
		// The rest of the command is kept: the template's first word.
		if got[0] != in[0] {
			t.Fatalf("program %q lost: %q", in[0], got)
		}
		if again := Argv(got); !slices.Equal(again, got) {
			t.Fatalf("not idempotent:\n once  %q\n twice %q", got, again)
		}
	})
}
