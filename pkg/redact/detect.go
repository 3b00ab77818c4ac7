package redact

import (
	"regexp"
	"strings"
)

// Detector order: when two detectors find the same bytes, the lower order
// names the marker. Formats come first (a GitHub token in password=… is
// recorded as github_token), then the rules that go by a key or a flag,
// then the extra patterns.
const (
	orderURL = 100 + iota
	orderAssign
	orderFlag
	orderShort
	orderExtra
)

// format is a secret recognised by its shape. The regular expression runs
// only when triggers saw its anchor (bit). The secret is the group named
// "secret", or the whole match. The bytes just before and after the whole
// match must not be token bytes (before, after), since RE2 has no
// look-around; check, when set, vets the secret.
type format struct {
	bit    uint32
	kind   string
	re     *regexp.Regexp
	secret int
	before func(byte) bool
	after  func(byte) bool
	check  func(string) bool
}

func isTokenByte(c byte) bool  { return isAlnum(c) || c == '_' || c == '-' }
func isBase64Byte(c byte) bool { return isAlnum(c) || c == '/' || c == '+' || c == '=' }
func isToken68Byte(c byte) bool {
	return isTokenByte(c) || c == '.' || c == '~' || c == '+' || c == '/' || c == '='
}

// mixed reports whether s has a digit and a letter: keys and tokens are
// random, while hyphenated words (sk-learn-release-notes) are not.
func mixed(s string) bool {
	var digit, letter bool
	for i := 0; i < len(s); i++ {
		c := s[i]
		digit = digit || c >= '0' && c <= '9'
		letter = letter || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	return digit && letter
}

// random reports whether s has upper and lower case letters and a digit.
func random(s string) bool {
	var digit, up, low bool
	for i := 0; i < len(s); i++ {
		c := s[i]
		digit = digit || c >= '0' && c <= '9'
		up = up || c >= 'A' && c <= 'Z'
		low = low || c >= 'a' && c <= 'z'
	}
	return digit && up && low
}

func newFormat(bit uint32, kind, expr string, before, after func(byte) bool, check func(string) bool) format {
	re := regexp.MustCompile(expr)
	secret := max(re.SubexpIndex("secret"), 0)
	return format{bit: bit, kind: kind, re: re, secret: secret, before: before, after: after, check: check}
}

// formats are the built-in secret shapes (issue 13 "Redaction before
// sealing"), most specific first.
var formats = []format{
	// PEM private keys (RSA, EC, OPENSSH, ENCRYPTED, PGP …), also inside a
	// GCP service-account JSON. The markers stay; the body goes, up to the
	// END line or, for a key cut short (a truncated result), to the end.
	newFormat(bitPEM, KindPrivateKey,
		`-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?P<secret>(?s:.*?))(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\z)`,
		nil, nil, nil),
	newFormat(bitAWSID, KindAWSAccessKeyID, `(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}`, isAlnum, isAlnum, nil),
	// aws configure set aws_secret_access_key VALUE; the = and : forms are
	// assignments.
	newFormat(bitAWSSecret, KindAWSSecretKey, `(?i:aws_secret_access_key)["']?[ \t]+(?P<secret>[A-Za-z0-9/+]{40})`,
		isAlnum, isBase64Byte, nil),
	newFormat(bitGCP, KindGCPAPIKey, `AIza[0-9A-Za-z_-]{35}`, isTokenByte, isTokenByte, nil),
	newFormat(bitGitHub, KindGitHubToken, `gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,244}`, isAlnum, isAlnum, nil),
	newFormat(bitGitLab, KindGitLabToken, `gl(?:pat|dt|rt|ptt|cbt|soat|oas)-[A-Za-z0-9_-]{20,}`, isAlnum, nil, nil),
	newFormat(bitSlack, KindSlackToken, `xox[abprs]-[A-Za-z0-9-]{10,}`, isAlnum, nil, mixed),
	newFormat(bitSlackHook, KindSlackWebhook, `hooks\.slack\.com/services/(?P<secret>[A-Za-z0-9_/-]{8,})`, nil, nil, nil),
	newFormat(bitSK, KindAnthropicKey, `sk-ant-[A-Za-z0-9_-]{20,}`, isAlnum, nil, random),
	newFormat(bitSK, KindOpenAIKey, `sk-[A-Za-z0-9_-]{20,}`, isAlnum, nil, random),
	newFormat(bitGovkit, KindGovkitToken, `gk_[A-Za-z0-9_-]{43}`, isTokenByte, isTokenByte, nil),
	newFormat(bitJWT, KindJWT, `eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`, isTokenByte, nil, nil),
	// A bearer token outside an Authorization header (which is an
	// assignment): a random-looking token68 value.
	newFormat(bitBearer, KindAuthorization, `Bearer[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)`, isAlnum, isToken68Byte, mixed),
}

// findBuiltin adds the built-in detectors' finds in s, for the detectors
// whose bits are set.
func findBuiltin(s string, bits uint32, spans *spanList) {
	for order := range formats {
		f := &formats[order]
		if bits&f.bit == 0 {
			continue
		}
		for _, m := range f.re.FindAllStringSubmatchIndex(s, -1) {
			if f.before != nil && m[0] > 0 && f.before(s[m[0]-1]) {
				continue
			}
			if f.after != nil && m[1] < len(s) && f.after(s[m[1]]) {
				continue
			}
			start, end := m[2*f.secret], m[2*f.secret+1]
			if start < 0 || (f.check != nil && !f.check(s[start:end])) {
				continue
			}
			spans.add(s, start, end, f.kind, order)
		}
	}
	if bits&bitURL != 0 {
		findURLPasswords(s, spans)
	}
	if bits&bitAssign != 0 {
		findAssignments(s, spans)
	}
	if bits&bitFlag != 0 {
		findFlags(s, spans)
	}
	if bits&bitShort != 0 {
		findShortFlags(s, spans)
	}
}

// findURLPasswords finds the password of scheme://user:PASS@host: the
// user stays. A password may hold an unescaped @; the last one before the
// path ends it. Written out rather than as a regular expression: one
// without a literal prefix costs a pass per starting byte.
func findURLPasswords(s string, spans *spanList) {
	for i := 0; i+3 <= len(s); {
		k := strings.Index(s[i:], "://")
		if k < 0 {
			return
		}
		k += i
		i = k + 3
		// A scheme: a letter, then letters, digits, + . -
		j := k
		for j > 0 && (isAlnum(s[j-1]) || s[j-1] == '+' || s[j-1] == '.' || s[j-1] == '-') {
			j--
		}
		if j == k || !isLetter(s[j]) {
			continue
		}
		// The authority, up to the path, query, fragment or a space or quote.
		end := i
		for end < len(s) && !isSpace(s[end]) && strings.IndexByte("/?#'\"", s[end]) < 0 {
			end++
		}
		at := strings.LastIndexByte(s[i:end], '@')
		if at < 0 {
			continue
		}
		at += i
		colon := strings.IndexByte(s[i:at], ':')
		if colon < 0 {
			continue
		}
		spans.add(s, i+colon+1, at, KindURLPassword, orderURL)
		i = end
	}
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// findAssignments finds the values of secret-named keys: password=…,
// PGPASSWORD=…, MYSQL_PWD=…, --password=…, token: …, "api_key": "…",
// Password=…; in connection strings, Authorization: Bearer ….
func findAssignments(s string, spans *spanList) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '=' && c != ':' {
			continue
		}
		ks, ke, quoted, ok := keyBefore(s, i)
		if !ok {
			continue
		}
		kind := keyKind(s[ks:ke], false)
		if kind == "" {
			continue
		}
		j := i + 1
		if c == '=' && j < len(s) && (s[j] == '>' || s[j] == '=') {
			j++ // => (PHP, Ruby), ==
		}
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		if kind == KindAuthorization {
			if vs, ve, ok := headerValue(s, j, quoted); ok {
				spans.add(s, vs, ve, kind, orderAssign)
				i = ve - 1 // the value is redacted whole: no need to read it again
			}
			continue
		}
		vs, ve, ok := assignedValue(s, j, quoted, c == ':' && j == i+1)
		if !ok {
			continue
		}
		if s[vs] == '/' && equalFold(lastSegment(s[ks:ke]), "pwd") {
			continue // a working directory, as in env's output
		}
		spans.add(s, vs, ve, kind, orderAssign)
		i = ve - 1
	}
}

// assignedValue returns the value at j, after a key and its separator.
// A quoted value is what the quotes hold; an unquoted one runs to a space,
// a quote or one of & ; (query strings, connection strings). Nothing is a
// value when it is a variable reference ($PW, ${{ secrets.X }}: not the
// secret itself), a JSON null or boolean after a quoted key, or when a quote
// right after "key:" closes the string the key is in (grep "password:").
func assignedValue(s string, j int, quotedKey, glued bool) (start, end int, ok bool) {
	if j >= len(s) {
		return 0, 0, false
	}
	if q := s[j]; q == '"' || q == '\'' || q == '`' {
		if glued && !quotedKey {
			return 0, 0, false
		}
		k := closingQuote(s, j)
		if k < 0 || k == j+1 || q != '\'' && isVarRef(s[j+1:k]) {
			return 0, 0, false
		}
		return j + 1, k, true
	}
	k := j
	for k < len(s) && !isValueStop(s[k]) && !(quotedKey && (s[k] == ',' || s[k] == '}' || s[k] == ']')) {
		k++
	}
	v := s[j:k]
	if k == j || isVarRef(v) || isRelPath(v) || quotedKey && (v == "null" || v == "true" || v == "false") {
		return 0, 0, false
	}
	return j, k, true
}

// isRelPath reports whether v is a relative or home path, as in
// --from-file=password=./pw.txt: the file holds the secret, v does not.
func isRelPath(v string) bool {
	return strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") || strings.HasPrefix(v, "~/")
}

// closingQuote returns the index of the quote closing the one at j, or -1.
func closingQuote(s string, j int) int {
	q := s[j]
	for k := j + 1; k < len(s); k++ {
		switch s[k] {
		case q:
			return k
		case '\\':
			if q == '"' {
				k++
			}
		}
	}
	return -1
}

func isValueStop(c byte) bool {
	return isSpace(c) || c == '&' || c == ';' || c == '"' || c == '\'' || c == '`'
}

// isVarRef reports whether v names a variable instead of holding a value:
// $NAME, ${NAME}, ${{ … }}, $(command).
func isVarRef(v string) bool {
	if len(v) < 2 || v[0] != '$' {
		return false
	}
	c := v[1]
	return c == '{' || c == '(' || c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

// headerValue returns the credentials of an Authorization header value at
// j: the scheme (Bearer, Basic, token …) stays readable.
func headerValue(s string, j int, quotedKey bool) (start, end int, ok bool) {
	if j >= len(s) {
		return 0, 0, false
	}
	var vs, ve int
	if q := s[j]; q == '"' || q == '\'' {
		k := closingQuote(s, j)
		if k < 0 {
			return 0, 0, false
		}
		vs, ve = j+1, k
	} else {
		k := j
		for k < len(s) && s[k] != '\n' && s[k] != '\r' && s[k] != '"' && s[k] != '\'' && !(quotedKey && (s[k] == ',' || s[k] == '}')) {
			k++
		}
		vs, ve = j, k
	}
	for ve > vs && (s[ve-1] == ' ' || s[ve-1] == '\t') {
		ve--
	}
	// A scheme: a word, then spaces, then the credentials.
	k := vs
	for k < ve && (isAlnum(s[k]) || s[k] == '-') {
		k++
	}
	if k > vs && k < ve && (s[k] == ' ' || s[k] == '\t') {
		for k < ve && (s[k] == ' ' || s[k] == '\t') {
			k++
		}
		vs = k
	}
	if ve <= vs || isVarRef(s[vs:ve]) {
		return 0, 0, false
	}
	return vs, ve, true
}

// findFlags finds the values of secret-named flags given as the next word:
// --password VALUE, --db-password 'VALUE', -storepass VALUE (keytool),
// -passin pass:VALUE (openssl). The = form is an assignment. The next word
// is no value when it is another flag, a variable reference, a redirection
// or openssl's env:/file:/fd:/stdin.
func findFlags(s string, spans *spanList) {
	for i := 0; i < len(s); i++ {
		if s[i] != '-' || !wordStart(s, i) {
			continue
		}
		ns, ne := flagName(s, i)
		if ne-ns < 2 {
			continue
		}
		kind := flagKind(s[ns:ne])
		i = ne - 1
		if kind == "" || ne >= len(s) || !isSpace(s[ne]) && s[ne] != '\\' {
			continue
		}
		j := skipBlanks(s, ne)
		vs, ve, ok := word(s, j)
		if !ok {
			continue
		}
		v := s[vs:ve]
		switch {
		case v[0] == '-' || v[0] == '<' || v[0] == '>' || v[0] == '|' || isVarRef(v):
			continue
		case strings.HasPrefix(v, "pass:"):
			vs += len("pass:")
		case strings.HasPrefix(v, "env:") || strings.HasPrefix(v, "file:") || strings.HasPrefix(v, "fd:") || v == "stdin":
			continue
		}
		spans.add(s, vs, ve, kind, orderFlag)
	}
}

// skipBlanks skips spaces, tabs and backslash-newline continuations.
func skipBlanks(s string, j int) int {
	for j < len(s) {
		switch {
		case s[j] == ' ' || s[j] == '\t':
			j++
		case s[j] == '\\' && j+1 < len(s) && s[j+1] == '\n':
			j += 2
		default:
			return j
		}
	}
	return j
}

// word returns the shell word at j, without its quotes. An unterminated
// quote runs to the end of s (a secret cut short is still a secret).
func word(s string, j int) (start, end int, ok bool) {
	if j >= len(s) || isSpace(s[j]) {
		return 0, 0, false
	}
	if q := s[j]; q == '"' || q == '\'' {
		k := closingQuote(s, j)
		if k < 0 {
			k = len(s)
		}
		if k <= j+1 {
			return 0, 0, false
		}
		return j + 1, k, true
	}
	k := j
	for k < len(s) && !isValueStop(s[k]) {
		k++
	}
	return j, k, k > j
}

// Commands whose short flags carry a password.
const (
	cmdMySQL   = 1 << iota // mysql, mysqldump, mysqladmin, mariadb …: -pVALUE (a bare -p prompts)
	cmdSSHPass             // sshpass -p VALUE / -pVALUE
	cmdRedis               // redis-cli -a VALUE
)

// commandOf classifies a command word by its base name.
func commandOf(w string) int {
	w = strings.Trim(w, `"'`)
	if k := strings.LastIndexByte(w, '/'); k >= 0 {
		w = w[k+1:]
	}
	switch {
	case strings.HasPrefix(w, "mysql") || strings.HasPrefix(w, "mariadb"):
		return cmdMySQL
	case w == "sshpass":
		return cmdSSHPass
	case w == "redis-cli":
		return cmdRedis
	}
	return 0
}

// isCommandEnd reports whether c ends a simple command: | ; & newline,
// and ( and backquote, which start a new one.
func isCommandEnd(c byte) bool {
	return c == '|' || c == ';' || c == '&' || c == '\n' || c == '(' || c == '`'
}

// findShortFlags finds passwords in short flags, for the commands that take
// them there: mysql -pVALUE (never -p VALUE, which prompts and names a
// database), sshpass -p VALUE, redis-cli -a VALUE. Other commands' -p and
// -a (mkdir -p, ssh -p 2222, ls -a) are left alone. One pass over the
// words, remembering the commands named so far in the simple command.
func findShortFlags(s string, spans *spanList) {
	ctx := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case isCommandEnd(c):
			ctx = 0
			i++
			continue
		case isSpace(c):
			i++
			continue
		}
		we := i
		for we < len(s) && !isSpace(s[we]) && !isCommandEnd(s[we]) {
			we++
		}
		f := i
		for f < we && (s[f] == '"' || s[f] == '\'') {
			f++
		}
		if ctx != 0 && f+1 < we && s[f] == '-' && (s[f+1] == 'p' || s[f+1] == 'a') {
			letter, j := s[f+1], f+2
			attached := j < we && s[j] != '"' && s[j] != '\''
			if j+1 < we && (s[j] == '"' || s[j] == '\'') && s[j+1] != s[j] && s[j+1] != ',' && s[j+1] != ']' {
				attached = true // -p"secret", not the end of "-p"
			}
			var vs, ve int
			var ok bool
			switch {
			case letter == 'p' && attached && ctx&(cmdMySQL|cmdSSHPass) != 0,
				letter == 'a' && attached && ctx&cmdRedis != 0:
				vs, ve, ok = word(s, j)
			case letter == 'p' && !attached && ctx&cmdSSHPass != 0,
				letter == 'a' && !attached && ctx&cmdRedis != 0:
				vs, ve, ok = word(s, skipBlanks(s, we))
				ok = ok && s[vs] != '-'
			}
			if ok && !isVarRef(s[vs:ve]) {
				spans.add(s, vs, ve, KindPassword, orderShort)
			}
		}
		ctx |= commandOf(s[i:we])
		i = we
	}
}
