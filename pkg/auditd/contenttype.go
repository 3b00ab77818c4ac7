package auditd

import (
	"fmt"

	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/termtext"
	"mime"
	"net/http"
	"strings"
)

// jsonBody is the media type of every request body auditd takes; POST
// /api/events also takes JSON Lines (eventBodies; api_batch.go).
var (
	jsonBody    = []string{govapi.ContentTypeJSON}
	eventBodies = []string{govapi.ContentTypeJSON, govapi.ContentTypeJSONLines, "application/jsonl"}
)

// checkBodyType refuses (415, govapi.CodeUnsupportedMediaType) a request whose
// Content-Type is not one that path takes (DESIGN §11 "Transport", issue
// 13). A web page can make a browser POST to a local auditd without asking
// (no CORS preflight) only with text/plain, a form type, or no type at all;
// JSON needs a preflight, which auditd never grants. So a body of any other
// type, or of none, is refused before anything reads it. Parameters are
// allowed, but a charset must be UTF-8, JSON's only encoding (RFC 8259).
// A request without a body (approve and deny may have none) needs no type.
func checkBodyType(w http.ResponseWriter, r *http.Request, path string) error {
	if r.Method == http.MethodGet || r.Method == http.MethodHead || r.ContentLength == 0 {
		return nil // ContentLength is -1 for a chunked body of unknown length
	}
	accepted := jsonBody
	if path == govapi.PathEvents {
		accepted = eventBodies
	}
	ct := r.Header.Get("Content-Type")
	if ok, why := acceptsBodyType(ct, accepted); !ok {
		w.Header().Set("Accept", strings.Join(accepted, ", "))
		return refuse(UnsupportedType, govapi.CodeUnsupportedMediaType,
			"%s %s takes a body of Content-Type %s; %s", r.Method, path, orList(accepted), why)
	}
	return nil
}

// acceptsBodyType tells whether the Content-Type ct is one of accepted,
// and if not, why.
func acceptsBodyType(ct string, accepted []string) (bool, string) {
	if strings.TrimSpace(ct) == "" {
		return false, "this request has no Content-Type"
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return false, fmt.Sprintf("Content-Type %q does not parse: %v", termtext.Truncate(ct, 80), err)
	}
	found := false
	for _, a := range accepted {
		found = found || mt == a
	}
	if !found {
		return false, fmt.Sprintf("this one is %q", termtext.Truncate(mt, 80))
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return false, fmt.Sprintf("charset %q is not UTF-8", termtext.Truncate(cs, 40))
	}
	return true, ""
}

// orList joins media types as "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}
