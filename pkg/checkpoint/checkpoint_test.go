package checkpoint_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govkit/govkit/internal/notekeytest"
	"github.com/govkit/govkit/pkg/checkpoint"
)

var root = tlog.Hash{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32}

func TestMarshalParse(t *testing.T) {
	c := checkpoint.Checkpoint{Origin: "auditd.example.com/log", Size: 1234, Root: root}
	text, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := "auditd.example.com/log\n1234\nAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\n"
	if string(text) != want {
		t.Fatalf("Marshal = %q, want %q", text, want)
	}
	got, err := checkpoint.Parse(text)
	if err != nil || got != c {
		t.Fatalf("Parse(Marshal) = %+v, %v", got, err)
	}

	b64 := "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="
	for _, tc := range []struct{ name, text, why string }{
		{"empty", "", "newline"},
		{"no final newline", "o\n1\n" + b64, "newline"},
		{"two lines", "o\n1\n", "3"},
		{"extension line", "o\n1\n" + b64 + "\nextra\n", "4 lines"},
		{"empty origin", "\n1\n" + b64 + "\n", "empty origin"},
		{"spaced origin", " o\n1\n" + b64 + "\n", "white space"},
		{"control in origin", "o\x7f\n1\n" + b64 + "\n", "control"},
		{"non-UTF-8 origin", "o\xff\n1\n" + b64 + "\n", "UTF-8"},
		{"leading zero", "o\n01\n" + b64 + "\n", "canonical decimal"},
		{"sign", "o\n+1\n" + b64 + "\n", "canonical decimal"},
		{"negative", "o\n-1\n" + b64 + "\n", "canonical decimal"},
		{"empty size", "o\n\n" + b64 + "\n", "canonical decimal"},
		{"size overflow", "o\n9223372036854775808\n" + b64 + "\n", "canonical decimal"},
		{"short root", "o\n1\nAQID\n", "32 bytes"},
		{"unpadded root", "o\n1\n" + strings.TrimSuffix(b64, "=") + "\n", "32 bytes"},
		{"non-canonical root", "o\n1\n" + b64[:42] + "B=\n", "32 bytes"}, // nonzero padding bits
		{"CRLF", "o\r\n1\r\n" + b64 + "\r\n", "white space"},
		{"long origin", strings.Repeat("o", 300) + "\n1\n" + b64 + "\n", "longer"},
	} {
		_, err := checkpoint.Parse([]byte(tc.text))
		if !errors.Is(err, checkpoint.ErrMalformed) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: Parse(%q) = %v, want ErrMalformed saying %q", tc.name, tc.text, err, tc.why)
		}
	}
	for _, c := range []checkpoint.Checkpoint{{Origin: "", Size: 1}, {Origin: "o", Size: -1}, {Origin: "a\nb", Size: 1}} {
		if _, err := c.Marshal(); !errors.Is(err, checkpoint.ErrMalformed) {
			t.Errorf("Marshal(%+v) = %v, want ErrMalformed", c, err)
		}
	}
}

func TestSignOpen(t *testing.T) {
	signer, vkey := notekeytest.New(t, "auditd.example.com/log", 1)
	_, otherKey := notekeytest.New(t, "auditd.example.com/log", 2)
	_, elseKey := notekeytest.New(t, "elsewhere", 3)
	c := checkpoint.Checkpoint{Origin: "auditd.example.com/log", Size: 42, Root: root}
	msg, err := checkpoint.Sign(c, signer)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := c.Marshal()
	if !bytes.HasPrefix(msg, append(body, '\n')) || !bytes.Contains(msg, []byte("\n— auditd.example.com/log ")) {
		t.Fatalf("signed note %q is not the body, a blank line and the signature line", msg)
	}
	known, err := checkpoint.Verifiers(vkey)
	if err != nil {
		t.Fatal(err)
	}
	got, err := checkpoint.Open(msg, known)
	if err != nil || got != c {
		t.Fatalf("Open = %+v, %v; want %+v", got, err, c)
	}

	// A second verifier, unknown here, cosigning (a witness): still opens.
	witness, _ := notekeytest.New(t, "witness", 4)
	n, err := note.Open(msg, known)
	if err != nil {
		t.Fatal(err)
	}
	cosigned, err := note.Sign(n, witness)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := checkpoint.Open(cosigned, known); err != nil || got != c {
		t.Fatalf("Open(cosigned) = %+v, %v", got, err)
	}

	other, _ := checkpoint.Verifiers(otherKey)
	elsewhere, _ := checkpoint.Verifiers(elseKey)
	tampered := bytes.Replace(msg, []byte("\n42\n"), []byte("\n41\n"), 1)
	unsignedBody := body // a checkpoint without its signature block
	badText, _ := note.Sign(&note.Note{Text: "not a checkpoint\n"}, signer)
	for _, tc := range []struct {
		name  string
		msg   []byte
		known note.Verifiers
		want  error
		says  string
	}{
		{"truncated size forged", tampered, known, checkpoint.ErrBadSignature, "invalid signature"},
		{"same name, another key", msg, other, checkpoint.ErrUnknownKey, "auditd.example.com/log+"},
		{"another log's key", msg, elsewhere, checkpoint.ErrUnknownKey, "signed by"},
		{"no signatures", unsignedBody, known, checkpoint.ErrMalformed, "malformed"},
		{"garbage", []byte("\x00\x01"), known, checkpoint.ErrMalformed, "malformed"},
		{"signed, not a checkpoint", badText, known, checkpoint.ErrMalformed, "lines"},
	} {
		_, err := checkpoint.Open(tc.msg, tc.known)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: Open = %v, want %v saying %q", tc.name, err, tc.want, tc.says)
		}
	}
	if _, err := checkpoint.Verifiers(vkey, "not a key"); err == nil || !strings.Contains(err.Error(), "verifier key 2") {
		t.Errorf("Verifiers with a bad key = %v, want an error naming key 2", err)
	}
}

func TestProofJSON(t *testing.T) {
	m := build(t, rand.New(rand.NewPCG(7, 8)), 100)
	p, err := checkpoint.ProveInclusion(37, eventHash(37), 100, m)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"schema_version":1,"seq":37,"event_hash":"`+eventHash(37)+`","tree_size":100,"hashes":["`)) {
		t.Fatalf("inclusion proof JSON %s", b)
	}
	got, err := checkpoint.ParseInclusionProof(b)
	if err != nil || !reflect.DeepEqual(got, p) {
		t.Fatalf("ParseInclusionProof = %+v, %v; want %+v", got, err, p)
	}
	c, _ := checkpoint.ProveConsistency(100, 100, m)
	b, _ = json.Marshal(c)
	if string(b) != `{"schema_version":1,"from":100,"to":100,"hashes":[]}` {
		t.Fatalf("empty consistency proof JSON %s", b)
	}
	for _, bad := range []string{
		``, `null`, `{}`, `{"schema_version":2,"from":1,"to":1,"hashes":[]}`,
		`{"schema_version":1,"from":1,"to":1,"hashes":[],"x":1}`,
		`{"schema_version":1,"from":1,"to":1,"hashes":["AAAA"]}`,
		`{"schema_version":1,"from":1,"to":1,"hashes":[]} {}`,
		`{"schema_version":1,"from":1,"to":1,"hashes":[` + strings.Repeat(`"AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=",`, 128) + `"AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="]}`,
	} {
		if _, err := checkpoint.ParseConsistencyProof([]byte(bad)); err == nil {
			t.Errorf("ParseConsistencyProof(%.60s) accepted", bad)
		}
	}
}

// FuzzParse: what Parse accepts marshals back to exactly the bytes parsed
// (one checkpoint, one text), and what Marshal writes parses.
func FuzzParse(f *testing.F) {
	f.Add([]byte("auditd.example.com/log\n1234\nAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\n"))
	f.Add([]byte("o\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"))
	f.Add([]byte("o\n01\nAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\nextension\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		c, err := checkpoint.Parse(text)
		if err != nil {
			if !errors.Is(err, checkpoint.ErrMalformed) {
				t.Fatalf("Parse error %v is not ErrMalformed", err)
			}
			return
		}
		out, err := c.Marshal()
		if err != nil || !bytes.Equal(out, text) {
			t.Fatalf("Parse(%q) = %+v, which marshals to %q, %v", text, c, out, err)
		}
	})
}

// FuzzOpen: Open never panics, fails only with its three errors, and what
// it opens is a checkpoint whose body the note carried.
func FuzzOpen(f *testing.F) {
	signer, vkey := notekeytest.New(f, "log", 1)
	known, err := checkpoint.Verifiers(vkey)
	if err != nil {
		f.Fatal(err)
	}
	msg, _ := checkpoint.Sign(checkpoint.Checkpoint{Origin: "log", Size: 7, Root: root}, signer)
	f.Add(msg)
	f.Add(bytes.Replace(msg, []byte("\n7\n"), []byte("\n6\n"), 1))
	f.Add([]byte("log\n7\n\n— log AAAA\n"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		c, err := checkpoint.Open(msg, known)
		if err != nil {
			if !errors.Is(err, checkpoint.ErrMalformed) && !errors.Is(err, checkpoint.ErrBadSignature) && !errors.Is(err, checkpoint.ErrUnknownKey) {
				t.Fatalf("Open error %v is none of the three", err)
			}
			return
		}
		body, err := c.Marshal()
		if err != nil || !bytes.HasPrefix(msg, append(body, '\n')) {
			t.Fatalf("Open(%q) = %+v, whose body %q does not begin the note", msg, c, body)
		}
	})
}

// FuzzParseProof: an accepted proof (either kind) encodes to JSON that
// parses to the same proof.
func FuzzParseProof(f *testing.F) {
	m := build(f, rand.New(rand.NewPCG(9, 10)), 50)
	p, _ := checkpoint.ProveInclusion(17, eventHash(17), 50, m)
	b, _ := json.Marshal(p)
	f.Add(b)
	c, _ := checkpoint.ProveConsistency(13, 50, m)
	b, _ = json.Marshal(c)
	f.Add(b)
	f.Add([]byte(`{"schema_version":1,"from":1,"to":1,"hashes":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if p, err := checkpoint.ParseInclusionProof(data); err == nil {
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			again, err := checkpoint.ParseInclusionProof(b)
			if err != nil || !reflect.DeepEqual(again, p) {
				t.Fatalf("inclusion proof %s → %s → %+v, %v", data, b, again, err)
			}
		}
		if c, err := checkpoint.ParseConsistencyProof(data); err == nil {
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			again, err := checkpoint.ParseConsistencyProof(b)
			if err != nil || !reflect.DeepEqual(again, c) {
				t.Fatalf("consistency proof %s → %s → %+v, %v", data, b, again, err)
			}
		}
	})
}
