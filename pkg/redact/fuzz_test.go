package redact

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// genSecret makes a secret of one of the built-in formats from seed, and
// returns the text that holds it and the part that must not survive.
func genSecret(kind uint8, seed []byte) (text, secret string) {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	const b64u = alnum + "-_"
	// rnd draws n characters of alphabet from seed; the first three are
	// an upper, a lower and a digit, so the token looks random.
	pos := 0
	rnd := func(n int, alphabet string) string {
		var b strings.Builder
		for i := range n {
			var c byte
			if pos < len(seed) {
				c = seed[pos]
			} else {
				c = byte(pos*31 + 7)
			}
			pos++
			switch {
			case i == 0 && strings.ContainsRune(alphabet, 'A'):
				b.WriteByte('A' + c%26)
			case i == 1 && strings.ContainsRune(alphabet, 'a'):
				b.WriteByte('a' + c%26)
			case i == 2 && strings.ContainsRune(alphabet, '0'):
				b.WriteByte('0' + c%10)
			default:
				b.WriteByte(alphabet[int(c)%len(alphabet)])
			}
		}
		return b.String()
	}
	upper := "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	switch kind % 14 {
	case 0:
		s := rnd(64, alnum+"+/")
		return "-----BEGIN RSA PRIVATE KEY-----\n" + s + "\n-----END RSA PRIVATE KEY-----", s
	case 1:
		s := "AKIA" + rnd(16, upper)
		return s, s
	case 2:
		s := "ghp_" + rnd(36, alnum)
		return s, s
	case 3:
		s := "glpat-" + rnd(20, b64u)
		return s, s
	case 4:
		s := "xoxb-" + rnd(24, alnum)
		return s, s
	case 5:
		s := "sk-proj-" + rnd(48, b64u)
		return s, s
	case 6:
		s := "sk-ant-api03-" + rnd(40, b64u)
		return s, s
	case 7:
		s := "gk_" + rnd(43, b64u)
		return s, s
	case 8:
		s := "eyJhbGciOiJIUzI1NiJ9.eyJ" + rnd(20, b64u) + "." + rnd(30, b64u)
		return s, s
	case 9:
		s := rnd(16, alnum)
		return "postgres://app:" + s + "@db/x", s
	case 10:
		s := rnd(12, alnum+"!%^*")
		return "PGPASSWORD=" + s, s
	case 11:
		s := rnd(12, alnum)
		return "mysql -uroot -p" + s, s
	case 12:
		s := "AIza" + rnd(35, b64u)
		return s, s
	default:
		s := rnd(20, alnum)
		return "Authorization: Bearer " + s, s
	}
}

// FuzzRedact checks properties of Redact and RedactJSON on any input:
// no panic; valid UTF-8 stays valid; redacting the output again changes
// nothing; a generated secret placed in the text (between spaces) never
// survives, whatever surrounds it; RedactJSON keeps valid JSON valid.
func FuzzRedact(f *testing.F) {
	for _, c := range readCorpus(f) {
		f.Add(c.Input, uint8(len(c.Input)), []byte(c.Input))
	}
	f.Add(`{"password":"x","a":["mysql","-px"]}`, uint8(3), []byte("seed"))
	r := New()
	f.Fuzz(func(t *testing.T, s string, kind uint8, seed []byte) {
		out, kinds := r.Redact(s)
		if (kinds == nil) != (out == s) {
			t.Fatalf("Redact(%q) = %q with kinds %v", s, out, kinds)
		}
		if utf8.ValidString(s) && !utf8.ValidString(out) {
			t.Fatalf("Redact(%q) = %q: not valid UTF-8", s, out)
		}
		if again, k := r.Redact(out); again != out || k != nil {
			t.Fatalf("not idempotent: Redact(%q) = %q, then %q %v", s, out, again, k)
		}

		text, secret := genSecret(kind, seed)
		if strings.Contains(s, secret) {
			return // the secret's text is in s already, outside any format
		}
		half := len(s) / 2
		in := s[:half] + " " + text + " " + s[half:]
		if out, _ := r.Redact(in); strings.Contains(out, secret) {
			t.Fatalf("secret %q survived in Redact(%q) = %q", secret, in, out)
		}

		raw := json.RawMessage(s)
		outJSON, _ := r.RedactJSON(raw)
		if json.Valid(raw) {
			if !json.Valid(outJSON) {
				t.Fatalf("RedactJSON(%s) = %s: not valid JSON", raw, outJSON)
			}
			if again, k := r.RedactJSON(outJSON); string(again) != string(outJSON) || k != nil {
				t.Fatalf("RedactJSON not idempotent: %s → %s → %s %v", raw, outJSON, again, k)
			}
		}
		quoted, _ := json.Marshal(in)
		if out, _ := r.RedactJSON(quoted); strings.Contains(string(out), secret) {
			t.Fatalf("secret %q survived in RedactJSON(%s) = %s", secret, quoted, out)
		}
	})
}
