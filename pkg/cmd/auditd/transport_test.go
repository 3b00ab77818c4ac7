package auditd

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/testcert"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/servertls"
	"github.com/govkit/govkit/pkg/token"
)

func TestTLSFlags(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("GOVKIT_CONFIG", "")
	for _, tc := range []struct {
		name      string
		env       map[string]string
		args      []string
		cert, key string
		msg, hint string
	}{
		{name: "both", args: []string{"--tls-cert", "c.pem", "--tls-key", "k.pem"}, cert: "c.pem", key: "k.pem"},
		{name: "environment", env: map[string]string{"GOVKIT_TLS_CERT": "c.pem", "GOVKIT_TLS_KEY": "k.pem"}, cert: "c.pem", key: "k.pem"},
		{name: "cert alone", args: []string{"--tls-cert", "c.pem"},
			msg: "auditd: error: --tls-key is required with --tls-cert\n", hint: "auditd: hint: pass --tls-key FILE"},
		{name: "key alone", env: map[string]string{"GOVKIT_TLS_KEY": "k.pem"},
			msg: "auditd: error: --tls-cert is required with --tls-key\n", hint: "auditd: hint: pass --tls-cert FILE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"GOVKIT_TLS_CERT", "GOVKIT_TLS_KEY"} {
				t.Setenv(k, tc.env[k])
			}
			o, code, stderr := parse(t, tc.args...)
			if tc.msg != "" {
				if o != nil || code != 3 || !strings.Contains(stderr, tc.msg) || !strings.Contains(stderr, tc.hint) {
					t.Fatalf("exit %d, stderr %q", code, stderr)
				}
				return
			}
			if code != 0 || o.TLSCert != tc.cert || o.TLSKey != tc.key {
				t.Fatalf("exit %d (%s): cert %q key %q", code, stderr, o.TLSCert, o.TLSKey)
			}
		})
	}
}

// checkBound decides on the address bound, never on the name given.
func TestCheckBound(t *testing.T) {
	lo := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1199}
	lan := &net.TCPAddr{IP: net.IPv4(192, 168, 1, 10), Port: 1199}
	any := &net.TCPAddr{IP: net.IPv4zero, Port: 1199}
	for _, tc := range []struct {
		name     string
		o        ServeOptions
		addr     net.Addr
		tls      bool
		msg      string // "": accepted
		hintPart string
	}{
		{"local mode on loopback", ServeOptions{Addr: "localhost:1199"}, lo, false, "", ""},
		{"local mode, localhost resolved elsewhere", ServeOptions{Addr: "localhost:1199"}, lan, false,
			"--addr localhost:1199 is bound to 192.168.1.10:1199, which is not a loopback address; without a tokens file auditd authenticates no one", "check /etc/hosts"},
		{"local mode with TLS still needs loopback", ServeOptions{Addr: "localhost:1199"}, lan, true, "not a loopback address", "--tokens FILE"},
		{"local mode with --insecure-plaintext still needs loopback", ServeOptions{Addr: "localhost:1199", InsecurePlaintext: true}, lan, false, "not a loopback address", ""},
		{"tokens on loopback, plain HTTP", ServeOptions{Addr: "127.0.0.1:1199", Tokens: "t.yaml"}, lo, false, "", ""},
		{"tokens beyond loopback with TLS", ServeOptions{Addr: "0.0.0.0:1199", Tokens: "t.yaml"}, any, true, "", ""},
		{"tokens beyond loopback, plain HTTP", ServeOptions{Addr: "0.0.0.0:1199", Tokens: "t.yaml"}, any, false,
			"--addr 0.0.0.0:1199 listens beyond loopback (0.0.0.0:1199) over plain HTTP: bearer tokens would cross the network in the clear", "--insecure-plaintext"},
		{"tokens beyond loopback, --insecure-plaintext", ServeOptions{Addr: "0.0.0.0:1199", Tokens: "t.yaml", InsecurePlaintext: true}, any, false, "", ""},
	} {
		err := tc.o.checkBound(tc.addr, tc.addr == net.Addr(lo), tc.tls)
		if tc.msg == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		var ee *cli.ExitError
		if !errors.As(err, &ee) || ee.Code != 3 || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(ee.Hint, tc.hintPart) {
			t.Errorf("%s: %v (hint %q), want exit 3 with %q", tc.name, err, hintOf(err), tc.msg)
		}
	}
}

func hintOf(err error) string {
	var ee *cli.ExitError
	if errors.As(err, &ee) {
		return ee.Hint
	}
	return ""
}

// startServe runs serveRun until the test ends and returns its base URL
// (from the listening line) and its log.
func startServe(t *testing.T, o *ServeOptions) (string, *lockedBuffer) {
	t.Helper()
	streams, _, _, _ := cli.Test()
	var errOut lockedBuffer
	streams.ErrOut = &errOut
	ctx, cancel := context.WithCancel(context.Background())
	o.IO, o.Context = streams, ctx
	if o.ApprovalTimeout == 0 {
		o.ApprovalTimeout = time.Minute
	}
	done := make(chan error, 1)
	go func() { done <- serveRun(o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serveRun: %v", err)
		}
	})
	addr := regexp.MustCompile(`auditd: listening on (https://)?(\S+)\n`)
	deadline := time.Now().Add(10 * time.Second)
	for addr.FindStringSubmatch(errOut.String()) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no listening line: %q", errOut.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	m := addr.FindStringSubmatch(errOut.String())
	if m[1] != "" {
		return "https://" + m[2], &errOut
	}
	return "http://" + m[2], &errOut
}

// auditd --tls-cert --tls-key serves HTTPS only; a client trusts it with
// the CA (client.WithRootCAs) and not without.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	f, err := testcert.Write(dir, testcert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	url, log := startServe(t, &ServeOptions{Addr: "127.0.0.1:0", DB: filepath.Join(dir, "audit.db"), TLSCert: f.Cert, TLSKey: f.Key})
	if !strings.HasPrefix(url, "https://127.0.0.1:") {
		t.Fatalf("url %s", url)
	}
	if !strings.Contains(log.String(), "auditd: TLS: certificate "+f.Cert+" for localhost, 127.0.0.1, ::1, expires ") {
		t.Errorf("log: %q", log.String())
	}
	if strings.Contains(log.String(), "warning") {
		t.Errorf("a warning for a key of mode 0600: %q", log.String())
	}
	roots, err := client.LoadCACert(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(url, client.WithRootCAs(roots))
	if err != nil {
		t.Fatal(err)
	}
	if h, err := c.Health(context.Background()); err != nil || h.Status != "ok" {
		t.Fatalf("health over TLS: %+v, %v", h, err)
	}
	untrusting, _ := client.New(url)
	if _, err := untrusting.Health(context.Background()); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Fatalf("health without the CA: %v", err)
	}
	plain, _ := client.New(strings.Replace(url, "https://", "http://", 1))
	if _, err := plain.Health(context.Background()); err == nil {
		t.Fatal("plain HTTP answered on the TLS port")
	}
}

// Refusals come before any database file exists.
func TestServeRefusesBeforeTheDatabase(t *testing.T) {
	dir := t.TempDir()
	f, err := testcert.Write(dir, testcert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := testcert.Write(t.TempDir(), testcert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, "tokens.yaml")
	if _, err := token.Create(tokens, "bob", []token.Role{token.Auditor}, rand.Reader); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "audit.db")
	for _, tc := range []struct {
		name string
		o    ServeOptions
		msg  string
	}{
		{"missing certificate", ServeOptions{Addr: "127.0.0.1:0", TLSCert: filepath.Join(dir, "nope.pem"), TLSKey: f.Key}, "TLS certificate " + dir + "/nope.pem: no such file or directory"},
		{"mismatched key", ServeOptions{Addr: "127.0.0.1:0", TLSCert: f.Cert, TLSKey: other.Key}, "private key does not match public key"},
		{"tokens beyond loopback without TLS", ServeOptions{Addr: "0.0.0.0:0", Tokens: tokens}, "over plain HTTP: bearer tokens would cross the network in the clear"},
		{"local mode beyond loopback with TLS", ServeOptions{Addr: "0.0.0.0:0", TLSCert: f.Cert, TLSKey: f.Key}, "which is not a loopback address"},
	} {
		streams, _, _, errOut := cli.Test()
		o := tc.o
		o.IO, o.DB, o.ApprovalTimeout = streams, db, time.Minute
		err := serveRun(&o)
		var ee *cli.ExitError
		if !errors.As(err, &ee) || ee.Code != 3 || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want exit 3 with %q", tc.name, err, tc.msg)
		}
		if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the database exists (%v)", tc.name, err)
		}
		if strings.Contains(errOut.String(), "listening on") {
			t.Errorf("%s: %q", tc.name, errOut.String())
		}
	}
}

// --insecure-plaintext serves plain HTTP beyond loopback, with a warning.
func TestServeInsecurePlaintext(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.yaml")
	if _, err := token.Create(tokens, "bob", []token.Role{token.Auditor}, rand.Reader); err != nil {
		t.Fatal(err)
	}
	url, log := startServe(t, &ServeOptions{Addr: "0.0.0.0:0", DB: filepath.Join(dir, "audit.db"), Tokens: tokens, InsecurePlaintext: true})
	if !strings.HasPrefix(url, "http://0.0.0.0:") && !strings.HasPrefix(url, "http://[::]:") {
		t.Fatalf("url %s", url)
	}
	if !strings.Contains(log.String(), "auditd: warning: --insecure-plaintext: serving plain HTTP beyond loopback on ") {
		t.Fatalf("log %q", log.String())
	}
}

// SIGHUP reads the TLS pair again: a renewed one is served from the next
// handshake; one that does not load is logged and the pair in use stays.
func TestReloadTLSOnHangup(t *testing.T) {
	dir := t.TempDir()
	first, err := testcert.Write(t.TempDir(), testcert.Options{CommonName: "first"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := testcert.Write(t.TempDir(), testcert.Options{CommonName: "second"})
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	install := func(cert, key string) {
		for src, dst := range map[string]string{cert: certFile, key: keyFile} {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	install(first.Cert, first.Key)
	cert, err := servertls.LoadCertificate(certFile, keyFile, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	hup := make(chan os.Signal)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		reloadOnHangup(ctx, hup, &ServeOptions{}, nil, cert, &syncWriter{w: &out})
	}()
	defer func() { cancel(); <-done }()
	hangup := func(want string) {
		t.Helper()
		hup <- syscall.SIGHUP
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log:\n%s", want, out.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	install(second.Cert, second.Key)
	hangup("auditd: TLS certificate reloaded from " + certFile + " (expires ")
	if cn := cert.Leaf().Subject.CommonName; cn != "second" {
		t.Fatalf("serving %q after the reload", cn)
	}
	install(first.Cert, second.Key) // a half-done renewal
	hangup("auditd: error: reloading the TLS certificate on SIGHUP: TLS certificate " + certFile + " and key " + keyFile + ": private key does not match public key; keeping the certificate in use (expires ")
	if cn := cert.Leaf().Subject.CommonName; cn != "second" {
		t.Fatalf("serving %q after a failed reload", cn)
	}
	if strings.Contains(out.String(), "nothing to reload") {
		t.Errorf("log: %s", out.String())
	}
}
