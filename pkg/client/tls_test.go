package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/testcert"
)

func TestLoadCACert(t *testing.T) {
	if roots, err := LoadCACert(""); roots != nil || err != nil {
		t.Errorf(`LoadCACert("") = %v, %v; want the system's roots (nil)`, roots, err)
	}
	dir := t.TempDir()
	f, err := testcert.Write(dir, testcert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCACert(f.CA); err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca := string(mustReadFile(t, f.CA))
	key := string(mustReadFile(t, f.Key))
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, file, msg string }{
		{"missing", filepath.Join(dir, "nope.pem"), "CA certificate " + dir + "/nope.pem: no such file or directory"},
		{"empty", write("empty.pem", ""), "no PEM certificate in the file"},
		{"not PEM", write("text.pem", "hello\n"), "no PEM certificate in the file"},
		{"a private key", f.Key, `PEM block 1 is "PRIVATE KEY", not a CERTIFICATE`},
		{"a key after the CA", write("mixed.pem", ca+key), `PEM block 2 is "PRIVATE KEY"`},
		{"a broken certificate", write("broken.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), "certificate 1: x509: "},
		{"a directory", dir, "not a regular file"},
		{"a FIFO", fifo, "not a regular file"},
	} {
		_, err := LoadCACert(tc.file)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.msg)
		} else if strings.Contains(err.Error(), key[40:80]) {
			t.Errorf("%s: the error quotes the key: %v", tc.name, err)
		}
	}
}

func mustReadFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// WithRootCAs trusts a private CA, and only it; with WithHTTPClient it
// keeps that client's timeout and leaves the caller's client untouched.
func TestWithRootCAs(t *testing.T) {
	f, err := testcert.Write(t.TempDir(), testcert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := testcert.Write(t.TempDir(), testcert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok","head_seq":0,"chain":"verified"}`))
	}))
	pair, err := tlsPair(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = pair
	srv.StartTLS()
	defer srv.Close()

	roots, err := LoadCACert(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := New(srv.URL, WithRootCAs(roots))
	if err != nil {
		t.Fatal(err)
	}
	if h, err := c.Health(ctx); err != nil || h.Status != "ok" {
		t.Fatalf("health: %+v, %v", h, err)
	}
	c.CloseIdleConnections()

	hc := &http.Client{Timeout: 7 * time.Second}
	c, err = New(srv.URL, WithHTTPClient(hc), WithRootCAs(roots))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	if c.http.Timeout != 7*time.Second || hc.Transport != nil {
		t.Errorf("timeout %s, caller's transport %v", c.http.Timeout, hc.Transport)
	}

	for name, opts := range map[string][]Option{
		"system roots":   nil,
		"another CA":     {WithRootCAs(mustPool(t, other.CA))},
		"another CA (2)": {WithHTTPClient(&http.Client{}), WithRootCAs(mustPool(t, other.CA))},
	} {
		c, err := New(srv.URL, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Health(ctx); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
			t.Errorf("%s: %v", name, err)
		}
	}

	if _, err := New(srv.URL, WithHTTPClient(&http.Client{Transport: roundTripper{}}), WithRootCAs(roots)); err == nil {
		t.Error("WithRootCAs took a transport it cannot configure")
	}
}

type roundTripper struct{}

func (roundTripper) RoundTrip(*http.Request) (*http.Response, error) { return nil, nil }

func mustPool(t *testing.T, file string) *x509.CertPool {
	t.Helper()
	p, err := LoadCACert(file)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSendsTokenInClear(t *testing.T) {
	for _, tc := range []struct {
		url, token string
		want       bool
	}{
		{"http://auditd.internal:1199", "gk_x", true},
		{"http://10.0.0.5:1199", "gk_x", true},
		{"http://auditd.internal:1199", "", false},
		{"https://auditd.internal:1199", "gk_x", false},
		{"http://127.0.0.1:1199", "gk_x", false},
		{"http://[::1]:1199", "gk_x", false},
		{"http://localhost:1199", "gk_x", false},
	} {
		c, err := New(tc.url, WithToken(tc.token))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.SendsTokenInClear(); got != tc.want {
			t.Errorf("%s with token %q: %t", tc.url, tc.token, got)
		}
	}
}

func tlsPair(cert, key string) (*tls.Config, error) {
	p, err := tls.LoadX509KeyPair(cert, key)
	return &tls.Config{Certificates: []tls.Certificate{p}}, err
}
