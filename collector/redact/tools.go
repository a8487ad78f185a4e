package redact

import "strings"

// tool is a program whose own flags carry secrets.
type tool uint8

const (
	toolOther       tool = iota
	toolMySQL            // -p<password>, glued (-p alone prompts; -p word is a database)
	toolRedis            // -a <password>
	toolCurl             // -u/--user user:password, -U/--proxy-user, -b/--cookie, -E/--cert cert:passphrase
	toolSSHPass          // -p <password>, -p<password>
	toolMongo            // -p <password>, -p<password>
	toolSQLCmd           // -P <password> (sqlcmd, bcp, osql)
	toolLDAP             // -w <password> (ldapsearch, ldapmodify, ...)
	toolLDAPPasswd       // -w <password>, -a <old>, -s <new>
	toolMosquitto        // -P <password>, --pw <password>
	toolZip              // -P <password>
	tool7z               // -p<password>, glued
	toolSMB              // -U user%password; the password after the service (smbclient //h/s PW)
	toolSQLPlus          // user/password@db
	toolHtpasswd         // -b: FILE USER PASSWORD (-n: USER PASSWORD)
	toolRabbit           // add_user USER PASSWORD, change_password USER PASSWORD
	toolRabbitAdmin      // -p <password>
	toolMC               // alias set ALIAS URL ACCESSKEY SECRETKEY
	toolEtcd             // --user user:password
	toolVault            // login TOKEN
	toolOpenSSL          // -k <password> (enc)
)

var tools = map[string]tool{
	"mysql": toolMySQL, "mysqladmin": toolMySQL, "mysqldump": toolMySQL, "mysqlcheck": toolMySQL,
	"mysqlimport": toolMySQL, "mysqlshow": toolMySQL, "mysqlslap": toolMySQL, "mysqlpump": toolMySQL,
	"mariadb": toolMySQL, "mariadb-admin": toolMySQL, "mariadb-dump": toolMySQL, "mariadb-check": toolMySQL,
	"redis-cli": toolRedis, "valkey-cli": toolRedis, "keydb-cli": toolRedis,
	"curl":    toolCurl,
	"sshpass": toolSSHPass,
	"mongo":   toolMongo, "mongosh": toolMongo,
	"sqlcmd": toolSQLCmd, "bcp": toolSQLCmd, "osql": toolSQLCmd,
	"ldapsearch": toolLDAP, "ldapmodify": toolLDAP, "ldapadd": toolLDAP, "ldapdelete": toolLDAP,
	"ldapwhoami": toolLDAP, "ldapcompare": toolLDAP, "ldapmodrdn": toolLDAP, "ldapexop": toolLDAP,
	"ldappasswd":    toolLDAPPasswd,
	"mosquitto_pub": toolMosquitto, "mosquitto_sub": toolMosquitto, "mosquitto_rr": toolMosquitto,
	"zip": toolZip, "unzip": toolZip,
	"7z": tool7z, "7za": tool7z, "7zr": tool7z, "7zz": tool7z,
	"smbclient": toolSMB, "rpcclient": toolSMB, "smbget": toolSMB, "smbcacls": toolSMB, "smbcquotas": toolSMB, "smbtree": toolSMB,
	"sqlplus": toolSQLPlus, "rman": toolSQLPlus, "dgmgrl": toolSQLPlus, "expdp": toolSQLPlus, "impdp": toolSQLPlus, "sqlldr": toolSQLPlus,
	"htpasswd":      toolHtpasswd,
	"rabbitmqctl":   toolRabbit,
	"rabbitmqadmin": toolRabbitAdmin,
	"mc":            toolMC, "mcli": toolMC,
	"etcdctl": toolEtcd,
	"vault":   toolVault, "bao": toolVault,
	"openssl": toolOpenSSL,
}

// toolLengths say which words may name a tool, before the map is asked
// (most words do not): bit n of toolLengths[c] is set when a tool's name
// of n bytes starts with c.
var toolLengths = func() (m [256]uint32) {
	for name := range tools {
		m[name[0]] |= 1 << len(name)
	}
	return m
}()

// toolFlags say, per tool, what the value of each of its flags is. A short
// flag's value is the next word or glued to it (-Ppw); a long flag's the
// next word or after '=' (--user=u:p).
var toolFlags = [...]map[string]pending{
	toolRedis:       {"-a": pendArg},
	toolSSHPass:     {"-p": pendArg},
	toolMongo:       {"-p": pendArg},
	toolSQLCmd:      {"-P": pendArg},
	toolLDAP:        {"-w": pendArg},
	toolLDAPPasswd:  {"-w": pendArg, "-a": pendArg, "-s": pendArg},
	toolMosquitto:   {"-P": pendArg, "--pw": pendArg},
	toolZip:         {"-P": pendArg},
	toolRabbitAdmin: {"-p": pendArg},
	toolOpenSSL:     {"-k": pendArg},
	toolEtcd:        {"--user": pendUser},
	toolCurl: {"-u": pendUser, "--user": pendUser, "-U": pendUser, "--proxy-user": pendUser,
		"-b": pendCookie, "--cookie": pendCookie, "-E": pendUser, "--cert": pendUser, "--proxy-cert": pendUser},
	// The flags of smbclient that take a value, which is no positional
	// argument (the password after the service is one).
	toolSMB: {"-U": pendPct, "--user": pendPct, "-R": pendSkip, "-M": pendSkip, "-L": pendSkip, "-I": pendSkip,
		"-p": pendSkip, "-b": pendSkip, "-d": pendSkip, "-l": pendSkip, "-D": pendSkip, "-T": pendSkip, "-c": pendSkip,
		"-n": pendSkip, "-i": pendSkip, "-W": pendSkip, "-A": pendSkip, "-O": pendSkip, "-s": pendSkip, "-m": pendSkip, "-t": pendSkip},
	toolHtpasswd: {"-C": pendSkip, "-r": pendSkip},
}

// gluedOnly are the short flags whose value is glued to them only: alone
// they take none (mysql -p prompts for the password).
var gluedOnly = [...]string{toolMySQL: "-p", tool7z: "-p", toolOpenSSL: ""}

// toolFlag redacts the flags of the known tools.
func (st *state) toolFlag(w string) (string, bool) {
	if len(w) < 2 {
		return w, false
	}
	if f := gluedOnly[st.tool]; f != "" && len(w) > 2 && w[:2] == f {
		return redactFrom(w, 2), true
	}
	flags := toolFlags[st.tool]
	if w[1] == '-' { // --user=a:b, --user a:b
		name, val, eq := strings.Cut(w, "=")
		k, ok := flags[name]
		switch {
		case !ok:
			return w, false
		case eq:
			return w[:len(name)+1] + value(k, val), true
		}
		st.next = k
		return w, true
	}
	if k, ok := flags[w[:2]]; ok {
		if len(w) == 2 {
			st.next = k
			return w, true
		}
		if k == pendSkip {
			return w, true
		}
		return w[:2] + value(k, w[2:]), true
	}
	switch st.tool {
	case toolCurl:
		if isCurlCluster(w) {
			st.next = pendUser
			if w[len(w)-1] == 'b' {
				st.next = pendCookie
			}
			return w, true
		}
	case toolHtpasswd:
		st.pos.htpasswdFlags(w)
		if c := w[len(w)-1]; c == 'C' || c == 'r' { // -bC 10: the cost is no positional argument
			st.next = pendSkip
		}
	}
	return w, false
}

// isCurlCluster: curl boolean short flags ending in u, U or b (-su,
// -fsSLu), whose value is the next word.
func isCurlCluster(w string) bool {
	last := w[len(w)-1]
	if len(w) < 3 || last != 'u' && last != 'U' && last != 'b' {
		return false
	}
	for _, c := range w[1 : len(w)-1] {
		if !strings.ContainsRune("sSfLkvIigNq#", c) {
			return false
		}
	}
	return true
}

// posTool is a tool whose secret is a positional argument.
type posTool uint8

const (
	posHtpasswd posTool = iota // htpasswd -b FILE USER PASSWORD, -nb USER PASSWORD
	posRabbit                  // rabbitmqctl add_user|change_password|authenticate_user USER PASSWORD
	posMC                      // mc alias set ALIAS URL ACCESSKEY SECRETKEY, mc config host add ...
	posVault                   // vault login TOKEN
	posSMB                     // smbclient //server/share PASSWORD
	posSQLPlus                 // sqlplus user/password@db, connect user/password
	numPosTools
)

// posOf is the positional tool a tool is, if any.
var posOf = map[tool]posTool{
	toolHtpasswd: posHtpasswd, toolRabbit: posRabbit, toolMC: posMC,
	toolVault: posVault, toolSMB: posSMB, toolSQLPlus: posSQLPlus,
}

// tracker follows the positional arguments of one posTool in a command.
type tracker struct {
	on   bool
	args int8 // positional words counted (up to a bound); -1 until the subcommand
	// htpasswd: -b (the password is an argument), -n (no file argument)
	batch, noFile bool
}

// trackers follow every posTool at once: a command names its tool first
// (sudo htpasswd, kubectl exec -- vault login), and an argument may look
// like another tool (htpasswd -b /etc/mysql/users admin PW): each tool
// named keeps counting its arguments until a shell separator.
type trackers struct {
	t   [numPosTools]tracker
	any bool // one is on
}

// start begins following t, when it is a posTool not followed yet.
func (ts *trackers) start(t tool) {
	p, ok := posOf[t]
	if !ok || ts.t[p].on {
		return
	}
	ts.t[p] = tracker{on: true, args: -1}
	if p == posHtpasswd || p == posSQLPlus {
		ts.t[p].args = 0
	}
	ts.any = true
}

func (ts *trackers) on(p posTool) bool { return ts.t[p].on }

// nested is what a quoted part of a word is read with: sqlplus's
// user/password in "sys/pw as sysdba"; the counts go on outside.
func (ts *trackers) nested() trackers {
	var in trackers
	in.t[posSQLPlus].on = ts.t[posSQLPlus].on
	in.any = in.t[posSQLPlus].on
	return in
}

// htpasswdFlags notes htpasswd's -b and -n in a cluster of its flags
// (-nbB, -cb).
func (ts *trackers) htpasswdFlags(w string) {
	t := &ts.t[posHtpasswd]
	for i := 1; i < len(w); i++ {
		c := w[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return
		}
	}
	t.batch = t.batch || strings.IndexByte(w, 'b') > 0
	t.noFile = t.noFile || strings.IndexByte(w, 'n') > 0
}

// subcommands start the count of a posTool's arguments.
var subcommands = map[string]posTool{
	"add_user": posRabbit, "change_password": posRabbit, "authenticate_user": posRabbit,
	"set": posMC, "add": posMC,
	"login": posVault,
}

// positional notes a word that is not a flag (a positional argument, a
// subcommand) and reports whether a tool followed takes it as a secret.
// It also notes the words that arm other rules: login (-p is then a
// password) and config set KEY.
func (st *state) positional(w string) bool {
	switch c := w[0]; {
	case c == '-' || c == ';' || c == '&' || c == '|':
		return false
	case isRedirect(w):
		if strings.Trim(w, "0123456789<>&|") == "" { // > FILE: the file is no argument
			st.next = pendSkip
		}
		return false
	}
	secret := st.pos.any && st.pos.count(w)
	st.keyword(w)
	return secret
}

// keyword notes the words that arm a rule: login (-p is then a password)
// and config set KEY.
func (st *state) keyword(w string) {
	conf := st.conf
	st.conf = false
	switch len(w) {
	case len("login"):
		st.login = st.login || w == "login"
	case len("set"):
		if conf && w == "set" {
			st.next = pendKey
		}
	case len("config"), len("configure"):
		st.conf = w == "config" || w == "configure"
	}
}

// count counts w among the arguments of the tools followed, and reports
// whether one of them takes it as a secret.
func (ts *trackers) count(w string) bool {
	secret := false
	for p := range ts.t {
		t := &ts.t[p]
		if !t.on {
			continue
		}
		if t.args < 0 {
			if sp, ok := subcommands[w]; ok && sp == posTool(p) || p == int(posSMB) && isSMBService(w) {
				t.args = 0
			}
			continue
		}
		switch posTool(p) {
		case posHtpasswd:
			first := int8(2)
			if t.noFile {
				first = 1
			}
			secret = secret || t.batch && t.args >= first
		case posRabbit:
			secret = secret || t.args >= 1
		case posMC:
			secret = secret || t.args >= 3
		case posVault, posSMB:
			secret = secret || strings.IndexByte(w, '=') < 0 && w != "-"
		}
		if t.args < 100 {
			t.args++
		}
	}
	return secret
}

// isSMBService: smbclient's //server/share.
func isSMBService(w string) bool {
	w = unquote(w)
	return strings.HasPrefix(w, "//") || strings.HasPrefix(w, `\\`)
}

// isRedirect: a shell redirection (>/dev/null, 2>&1, <<EOF), not an
// argument. A Marker is an argument.
func isRedirect(w string) bool {
	i := 0
	for i < len(w) && '0' <= w[i] && w[i] <= '9' {
		i++
	}
	return i < len(w) && (w[i] == '>' || w[i] == '<' && !strings.HasPrefix(w[i:], Marker))
}

// userPassword redacts the password of sqlplus's user/password[@db] (of
// rman, expdp, dgmgrl alike): between the first '/' and the last '@'. A
// word without a user before the '/' (/nolog, / as sysdba, a path) or
// starting with '@' (a script) holds none.
func userPassword(w string) string {
	q := 0
	if len(w) > 0 && isQuote(w[0]) {
		q = 1
	}
	slash := strings.IndexByte(w, '/')
	if slash <= q {
		return w
	}
	for i := q; i < slash; i++ {
		if c := w[i]; !isNameChar(c) && c != '$' && c != '#' && c != '"' {
			return w
		}
	}
	end := len(w)
	if at := strings.LastIndexByte(w, '@'); at > slash {
		end = at
	} else if q == 1 && w[len(w)-1] == w[0] && len(w) > slash+1 {
		end = len(w) - 1
	}
	if pw := w[slash+1 : end]; pw == "" || isRedacted(pw) {
		return w
	}
	return w[:slash+1] + Marker + w[end:]
}
