package table

import "testing"

func TestRender(t *testing.T) {
	got, err := Render("  ", []string{"ID", "STATUS"}, [][]string{{"apr_1", "pending"}, {"apr_22", "approved"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "  ID      STATUS\n  apr_1   pending\n  apr_22  approved\n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}
