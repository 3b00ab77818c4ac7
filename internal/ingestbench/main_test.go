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
	ids := false
	eventIDs = &ids
	for _, withIDs := range []bool{false, true} {
		ids = withIDs
		testTemplateMatchesEvent(t, withIDs)
	}
}

func testTemplateMatchesEvent(t *testing.T, withIDs bool) {
	holes := 2
	if withIDs {
		holes = 3 // the event number is in the event_id too
	}
	for _, g := range []int{0, 7, 31} {
		tmpl, err := newLineTemplate(g)
		if err != nil {
			t.Fatal(err)
		}
		if len(tmpl.holes) != holes {
			t.Fatalf("client %d: template has %d holes, want %d", g, len(tmpl.holes), holes)
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
