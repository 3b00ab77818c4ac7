package redact

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// corpusCase is one line of testdata/corpus.jsonl: made-up but
// format-correct secrets (never real credentials) and look-alikes that are
// not secrets (digests, UUIDs, event ids, -p flags of other commands).
type corpusCase struct {
	Input     string   `json:"input"`
	WantKinds []string `json:"want_kinds"`
	Want      *string  `json:"want"`
}

func readCorpus(t testing.TB) []corpusCase {
	t.Helper()
	f, err := os.Open("testdata/corpus.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []corpusCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var c corpusCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("corpus line %d: %v", n, err)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

func TestCorpus(t *testing.T) {
	r := New()
	var secrets, clean int
	for _, c := range readCorpus(t) {
		got, kinds := r.Redact(c.Input)
		if len(c.WantKinds) == 0 {
			clean++
			if kinds != nil || got != c.Input {
				t.Errorf("false positive: Redact(%q) = %q, %v; want it unchanged", c.Input, got, kinds)
			}
			continue
		}
		secrets++
		if !slices.Equal(kinds, c.WantKinds) {
			t.Errorf("Redact(%q) kinds = %v, want %v (output %q)", c.Input, kinds, c.WantKinds, got)
		}
		if c.Want != nil && got != *c.Want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", c.Input, got, *c.Want)
		}
		if again, k := r.Redact(got); again != got || k != nil {
			t.Errorf("Redact is not idempotent on %q: %q, %v", got, again, k)
		}
	}
	if secrets < 80 || clean < 80 {
		t.Errorf("the corpus holds %d secrets and %d non-secrets; keep at least 80 of each", secrets, clean)
	}
}

func TestRedactJSON(t *testing.T) {
	r := New()
	for _, c := range []struct {
		in, want string
		kinds    []string
	}{
		{`{"a":1}`, `{"a":1}`, nil},
		{`{"password":"hunter2","user":"app"}`, `{"password":"[REDACTED:password]","user":"app"}`, []string{"password"}},
		{`{"Client_Secret": 12345, "n": 1.50e3}`, `{"Client_Secret": "[REDACTED:secret]", "n": 1.50e3}`, []string{"secret"}},
		{`{"headers":{"Authorization":"Bearer abc"},"x":[1,2]}`, `{"headers":{"Authorization":"[REDACTED:authorization]"},"x":[1,2]}`, []string{"authorization"}},
		{`{"token":{"access":"a","refresh":"b"}}`, `{"token":"[REDACTED:token]"}`, []string{"token"}},
		{`{"password":null,"secret":"","token":false,"api_key":[]}`, `{"password":null,"secret":"","token":false,"api_key":[]}`, nil},
		{`{"command":"mysql -uroot -ps3cret db"}`, `{"command":"mysql -uroot -p[REDACTED:password] db"}`, []string{"password"}},
		{`{"argv":["psql","--password","pw1","-h","db"]}`, `{"argv":["psql","--password","[REDACTED:password]","-h","db"]}`, []string{"password"}},
		{`["mysqldump","-u","root","-pXyz9","shop"]`, `["mysqldump","-u","root","-p[REDACTED:password]","shop"]`, []string{"password"}},
		{`["mkdir","-p","dir"]`, `["mkdir","-p","dir"]`, nil},
		{`["sshpass","-p","pw","ssh","h"]`, `["sshpass","-p","[REDACTED:password]","ssh","h"]`, []string{"password"}},
		// Escapes cannot hide a key or a trigger.
		{`{"pass\u0077ord":"x"}`, `{"pass\u0077ord":"[REDACTED:password]"}`, []string{"password"}},
		{`{"url":"https:\/\/hooks.slack.com\/services\/T000\/B000\/XXXXXXXXXXXX"}`, `{"url":"https://hooks.slack.com/services/[REDACTED:slack_webhook]"}`, []string{"slack_webhook"}},
		{`{"note":"line\nPGPASSWORD=x1 psql \"q\""}`, `{"note":"line\nPGPASSWORD=[REDACTED:password] psql \"q\""}`, []string{"password"}},
		{`{"pwd":"/home/u","sha":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}`, `{"pwd":"/home/u","sha":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}`, nil},
		// Not JSON: redacted as text.
		{`{"password":"x"`, `{"password":"[REDACTED:password]"`, []string{"password"}},
	} {
		got, kinds := r.RedactJSON(json.RawMessage(c.in))
		if string(got) != c.want || !slices.Equal(kinds, c.kinds) {
			t.Errorf("RedactJSON(%s)\n got %s %v\nwant %s %v", c.in, got, kinds, c.want, c.kinds)
		}
		if json.Valid([]byte(c.in)) && !json.Valid(got) {
			t.Errorf("RedactJSON(%s) = %s: not valid JSON", c.in, got)
		}
	}
}

func TestParsePattern(t *testing.T) {
	for _, c := range []struct{ in, err string }{
		{"internal_token=itk_[a-z0-9]{32}", ""},
		{"employee_id=(?P<secret>E[0-9]{6})", ""},
		{"noequals", "is not NAME=REGEX"},
		{"Bad-Name=x", "NAME must be a lowercase kind"},
		{"=x", "NAME must be a lowercase kind"},
		{"a=", "REGEX is empty"},
		{"a=(unclosed", "REGEX does not compile: missing closing )"},
		{"a=x*", "matches the empty string"},
	} {
		_, err := ParsePattern(c.in)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("ParsePattern(%q): %v", c.in, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParsePattern(%q) error = %v, want one containing %q", c.in, err, c.err)
		}
	}
}

func TestExtraPatterns(t *testing.T) {
	p1, err := ParsePattern("internal_token=itk_[a-z0-9]{8}")
	if err != nil {
		t.Fatal(err)
	}
	p2, err := ParsePattern("employee_id=emp=(?P<secret>E[0-9]{6})")
	if err != nil {
		t.Fatal(err)
	}
	r := New(p1, p2)
	got, kinds := r.Redact("use itk_abcd1234 for emp=E123456 and PGPASSWORD=x")
	want := "use [REDACTED:internal_token] for emp=[REDACTED:employee_id] and PGPASSWORD=[REDACTED:password]"
	if got != want || !slices.Equal(kinds, []string{"employee_id", "internal_token", "password"}) {
		t.Errorf("got %q %v, want %q", got, kinds, want)
	}
	gotJSON, kinds := r.RedactJSON(json.RawMessage(`{"t":"itk_abcd1234"}`))
	if string(gotJSON) != `{"t":"[REDACTED:internal_token]"}` || !slices.Equal(kinds, []string{"internal_token"}) {
		t.Errorf("RedactJSON = %s %v", gotJSON, kinds)
	}
	// A nil Redactor has the built-in formats.
	var none *Redactor
	if got, _ := none.Redact("PGPASSWORD=x"); got != "PGPASSWORD=[REDACTED:password]" {
		t.Errorf("nil Redactor: %q", got)
	}
}

func TestOverlapsMerge(t *testing.T) {
	r := New()
	// The token is found by two detectors; the format names it.
	got, kinds := r.Redact("GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789")
	if got != "GITHUB_TOKEN=[REDACTED:github_token]" || !slices.Equal(kinds, []string{"github_token"}) {
		t.Errorf("got %q %v", got, kinds)
	}
}

// The common case, text without a secret, allocates nothing.
func TestCleanAllocatesNothing(t *testing.T) {
	r := New()
	s := cleanCommand
	raw := json.RawMessage(`{"command":"kubectl get pods -n prod -o wide","timeout_ms":30000,"cwd":"/srv/app"}`)
	if n := testing.AllocsPerRun(100, func() { r.Redact(s) }); n != 0 {
		t.Errorf("Redact of clean text: %v allocations", n)
	}
	if n := testing.AllocsPerRun(100, func() { r.RedactJSON(raw) }); n != 0 {
		t.Errorf("RedactJSON of clean parameters: %v allocations", n)
	}
}

// cleanCommand is a 200-byte command without a secret, with the trigger
// bytes a command has (flags, =, :, paths).
const cleanCommand = `kubectl get pods -n production --selector app=web,tier=frontend -o jsonpath='{.items[*].metadata.name}' | xargs -I{} kubectl logs {} --since=1h --tail=100 | grep -i error | sort | uniq -c`

func BenchmarkRedactClean(b *testing.B) {
	r := New()
	b.SetBytes(int64(len(cleanCommand)))
	b.ReportAllocs()
	for b.Loop() {
		r.Redact(cleanCommand)
	}
}

func BenchmarkRedactSecret(b *testing.B) {
	r := New()
	s := `PGPASSWORD=hunter2 psql "postgres://app:s3cr3t@db:5432/orders" -c 'select 1' && curl -H 'Authorization: Bearer abcDEF0123456789xyz' https://api.example.com/v1/items`
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		r.Redact(s)
	}
}

func BenchmarkRedactJSON(b *testing.B) {
	r := New()
	for _, c := range []struct{ name, raw string }{
		{"clean", `{"command":"kubectl get pods -n prod -o wide","timeout_ms":30000,"cwd":"/srv/app","env":{"KUBECONFIG":"/etc/kube/config"}}`},
		{"secret", `{"command":"mysql -uroot -ps3cret orders","timeout_ms":30000,"env":{"PGPASSWORD":"hunter2"}}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			raw := json.RawMessage(c.raw)
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				r.RedactJSON(raw)
			}
		})
	}
}

// Adversarial input: many triggers in 64 KiB. Every detector reads each
// byte a bounded number of times, so this stays linear.
func BenchmarkRedactAdversarial(b *testing.B) {
	r := New()
	for _, s := range []string{
		strings.Repeat("mysql -a -p ", 5000),
		strings.Repeat("password=x ", 6000),
		strings.Repeat("Authorization: ", 4000),
		strings.Repeat("-----BEGIN PRIVATE KEY-----", 2400),
		strings.Repeat("x://a:b@", 8000),
		strings.Repeat(`["-p",`, 10000),
	} {
		b.Run(s[:8], func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				r.Redact(s)
			}
		})
	}
}

// A refused pattern is echoed readable (backslashes as written), but never
// with a character a terminal would act on, and never whole.
func TestPatternErrorShown(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`a=\d+(`, `redaction pattern "a=\d+(": `},
		{`a="(`, `redaction pattern "a=\"(": `},
		{"a=\x1b[2J(", `redaction pattern "a=\x1b[2J(": `},
		{"a=(" + strings.Repeat("x", 200), `redaction pattern "a=(` + strings.Repeat("x", 97) + `…": `},
	} {
		_, err := ParsePattern(c.in)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("ParsePattern(%q) error = %v, want one starting %s", c.in, err, c.want)
		}
	}
}
