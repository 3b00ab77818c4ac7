package serve

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/client"
)

// Client talks to gate serve's API over TCP (http:// on loopback, https://
// beyond it) or its Unix socket.
type Client struct {
	base  string
	http  *http.Client
	token string
}

// ClientOption configures a Client.
type ClientOption func(*Client, *http.Transport)

// WithToken sends a bearer token (gate serve --tokens).
func WithToken(token string) ClientOption {
	return func(c *Client, _ *http.Transport) { c.token = token }
}

// WithRootCAs trusts only the CAs in pool for an https:// server (nil: the
// system's).
func WithRootCAs(pool *x509.CertPool) ClientOption {
	return func(_ *Client, tr *http.Transport) {
		if pool != nil {
			tr.TLSClientConfig = client.TLSConfig(pool)
		}
	}
}

// NewClient returns a client of the server at addr: "http://127.0.0.1:8700",
// "https://host:8700" or "unix:/path/to/gate.sock".
func NewClient(addr string, opts ...ClientOption) (*Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	c := &Client{base: strings.TrimRight(addr, "/"), http: &http.Client{Transport: tr}}
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		tr.Proxy = nil
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}
		c.base = "http://gate-serve"
	} else if !strings.HasPrefix(addr, "http://") && !strings.HasPrefix(addr, "https://") {
		return nil, fmt.Errorf("server %q is not http://HOST:PORT, https://HOST:PORT or unix:PATH", addr)
	}
	for _, o := range opts {
		o(c, tr)
	}
	return c, nil
}

// authorize adds the bearer token, if any.
func (c *Client) authorize(req *http.Request) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
}

// ErrUnreachable wraps the error of a request that got no answer: gate
// serve is not running at the address, or not reachable.
var ErrUnreachable = errors.New("cannot reach gate serve")

// unreachable is a request that got no answer. Its text is the cause
// alone ("cannot reach gate serve: connection refused"), not Go's request
// error with its method and URL; errors.Is still finds ErrUnreachable and
// the cause (context.Canceled).
type unreachable struct{ err error }

func (e unreachable) Error() string   { return ErrUnreachable.Error() + ": " + client.Reason(e.err) }
func (e unreachable) Unwrap() []error { return []error{ErrUnreachable, e.err} }

// APIError is an answer other than success.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Do sends a request with a JSON body (nil for none) and decodes the
// answer into out (nil to discard).
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.authorize(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return unreachable{err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return apiError(method, path, resp.Status, resp.StatusCode, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// apiError reads an answer other than success: the API's
// {"error":{"code","message"}}, or, in another shape (a proxy's page, a
// route that does not exist), the request and its status.
func apiError(method, path, status string, code int, body []byte) *APIError {
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	if e.Error.Message == "" {
		e.Error.Message = fmt.Sprintf("%s %s: %s", method, path, status)
	}
	if e.Error.Code == "" {
		e.Error.Code = "http_" + strconv.Itoa(code)
	}
	return &APIError{Status: code, Code: e.Error.Code, Message: e.Error.Message}
}

// Frame is one server-sent event.
type Frame struct {
	Event string
	Data  json.RawMessage
}

// Watch follows a conversation's event stream until ctx ends or the
// server closes it, calling fn for each event.
func (c *Client) Watch(ctx context.Context, id string, fn func(Frame) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+strings.Replace(PathEvents, "{id}", url.PathEscape(id), 1), nil)
	if err != nil {
		return err
	}
	c.authorize(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return unreachable{err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return apiError(http.MethodGet, req.URL.Path, resp.Status, resp.StatusCode, data)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 64<<20)
	var f Frame
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			f.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			f.Data = json.RawMessage(strings.TrimPrefix(line, "data: "))
		case line == "":
			if f.Event != "" {
				if err := fn(f); err != nil {
					return err
				}
			}
			f = Frame{}
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return sc.Err()
}
