package client

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
)

// maxCAFile bounds a CA bundle: the system's holds ~150 certificates in
// ~200 KiB.
const maxCAFile = 4 << 20

// LoadCACert reads the PEM file of the CA certificates that sign auditd's
// TLS certificate (--ca-cert; DESIGN §11 "Transport"), for WithRootCAs. A
// file without one certificate, or with a PEM block that is not a
// certificate, is an error: a private key passed by mistake must not be
// taken for an empty trust list. No file ("": --ca-cert not given) is nil
// roots: the system's.
func LoadCACert(file string) (*x509.CertPool, error) {
	if file == "" {
		return nil, nil
	}
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a FIFO must not hang us
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("CA certificate %s: %w", file, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, fmt.Errorf("CA certificate %s: %w", file, err)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("CA certificate %s: not a regular file", file)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCAFile+1))
	if err != nil {
		return nil, fmt.Errorf("CA certificate %s: %w", file, err)
	}
	if len(data) > maxCAFile {
		return nil, fmt.Errorf("CA certificate %s: larger than %d bytes", file, maxCAFile)
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		n++
		if block.Type != "CERTIFICATE" {
			// Never echo the block: it may be a private key.
			return nil, fmt.Errorf("CA certificate %s: PEM block %d is %q, not a CERTIFICATE", file, n, block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("CA certificate %s: certificate %d: %v", file, n, err)
		}
		pool.AddCert(cert)
	}
	if n == 0 {
		return nil, fmt.Errorf("CA certificate %s: no PEM certificate in the file", file)
	}
	return pool, nil
}

// WithRootCAs trusts only the CAs in pool for an https:// auditd, instead
// of the system's (a private CA; LoadCACert reads one). With WithHTTPClient,
// the TLS settings go to a copy of that client's *http.Transport.
func WithRootCAs(pool *x509.CertPool) Option { return func(c *Client) { c.roots = pool } }

// TLSConfig is every govkit client's TLS (auditd's and gate serve's): TLS
// 1.2 at least, the roots given.
func TLSConfig(roots *x509.CertPool) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
}

// useRoots gives c's HTTP client a transport that trusts c.roots. It is
// the one place a client's TLS is set.
func (c *Client) useRoots() error {
	var t *http.Transport
	switch rt := c.http.Transport.(type) {
	case nil:
		t = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		t = rt.Clone()
	default:
		return fmt.Errorf("WithRootCAs needs an *http.Transport, not %T", rt)
	}
	t.TLSClientConfig = TLSConfig(c.roots)
	hc := *c.http
	hc.Transport = t
	c.http = &hc
	return nil
}

// IsCertificateError reports whether err is a TLS certificate auditd's
// client does not accept (unknown CA, wrong name, expired). It is not
// transient: retrying cannot help; --ca-cert or auditd's certificate must
// change.
func IsCertificateError(err error) bool {
	var verr *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &verr) || errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid)
}

// CloseIdleConnections closes the connections the client keeps open for
// reuse (auditd waits for open ones when it stops).
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// SendsTokenInClear reports whether c sends a bearer token over plain HTTP
// to a host that is not loopback, where anyone on the path can read it:
// CLIs warn (DESIGN §11 "Transport").
func (c *Client) SendsTokenInClear() bool {
	if c.token == "" || c.base.Scheme != "http" {
		return false
	}
	host := c.base.Hostname()
	if host == "localhost" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}
