package notekeytest

import (
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// A name and a seed always make the same key, another seed another key,
// and the signer's notes open with the verifier key.
func TestNew(t *testing.T) {
	s, vkey := New(t, "audit.test/log", 1)
	if _, again := New(t, "audit.test/log", 1); again != vkey {
		t.Fatalf("seed 1 made %s, then %s", vkey, again)
	}
	if _, other := New(t, "audit.test/log", 2); other == vkey {
		t.Fatal("seeds 1 and 2 made the same key")
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := note.Sign(&note.Note{Text: "hello\n"}, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(msg, note.VerifierList(v)); err != nil {
		t.Fatalf("the signer's note does not open with its verifier key: %v", err)
	}
}
