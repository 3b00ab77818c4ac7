package serve_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/serve"
)

// gate serve's API answers a bad body in JSON's terms, as auditd does
// (issue 20: no Go internals in user-facing errors).
func TestBodyErrorsSpeakJSON(t *testing.T) {
	r := newRig(t)
	id := r.create("").ID
	endpoints := []struct {
		path string
		bad  []struct{ name, body, want string }
	}{
		{serve.PathConversations, []struct{ name, body, want string }{
			{"cwd", `{"cwd":1}`, "the body: cwd must be a string, not a number"},
			{"unknown", `{"cwd":"/tmp","modle":"x"}`, `the body: unknown field "modle": the object takes {cwd, model, mode}`},
		}},
		{path(serve.PathMessages, id), []struct{ name, body, want string }{
			{"images", `{"text":"hi","images":{"data":"x"}}`, "the body: images must be an array of objects {media_type, data}, not an object"},
			{"image data", `{"images":[{"media_type":"image/png","data":7}]}`, "the body: images[0].data must be a string, not a number"},
		}},
		{path(serve.PathMode, id), []struct{ name, body, want string }{
			{"action", `{"action":["approve"]}`, "the body: action must be a string, not an array"},
		}},
	}
	common := []struct{ name, body, want string }{
		{"syntax", "{\n\"a\" 1}", "the body: line 2, column 5: invalid character '1' after object key"},
		{"ends early", `{"text":`, "the body: line 1, column 9: the JSON ends early"},
		{"trailing", `{}{}`, "the body: line 1, column 3: data after the JSON value"},
		{"empty", ``, "the body: empty: expected an object {"},
		{"not an object", `"hi"`, "the body: the JSON value must be an object {"},
	}
	for _, ep := range endpoints {
		for _, tc := range append(ep.bad, common...) {
			t.Run(ep.path+" "+tc.name, func(t *testing.T) {
				status, code, msg := post(t, r.http.URL+ep.path, tc.body)
				if status != http.StatusBadRequest || code != "invalid_json" || !strings.Contains(msg, tc.want) {
					t.Fatalf("→ %d %s %q\nwant 400 invalid_json with %q", status, code, msg, tc.want)
				}
				for _, leak := range []string{"Go struct", "Go value", "json:", "serve.", "main.", "govapi.", "[]", "int64", "MessageInput", "ImageInput"} {
					if strings.Contains(msg, leak) {
						t.Errorf("message %q shows Go internals (%q)", msg, leak)
					}
				}
			})
		}
	}
	t.Run("too large", func(t *testing.T) {
		status, code, msg := post(t, r.http.URL+serve.PathConversations, `{"cwd":"`+strings.Repeat("x", 32<<20)+`"}`)
		if status != http.StatusRequestEntityTooLarge || code != "body_too_large" || msg != "the body: larger than 33554432 bytes (32 MiB)" {
			t.Fatalf("→ %d %s %q", status, code, msg)
		}
	})
}

func post(t *testing.T, url, body string) (status int, code, msg string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatalf("%d: not an error body: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, e.Error.Code, e.Error.Message
}
