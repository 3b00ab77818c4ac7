package main

import (
	"bytes"
	"testing"

	"github.com/govkit/govkit/pkg/client"
)

// The raw load generator splices events from a template; it must send the
// bytes that encoding event(g, i) gives, or the two posters would measure
// different loads.
func TestTemplateMatchesEvent(t *testing.T) {
	for _, g := range []int{0, 7, 31} {
		tmpl, err := newLineTemplate(g)
		if err != nil {
			t.Fatal(err)
		}
		if len(tmpl.holes) != 2 {
			t.Fatalf("client %d: template has %d holes, want 2", g, len(tmpl.holes))
		}
		for _, i := range []int{0, 9, 10, 12345} {
			want, err := client.EncodeEvent(event(g, i))
			if err != nil {
				t.Fatal(err)
			}
			if got := tmpl.append(nil, i); !bytes.Equal(got, want) {
				t.Errorf("client %d event %d:\n got %s\nwant %s", g, i, got, want)
			}
		}
	}
}
