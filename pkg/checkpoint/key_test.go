package checkpoint_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/govkit/govkit/internal/notekeytest"
	"github.com/govkit/govkit/pkg/checkpoint"
)

func TestVerifierKey(t *testing.T) {
	// Seeds whose keys' base64 holds a '+', the separator of the key's
	// fields, and one that does not.
	plus := 0
	for seed := range byte(40) {
		skey, vkey, err := note.GenerateKey(rand.NewChaCha8([32]byte{seed}), "auditd.example.com/log")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(skey, "+") > 4 {
			plus++
		}
		got, err := checkpoint.VerifierKey(skey + "\n")
		if err != nil || got != vkey {
			t.Fatalf("VerifierKey = %q, %v; want %q", got, err, vkey)
		}
	}
	if plus == 0 {
		t.Fatal("no key with a '+' in its data was tried")
	}
	_, vkey, _ := note.GenerateKey(bytes.NewReader(bytes.Repeat([]byte{7}, 64)), "auditd.example.com/log")
	for _, bad := range []string{"", vkey, "PRIVATE+KEY+x+00000000+AAAA"} {
		if _, err := checkpoint.VerifierKey(bad); err == nil {
			t.Errorf("VerifierKey(%q) accepted", bad)
		} else if bad != "" && strings.Contains(err.Error(), bad) {
			t.Errorf("the error quotes the key: %v", err)
		}
	}
}

func TestSplitNotes(t *testing.T) {
	signer, vkey := notekeytest.New(t, "log", 1)
	known, _ := checkpoint.Verifiers(vkey)
	var log []byte
	for size := int64(1); size <= 3; size++ {
		msg, err := checkpoint.Sign(checkpoint.Checkpoint{Origin: "log", Size: size, Root: root}, signer)
		if err != nil {
			t.Fatal(err)
		}
		log = checkpoint.AppendNote(log, msg)
	}
	notes, err := checkpoint.SplitNotes(log)
	if err != nil || len(notes) != 3 {
		t.Fatalf("SplitNotes = %d notes, %v", len(notes), err)
	}
	for i, n := range notes {
		if c, err := checkpoint.Open(n, known); err != nil || c.Size != int64(i+1) {
			t.Fatalf("note %d: %+v, %v", i, c, err)
		}
	}
	if notes, err := checkpoint.SplitNotes(nil); err != nil || len(notes) != 0 {
		t.Fatalf("SplitNotes(empty) = %v, %v", notes, err)
	}
	for _, tc := range []struct{ name, log, says string }{
		{"cut mid-note", string(log[:len(log)-20]), "line 17 does not end"},
		{"no final empty line", string(log[:len(log)-1]), "incomplete"},
		{"blank first", "\n" + string(log), "line 1: an empty line"},
		{"unsigned", "a\n1\nb\n\n\n", "without signatures"},
		{"junk after sigs", "a\n1\nb\n\n— log AAAA\njunk\n\n", "line 6 is not a signature"},
	} {
		_, err := checkpoint.SplitNotes([]byte(tc.log))
		if !errors.Is(err, checkpoint.ErrMalformed) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: SplitNotes = %v, want ErrMalformed saying %q", tc.name, err, tc.says)
		}
	}
}

// FuzzSplitNotes: the notes of an accepted log, each appended back with
// AppendNote, are the log.
func FuzzSplitNotes(f *testing.F) {
	f.Add([]byte("log\n1\nAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\n\n— log AAAA\n\n"))
	f.Add([]byte("a\n\n— x y\n— z w\n\nb\n\n— x y\n\n"))
	f.Add([]byte("a\n\n— x y"))
	f.Fuzz(func(t *testing.T, log []byte) {
		notes, err := checkpoint.SplitNotes(log)
		if err != nil {
			if !errors.Is(err, checkpoint.ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		var again []byte
		for _, n := range notes {
			again = checkpoint.AppendNote(again, n)
		}
		if !bytes.Equal(again, log) {
			t.Fatalf("SplitNotes(%q) = %q, which joins to %q", log, notes, again)
		}
	})
}
