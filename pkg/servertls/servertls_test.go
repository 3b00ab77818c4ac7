package servertls_test

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/testcert"
	"github.com/govkit/govkit/pkg/servertls"
)

func writeCert(t *testing.T, o testcert.Options) testcert.Files {
	t.Helper()
	f, err := testcert.Write(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestLoadCertificate(t *testing.T) {
	good := writeCert(t, testcert.Options{})
	other := writeCert(t, testcert.Options{})
	expired := writeCert(t, testcert.Options{NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	future := writeCert(t, testcert.Options{NotBefore: time.Now().Add(time.Hour)})
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	keyPEM, err := os.ReadFile(good.Key)
	if err != nil {
		t.Fatal(err)
	}

	c, err := servertls.LoadCertificate(good.Cert, good.Key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Names(), ","); got != "localhost,127.0.0.1,::1" {
		t.Errorf("names %q", got)
	}

	for _, tc := range []struct {
		name, cert, key, msg string
	}{
		{"missing certificate", filepath.Join(dir, "nope.pem"), good.Key, "TLS certificate " + dir + "/nope.pem: no such file or directory"},
		{"missing key", good.Cert, filepath.Join(dir, "nope.key"), "TLS key " + dir + "/nope.key: no such file or directory"},
		{"key of another certificate", good.Cert, other.Key, "private key does not match public key"},
		{"certificate and key swapped", good.Key, good.Cert, "TLS certificate " + good.Key + " and key " + good.Cert + ": "},
		{"not PEM", garbage, good.Key, "failed to find any PEM data in certificate input"},
		{"a directory", dir, good.Key, "TLS certificate " + dir + ": not a regular file"},
		{"a FIFO", good.Cert, fifo, "TLS key " + fifo + ": not a regular file"},
		{"expired", expired.Cert, expired.Key, "TLS certificate " + expired.Cert + " expired at "},
		{"not yet valid", future.Cert, future.Key, " is not valid before "},
	} {
		_, err := servertls.LoadCertificate(tc.cert, tc.key, time.Now())
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.msg)
			continue
		}
		// A key never reaches an error message (or the log).
		if strings.Contains(err.Error(), "PRIVATE KEY") || strings.Contains(err.Error(), string(keyPEM[40:80])) {
			t.Errorf("%s: the error quotes the key: %v", tc.name, err)
		}
	}
}

// Reload swaps the pair for the next handshake; a pair that does not load
// leaves the one in use.
func TestCertificateReload(t *testing.T) {
	dir := t.TempDir()
	first := writeCert(t, testcert.Options{CommonName: "first"})
	second := writeCert(t, testcert.Options{CommonName: "second"})
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	install := func(f testcert.Files) {
		for src, dst := range map[string]string{f.Cert: cert, f.Key: key} {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	install(first)
	c, err := servertls.LoadCertificate(cert, key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", c.TLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				conn.(*tls.Conn).Handshake()
				conn.Close()
			}()
		}
	}()
	// servedName is the common name the server presents.
	servedName := func(caFile string) string {
		t.Helper()
		pem, err := os.ReadFile(caFile)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "localhost"})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		st := conn.ConnectionState()
		if st.Version != tls.VersionTLS13 {
			t.Errorf("negotiated %s, want TLS 1.3", tls.VersionName(st.Version))
		}
		return st.PeerCertificates[0].Subject.CommonName
	}
	if got := servedName(first.CA); got != "first" {
		t.Fatalf("serving %q", got)
	}
	install(second)
	if err := c.Reload(time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := servedName(second.CA); got != "second" {
		t.Fatalf("after reload: serving %q", got)
	}
	// A half-written renewal: the key of another pair.
	if err := os.WriteFile(key, mustRead(t, first.Key), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.Reload(time.Now()); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("reload of a mismatched pair: %v", err)
	}
	if got := servedName(second.CA); got != "second" {
		t.Fatalf("after a failed reload: serving %q", got)
	}

	// Below TLS 1.2: no handshake.
	conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS11})
	if err == nil {
		conn.Close()
		t.Fatal("a TLS 1.1 handshake succeeded")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestIsLoopbackAddr(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want bool
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1199}, true},
		{&net.TCPAddr{IP: net.IPv4(127, 1, 2, 3)}, true},
		{&net.TCPAddr{IP: net.IPv6loopback}, true},
		{&net.TCPAddr{IP: net.IPv4zero}, false}, // every interface
		{&net.TCPAddr{IP: net.IPv6unspecified}, false},
		{&net.TCPAddr{}, false},
		{&net.TCPAddr{IP: net.IPv4(192, 168, 1, 10)}, false},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.0.0.1")}, false},
		{&net.UnixAddr{Name: "/tmp/s", Net: "unix"}, false},
	} {
		if got := servertls.IsLoopbackAddr(tc.addr); got != tc.want {
			t.Errorf("%v: %t, want %t", tc.addr, got, tc.want)
		}
	}
}
