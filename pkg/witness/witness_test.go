package witness

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govkit/govkit/internal/notekeytest"
	"github.com/govkit/govkit/pkg/checkpoint"
)

// memTree is a Merkle tree in memory, its hashes at tlog's stored indexes.
type memTree []tlog.Hash

func (m memTree) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x >= int64(len(m)) {
			return nil, fmt.Errorf("no hash %d", x)
		}
		out[i] = m[x]
	}
	return out, nil
}

// log builds a tree of n records whose event hashes derive from tag:
// two tags sharing a prefix length k give two logs that agree on their
// first k records when tagAt says so.
func log(t testing.TB, n int64, tagAt func(seq int64) string) memTree {
	t.Helper()
	var m memTree
	for seq := int64(1); seq <= n; seq++ {
		sum := sha256.Sum256([]byte(tagAt(seq)))
		leaf, err := checkpoint.LeafHash(hex.EncodeToString(sum[:]))
		if err != nil {
			t.Fatal(err)
		}
		hs, err := tlog.StoredHashesForRecordHash(checkpoint.LeafIndex(seq), leaf, m)
		if err != nil {
			t.Fatal(err)
		}
		m = append(m, hs...)
	}
	return m
}

func plain(seq int64) string { return fmt.Sprintf("event %d", seq) }

// forkAt is a log that agrees with plain up to seq k and differs after.
func forkAt(k int64) func(int64) string {
	return func(seq int64) string {
		if seq <= k {
			return plain(seq)
		}
		return fmt.Sprintf("rewritten %d", seq)
	}
}

// key is a deterministic key named name, from seed.
func key(t testing.TB, name string, seed byte) (note.Signer, note.Verifier, string) {
	t.Helper()
	s, vkey := notekeytest.New(t, name, seed)
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return s, v, vkey
}

func cp(t testing.TB, origin string, m memTree, n int64) checkpoint.Checkpoint {
	t.Helper()
	root, err := tlog.TreeHash(n, m)
	if err != nil {
		t.Fatal(err)
	}
	return checkpoint.Checkpoint{Origin: origin, Size: n, Root: root}
}

func proof(t testing.TB, m memTree, from, to int64) checkpoint.ConsistencyProof {
	t.Helper()
	p, err := checkpoint.ProveConsistency(from, to, m)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestVerify(t *testing.T) {
	const origin = "audit.example/log"
	good := log(t, 40, plain)
	fork := log(t, 40, forkAt(9))
	for _, c := range []struct {
		name    string
		old     checkpoint.Checkpoint
		new     checkpoint.Checkpoint
		p       checkpoint.ConsistencyProof
		rel     Relation
		wantErr error
	}{
		{"same", cp(t, origin, good, 10), cp(t, origin, good, 10), checkpoint.ConsistencyProof{}, Same, nil},
		{"grown", cp(t, origin, good, 10), cp(t, origin, good, 33), proof(t, good, 10, 33), Extends, nil},
		{"grown from 1", cp(t, origin, good, 1), cp(t, origin, good, 40), proof(t, good, 1, 40), Extends, nil},
		{"from empty", cp(t, origin, good, 0), cp(t, origin, good, 7), proof(t, good, 0, 7), Extends, nil},
		{"truncated", cp(t, origin, good, 10), cp(t, origin, good, 7), checkpoint.ConsistencyProof{}, Regressed, ErrRegressed},
		{"forked at the same size", cp(t, origin, good, 10), cp(t, origin, fork, 10), checkpoint.ConsistencyProof{}, Forked, ErrForked},
		// The fork's own proof is sound for the fork, not for the pin.
		{"rewritten and grown", cp(t, origin, good, 10), cp(t, origin, fork, 20), proof(t, fork, 10, 20), Extends, ErrForked},
		{"prefix kept, tail rewritten", cp(t, origin, good, 9), cp(t, origin, fork, 20), proof(t, fork, 9, 20), Extends, nil},
		{"proof of other sizes", cp(t, origin, good, 10), cp(t, origin, good, 20), proof(t, good, 11, 20), Extends, ErrForked},
		{"another origin", cp(t, origin, good, 10), cp(t, "other/log", good, 20), proof(t, good, 10, 20), OtherLog, ErrOtherLog},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Compare(c.old, c.new); got != c.rel {
				t.Errorf("Compare = %s, want %s", got, c.rel)
			}
			err := Verify(c.old, c.new, c.p)
			if c.wantErr == nil && err != nil || c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Errorf("Verify = %v, want %v", err, c.wantErr)
			}
		})
	}
}

func TestCosign(t *testing.T) {
	const origin = "audit.example/log"
	logS, logV, logK := key(t, origin, 1)
	otherS, _, _ := key(t, origin, 2) // the same name, another key
	witS, witV, witK := key(t, "witness.example", 3)
	w := Witness{Log: note.VerifierList(logV), Signer: witS, Self: witV}
	good := log(t, 20, plain)
	fork := log(t, 20, forkAt(3))
	sign := func(s note.Signer, c checkpoint.Checkpoint) []byte {
		msg, err := checkpoint.Sign(c, s)
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}

	// First use: cosigned as it is.
	first := cp(t, origin, good, 5)
	out, got, err := w.Cosign(nil, sign(logS, first), checkpoint.ConsistencyProof{})
	if err != nil || got != first {
		t.Fatalf("first: %v %+v", err, got)
	}
	// The cosigned note opens with either key, and carries both
	// signatures.
	both, err := checkpoint.Verifiers(logK, witK)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(out, both)
	if err != nil || len(n.Sigs) != 2 {
		t.Fatalf("cosigned note: %v, %d signatures\n%s", err, len(n.Sigs), out)
	}
	if c, err := checkpoint.Open(out, both); err != nil || c != first {
		t.Errorf("checkpoint.Open with both keys: %v %+v", err, c)
	}
	if c, err := w.Last(out); err != nil || c != first {
		t.Errorf("Last: %v %+v", err, c)
	}
	if _, err := w.Last(sign(logS, first)); !errors.Is(err, checkpoint.ErrUnknownKey) {
		t.Errorf("Last of a note the witness did not sign: %v", err)
	}

	next := cp(t, origin, good, 12)
	if _, _, err := w.Cosign(&first, sign(logS, next), proof(t, good, 5, 12)); err != nil {
		t.Errorf("extension refused: %v", err)
	}
	for _, c := range []struct {
		name string
		msg  []byte
		p    checkpoint.ConsistencyProof
		want error
	}{
		{"forged by another key", sign(otherS, next), proof(t, good, 5, 12), checkpoint.ErrUnknownKey},
		{"signed by the witness alone", sign(witS, next), proof(t, good, 5, 12), checkpoint.ErrUnknownKey},
		{"a fork", sign(logS, cp(t, origin, fork, 12)), proof(t, fork, 5, 12), ErrForked},
		{"truncated", sign(logS, cp(t, origin, good, 4)), checkpoint.ConsistencyProof{}, ErrRegressed},
		{"an edited note", []byte(strings.Replace(string(sign(logS, next)), "\n12\n", "\n13\n", 1)), proof(t, good, 5, 13), checkpoint.ErrBadSignature},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _, err := w.Cosign(&first, c.msg, c.p)
			if !errors.Is(err, c.want) || out != nil {
				t.Errorf("Cosign = %q, %v; want %v", out, err, c.want)
			}
		})
	}
}
