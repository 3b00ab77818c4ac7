// Package llm is a client of OpenAI-compatible chat completion endpoints.
package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/termtext"
)

// MaxResponse bounds a response body: a completion is text and tool calls,
// and 16 MiB is far beyond any context window a model answers from.
const MaxResponse = 16 << 20

// maxErrorBody bounds what is read of a failed response, and maxErrorText
// what of its message reaches an *Error: enough to say what the server
// objected to, never a page of HTML.
const (
	maxErrorBody = 64 << 10
	maxErrorText = 512
)

// Client calls one chat completion endpoint. It is safe for concurrent use.
type Client struct {
	endpoint string // …/chat/completions
	apiKey   string
	http     *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient replaces the HTTP client. The default has no overall
// timeout: a local model can take minutes to answer, and the caller's
// context bounds the call (REQ-BED-005: a cancel aborts it).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// New returns a client of the endpoint at baseURL: the server's root
// ("http://127.0.0.1:1234"), its OpenAI prefix ("http://127.0.0.1:1234/v1",
// "https://host/v1beta/openai") or the full …/chat/completions URL. An
// empty apiKey sends no Authorization header (local servers need none).
func New(baseURL, apiKey string, opts ...Option) (*Client, error) {
	endpoint, err := endpointURL(baseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{endpoint: endpoint, apiKey: apiKey, http: &http.Client{}}
	for _, o := range opts {
		o(c)
	}
	if c.http == nil {
		return nil, errors.New("llm: WithHTTPClient(nil)")
	}
	return c, nil
}

// Endpoint is the URL the client posts to, for messages.
func (c *Client) Endpoint() string { return c.endpoint }

// endpointURL accepts the spellings of a base URL people copy from their
// server's page: a bare root gets /v1, a prefix gets /chat/completions.
func endpointURL(base string) (string, error) {
	base = strings.TrimSpace(base)
	if !strings.Contains(base, "://") {
		return "", fmt.Errorf("llm: base URL %q must start with http:// or https://", base)
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("llm: base URL %q: %v", base, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("llm: base URL %q: scheme must be http or https", base)
	}
	if u.Host == "" {
		return "", fmt.Errorf("llm: base URL %q has no host", base)
	}
	if u.User != nil {
		return "", fmt.Errorf("llm: base URL %q: put credentials in the API key, not the URL", u.Redacted())
	}
	u.RawQuery, u.Fragment = "", ""
	path := strings.TrimRight(u.Path, "/")
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
	case path == "":
		path = "/v1/chat/completions"
	default:
		path += "/chat/completions"
	}
	u.Path, u.RawPath = path, ""
	return u.String(), nil
}

// Error is a failed call: the server answered an error status, the
// connection failed, or the answer was not a completion.
type Error struct {
	Status     int           // HTTP status; 0 for a network failure
	Retryable  bool          // network, 408, 429, 5xx (REQ-BED-006)
	Message    string        // what went wrong, with the server's own message, bounded
	RetryAfter time.Duration // the server's Retry-After, when it sent one
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return "llm: " + e.Message
	}
	return fmt.Sprintf("llm: %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// retryable tells the statuses worth asking again (REQ-BED-006, B-06a/c):
// a timeout, a rate limit or a server in trouble may pass; auth and other
// client errors will not.
func retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// Complete sends req and returns the model's answer. A failure is an
// *Error; a cancelled or expired ctx aborts the request and returns
// ctx.Err() itself, so the caller tells its own cancel from the server's
// failure (B-05a).
func (c *Client) Complete(ctx context.Context, req Request) (Response, error) {
	body, err := encodeRequest(req)
	if err != nil {
		return Response{}, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return Response{}, fmt.Errorf("llm: %v", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if c.apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return Response{}, ctx.Err()
		}
		return Response{}, &Error{Retryable: true, Message: networkMessage(err)}
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if rerr != nil && ctx.Err() != nil {
			return Response{}, ctx.Err()
		}
		return Response{}, &Error{
			Status:     resp.StatusCode,
			Retryable:  retryable(resp.StatusCode),
			Message:    errorMessage(data),
			RetryAfter: retryAfter(resp.Header.Get("Retry-After")),
		}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse+1))
	if err != nil {
		if ctx.Err() != nil {
			return Response{}, ctx.Err()
		}
		// The connection broke mid-answer: as retryable as one that never
		// opened.
		return Response{}, &Error{Status: resp.StatusCode, Retryable: true, Message: "reading the response: " + networkMessage(err)}
	}
	if len(data) > MaxResponse {
		return Response{}, &Error{Status: resp.StatusCode, Message: fmt.Sprintf("response body exceeds %d MiB", MaxResponse>>20)}
	}
	out, err := decodeResponse(data)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return Response{}, e
		}
		// A server that answers 200 with something else is misconfigured
		// (a proxy's page, the wrong path): asking again will not help.
		return Response{}, &Error{Status: resp.StatusCode, Message: err.Error()}
	}
	return out, nil
}

// networkMessage is err without the request URL that net/http repeats,
// bounded.
func networkMessage(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return bound(err.Error())
}

// errorMessage is the server's own message from an error body: OpenAI's
// {"error":{"message":…}}, the {"error":"…"} of Ollama and others, or
// {"message":…}; otherwise the body's text, bounded.
func errorMessage(data []byte) string {
	var body struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  any             `json:"detail"` // vLLM and FastAPI servers
	}
	if json.Unmarshal(data, &body) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(body.Error, &inner) == nil && inner.Message != "":
			return bound(inner.Message)
		case json.Unmarshal(body.Error, &s) == nil && s != "":
			return bound(s)
		case body.Message != "":
			return bound(body.Message)
		case body.Detail != nil:
			d, _ := json.Marshal(body.Detail)
			return bound(string(d))
		}
	}
	text := strings.TrimSpace(string(data))
	if text == "" {
		return "empty response body"
	}
	return bound(text)
}

// bound keeps a message short and on one line, valid UTF-8.
func bound(s string) string {
	return termtext.Truncate(strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " "), maxErrorText)
}

// retryAfter reads a Retry-After header given in seconds; the HTTP-date
// form would need a clock, and the caller's backoff covers it.
func retryAfter(h string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(h))
	if err != nil || n < 0 || n > 3600 {
		return 0
	}
	return time.Duration(n) * time.Second
}
