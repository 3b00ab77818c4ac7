package redact

// The pre-filter: one pass over the text that looks only at trigger bytes
// and a few bytes around each, and says which detectors could match. It is
// generic over string and []byte so that RedactJSON can run it on the raw
// JSON without copying it.

type text interface{ ~string | ~[]byte }

// Detector bits, set by triggers.
const (
	bitPEM       uint32 = 1 << iota // -----BEGIN
	bitAssign                       // a secret-named key before = or :
	bitFlag                         // --password VALUE, -storepass VALUE
	bitShort                        // -pVALUE (mysql), -p VALUE (sshpass), -a VALUE (redis-cli)
	bitAWSID                        // AKIA…
	bitAWSSecret                    // aws_secret_access_key VALUE
	bitGCP                          // AIza…
	bitGitHub                       // ghp_…, github_pat_…
	bitGitLab                       // glpat-…
	bitSlack                        // xoxb-…
	bitSlackHook                    // hooks.slack.com/services/…
	bitSK                           // sk-…, sk-ant-…
	bitGovkit                       // gk_…
	bitJWT                          // eyJ….eyJ….…
	bitURL                          // scheme://user:PASS@host
	bitBearer                       // Bearer TOKEN
)

// triggerByte marks the bytes at which triggers looks further.
var triggerByte = [256]bool{
	'=': true, ':': true, '-': true, '_': true, '.': true, '@': true,
	'A': true, 'B': true, 'J': true,
}

// triggers returns the detectors that could match in s.
func triggers[T text](s T) uint32 {
	var bits uint32
	shortChecked := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !triggerByte[c] {
			continue
		}
		switch c {
		case '=', ':':
			if bits&bitAssign == 0 && secretKeyBefore(s, i) {
				bits |= bitAssign
			}
		case '-':
			switch {
			case i+1 < len(s) && s[i+1] == '-':
				if hasPrefixAt(s, i, "-----BEGIN ") {
					bits |= bitPEM
				} else if wordStart(s, i) && secretFlagAt(s, i) {
					bits |= bitFlag
				}
			case wordStart(s, i):
				if i+1 < len(s) && (s[i+1] == 'p' || s[i+1] == 'a') && (i+2 == len(s) || !isNameByte(s[i+2])) {
					// "-p" or "-a" followed by a value or a space: a
					// password only for a few commands (bitShort's
					// detector checks which); mkdir -p is not.
					if i+2 < len(s) && !isSpace(s[i+2]) {
						bits |= bitShort
					} else if !shortChecked {
						shortChecked = true
						if contains(s, "sshpass") || contains(s, "redis-cli") {
							bits |= bitShort
						}
					}
				} else if i+2 < len(s) && (s[i+1] == 'p' || s[i+1] == 'a') && isNameByte(s[i+2]) {
					// -pVALUE, or a long flag such as -password.
					bits |= bitShort
					if secretFlagAt(s, i) {
						bits |= bitFlag
					}
				} else if secretFlagAt(s, i) {
					bits |= bitFlag
				}
			default:
				switch {
				case i >= 2 && s[i-2] == 's' && s[i-1] == 'k' && (i == 2 || !isAlnum(s[i-3])):
					bits |= bitSK
				case i >= 4 && s[i-4] == 'x' && s[i-3] == 'o' && s[i-2] == 'x':
					bits |= bitSlack
				case i >= 4 && (s[i-4] == 'g' && s[i-3] == 'l' || i >= 5 && s[i-5] == 'g' && s[i-4] == 'l'):
					bits |= bitGitLab // glpat-, gldt-, glrt-
				}
			}
		case '_':
			switch {
			case i >= 3 && s[i-3] == 'g' && s[i-2] == 'h' && (i == 3 || !isAlnum(s[i-4])):
				bits |= bitGitHub // ghp_ gho_ ghu_ ghs_ ghr_
			case i >= 6 && hasPrefixAt(s, i-6, "github_pat_"):
				bits |= bitGitHub
			case i >= 2 && s[i-2] == 'g' && s[i-1] == 'k':
				bits |= bitGovkit
			case i >= 3 && hasPrefixFoldAt(s, i-3, "aws_secret_access_key"):
				bits |= bitAWSSecret
			}
		case '.':
			if i >= 5 && hasPrefixAt(s, i-5, "hooks.slack.com/services/") {
				bits |= bitSlackHook
			}
		case '@':
			if i > 0 {
				bits |= bitURL
			}
		case 'A':
			if i+3 < len(s) {
				switch string(s[i+1 : i+4]) {
				case "KIA", "SIA", "BIA", "CCA":
					bits |= bitAWSID
				case "Iza":
					bits |= bitGCP
				}
			}
		case 'B':
			if hasPrefixAt(s, i, "Bearer ") {
				bits |= bitBearer
			}
		case 'J':
			if i >= 2 && s[i-2] == 'e' && s[i-1] == 'y' {
				bits |= bitJWT
			}
		}
	}
	return bits
}

// secretKeyBefore reports whether the key before the separator at i (= or
// :) names a secret.
func secretKeyBefore[T text](s T, i int) bool {
	ks, ke, _, ok := keyBefore(s, i)
	if !ok {
		return false
	}
	return keyKind(s[ks:ke], false) != ""
}

// keyBefore finds the key before the separator at i: it skips spaces, a
// closing quote (quoted tells), and for '=' a ':' (":=") or '=' ("=="). ok
// is false when there is no key, when the key is in a URL's userinfo
// ("//user:"), or when the separator is ':' followed by '=' (the '=' is
// the separator then).
func keyBefore[T text](s T, i int) (start, end int, quoted, ok bool) {
	if s[i] == ':' && i+1 < len(s) && s[i+1] == '=' {
		return 0, 0, false, false
	}
	k := i
	if s[i] == '=' && k > 0 && (s[k-1] == ':' || s[k-1] == '=' || s[k-1] == '!') {
		if s[k-1] != ':' {
			return 0, 0, false, false // "==" or "!=": a comparison's second byte
		}
		k--
	}
	for k > 0 && (s[k-1] == ' ' || s[k-1] == '\t') {
		k--
	}
	if k > 0 && (s[k-1] == '"' || s[k-1] == '\'') {
		quoted = true
		k--
	}
	end = k
	for k > 0 && end-k < maxValueLookback && isKeyByte(s[k-1]) {
		k--
	}
	if k == end {
		return 0, 0, false, false
	}
	if s[i] == ':' && k >= 2 && s[k-1] == '/' && s[k-2] == '/' {
		return 0, 0, false, false // scheme://user:pass@ is bitURL's
	}
	return k, end, quoted, true
}

// secretFlagAt reports whether the flag at i ("--name" or "-name") names a
// secret and takes a value.
func secretFlagAt[T text](s T, i int) bool {
	ns, ne := flagName(s, i)
	return ne-ns > 1 && flagKind(s[ns:ne]) != ""
}

// flagName returns the name of the flag at i, after its dashes.
func flagName[T text](s T, i int) (start, end int) {
	j := i
	for j < len(s) && j-i < 2 && s[j] == '-' {
		j++
	}
	k := j
	for k < len(s) && k-j < maxValueLookback && (isNameByte(s[k]) || s[k] == '-' || s[k] == '_' || s[k] == '.') {
		k++
	}
	return j, k
}

// keyKind returns the kind of secret a key or flag name names, or "". The
// name is compared without case and without its separators ('_', '-',
// '.'), by its end: db_password, PGPASSWORD, client-secret, X-Api-Key,
// aws_secret_access_key, AccountKey and Authorization all name secrets;
// password_file, token_type, secret_id and max_tokens do not. flag says the
// name is a command-line flag's.
func keyKind[T text](key T, flag bool) string {
	// Leading dashes and a $ are not part of the name.
	for len(key) > 0 && (key[0] == '-' || key[0] == '$') {
		key = key[1:]
	}
	var buf [maxValueLookback]byte
	n := 0
	for i := 0; i < len(key) && n < len(buf); i++ {
		c := key[i]
		switch {
		case c >= 'A' && c <= 'Z':
			buf[n] = c + 'a' - 'A'
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			buf[n] = c
		default:
			continue
		}
		n++
	}
	c := buf[:n]
	switch {
	case n == 0:
		return ""
	case endsWith(c, "password") || endsWith(c, "passwd") || endsWith(c, "passphrase"):
		return KindPassword
	case endsWith(c, "secretaccesskey"):
		return KindAWSSecretKey
	case endsWith(c, "accountkey") || endsWith(c, "sharedaccesskey"):
		return KindAzureKey
	case endsWith(c, "authorization"):
		return KindAuthorization
	case endsWith(c, "privatekey"):
		return KindPrivateKey
	case endsWith(c, "apikey"):
		return KindAPIKey
	case endsWith(c, "secret") || endsWith(c, "secretkey") || endsWith(c, "accesskey") ||
		endsWith(c, "credential") || endsWith(c, "credentials"):
		return KindSecret
	case endsWith(c, "token"):
		return KindToken
	}
	// Short names, only as a whole name or after a separator: pass and pwd
	// end too many words (bypass, compass) and PWD is the shell's working
	// directory.
	last := lastSegment(key)
	switch {
	case equalFold(last, "pwd"):
		if string(key) == "PWD" || string(key) == "OLDPWD" {
			return ""
		}
		return KindPassword
	case equalFold(last, "pass"):
		return KindPassword
	case flag && (endsWith(c, "storepass") || endsWith(c, "keypass") || string(c) == "passin" || string(c) == "passout"):
		return KindPassword // keytool -storepass, openssl -passin
	}
	return ""
}

// flagKind is keyKind for a flag name, without the boolean flags that end
// like a secret's: --no-password, --ask-pass, --with-token, --password-stdin
// (which ends in stdin anyway).
func flagKind[T text](name T) string {
	for _, p := range [...]string{"no-", "no_", "ask-", "ask_", "with-", "prompt-", "use-"} {
		if hasPrefixFoldAt(name, 0, p) {
			return ""
		}
	}
	return keyKind(name, true)
}

// lastSegment is key after its last '_', '-' or '.'.
func lastSegment[T text](key T) T {
	for i := len(key) - 1; i >= 0; i-- {
		if c := key[i]; c == '_' || c == '-' || c == '.' {
			return key[i+1:]
		}
	}
	return key
}

func endsWith(b []byte, suffix string) bool {
	return len(b) >= len(suffix) && string(b[len(b)-len(suffix):]) == suffix
}

func hasPrefixAt[T text](s T, i int, prefix string) bool {
	return i >= 0 && len(s)-i >= len(prefix) && string(s[i:i+len(prefix)]) == prefix
}

// hasPrefixFoldAt is hasPrefixAt ignoring ASCII case; prefix is lowercase.
func hasPrefixFoldAt[T text](s T, i int, prefix string) bool {
	if i < 0 || len(s)-i < len(prefix) {
		return false
	}
	for j := 0; j < len(prefix); j++ {
		if lower(s[i+j]) != prefix[j] {
			return false
		}
	}
	return true
}

func equalFold[T text](s T, lowerWord string) bool {
	return len(s) == len(lowerWord) && hasPrefixFoldAt(s, 0, lowerWord)
}

func contains[T text](s T, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i] == sub[0] && string(s[i:i+len(sub)]) == sub {
			return true
		}
	}
	return false
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// wordStart reports whether i starts a shell word (or a JSON string).
func wordStart[T text](s T, i int) bool {
	if i == 0 {
		return true
	}
	switch s[i-1] {
	case ' ', '\t', '\n', '\r', '"', '\'', '(', '`':
		return true
	}
	return false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// isNameByte is a letter or digit.
func isNameByte(c byte) bool { return isAlnum(c) }

// isKeyByte is a byte of a key: letters, digits, '_', '-', '.'.
func isKeyByte(c byte) bool { return isAlnum(c) || c == '_' || c == '-' || c == '.' }
