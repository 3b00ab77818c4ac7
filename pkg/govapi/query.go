package govapi

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/govkit/govkit/pkg/termtext"
)

// ParseQuery parses a raw query string strictly, as url.ParseQuery does
// but refusing what it (and r.URL.Query()) silently drops (issue 13): a
// pair that is not URL-encoded (agent=%zz, a=%), a ';' separator, invalid
// UTF-8 and control characters. A dropped agent=%zz would otherwise answer
// an unfiltered page. The error names the parameter.
func ParseQuery(raw string) (url.Values, error) {
	q := url.Values{}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(k)
		if err != nil || strings.Contains(pair, ";") {
			name = k // as sent: unescaping failed
		}
		switch {
		case err != nil:
			return nil, fmt.Errorf("query parameter %q is not URL-encoded: %v", termtext.Truncate(name, 40), err)
		case strings.Contains(pair, ";"):
			return nil, fmt.Errorf("query parameter %q holds a ';': separate parameters with '&', and encode a ';' in a value as %%3B", termtext.Truncate(name, 40))
		}
		val, err := url.QueryUnescape(v)
		if err != nil {
			return nil, fmt.Errorf("query parameter %s: the value is not URL-encoded: %v", strconv.Quote(termtext.Truncate(name, 40)), err)
		}
		for _, s := range [2]string{name, val} {
			if !utf8.ValidString(s) {
				return nil, fmt.Errorf("query parameter %q is not valid UTF-8", termtext.Truncate(strings.ToValidUTF8(name, "\ufffd"), 40))
			}
			if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
				return nil, fmt.Errorf("query parameter %q has a control character at byte %d", termtext.Truncate(termtext.Printable(name), 40), i)
			}
		}
		q[name] = append(q[name], val)
	}
	return q, nil
}

// CheckParams refuses a query parameter that is not one of known, or is
// repeated, naming it.
func CheckParams(q url.Values, known ...string) error {
	for k, v := range q {
		if !contains(known, k) {
			return fmt.Errorf("unknown query parameter %q (known: %s)", termtext.Truncate(k, 40), strings.Join(known, ", "))
		}
		if len(v) > 1 {
			return fmt.Errorf("query parameter %q given more than once", k)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Cursor is the pagination of a listing: entries after the seq AfterSeq,
// at most Limit of them (0: DefaultLimit).
type Cursor struct {
	AfterSeq int64
	Limit    int
}

func (c Cursor) encode(q url.Values) {
	if c.AfterSeq != 0 {
		q.Set("after_seq", strconv.FormatInt(c.AfterSeq, 10))
	}
	if c.Limit != 0 {
		q.Set("limit", strconv.Itoa(c.Limit))
	}
}

// parseCursor reads after_seq (default 0) and limit (default DefaultLimit).
func parseCursor(q url.Values) (Cursor, error) {
	c := Cursor{Limit: DefaultLimit}
	var err error
	if v := q.Get("after_seq"); v != "" {
		if c.AfterSeq, err = strconv.ParseInt(v, 10, 64); err != nil || c.AfterSeq < 0 {
			return Cursor{}, fmt.Errorf("after_seq=%q is not a seq (an integer >= 0)", termtext.Truncate(v, 40))
		}
	}
	if v := q.Get("limit"); v != "" {
		if c.Limit, err = strconv.Atoi(v); err != nil || c.Limit < 1 || c.Limit > MaxLimit {
			return Cursor{}, fmt.Errorf("limit=%q is not between 1 and %d", termtext.Truncate(v, 40), MaxLimit)
		}
	}
	return c, nil
}
