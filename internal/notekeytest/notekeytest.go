// Package notekeytest makes the note keys tests sign checkpoints with: the
// same name and seed give the same key, so a test's notes repeat (issue 19).
package notekeytest

import (
	"bytes"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// Generate returns the signer key and the verifier key named name made
// from seed, as auditd key create writes and prints them.
func Generate(t testing.TB, name string, seed byte) (skey, vkey string) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(bytes.NewReader(bytes.Repeat([]byte{seed}, 64)), name)
	if err != nil {
		t.Fatal(err)
	}
	return skey, vkey
}

// New returns a signer named name made from seed, and its verifier key.
func New(t testing.TB, name string, seed byte) (note.Signer, string) {
	t.Helper()
	skey, vkey := Generate(t, name, seed)
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return s, vkey
}
