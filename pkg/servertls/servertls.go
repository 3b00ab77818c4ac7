// Package servertls is the transport of govkit's daemons (auditd, gate
// serve): their TLS certificate, reloadable, and the rule of which
// listener address counts as loopback (DESIGN §11 "Transport").
package servertls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// maxPEMFile bounds a certificate or key file: a chain of a few
// certificates is a few KiB.
const maxPEMFile = 1 << 20

// Certificate is a daemon's TLS certificate and private key, read from two
// PEM files (--tls-cert, --tls-key; DESIGN §11 "Transport"). Reload
// reads them again (SIGHUP) and the next handshake uses the new pair, so a
// renewed certificate needs no restart; connections already open keep
// theirs.
type Certificate struct {
	CertFile, KeyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// LoadCertificate reads and checks the pair: both files regular and at
// most 1 MiB, the key matching the certificate, the certificate valid at
// now. Its errors name the file at fault and never quote a key.
func LoadCertificate(certFile, keyFile string, now time.Time) (*Certificate, error) {
	c := &Certificate{CertFile: certFile, KeyFile: keyFile}
	if err := c.Reload(now); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload reads the files again; on error the pair in use stays.
func (c *Certificate) Reload(now time.Time) error {
	certPEM, err := readPEMFile(c.CertFile)
	if err != nil {
		return fmt.Errorf("TLS certificate %s: %w", c.CertFile, err)
	}
	keyPEM, err := readPEMFile(c.KeyFile)
	if err != nil {
		return fmt.Errorf("TLS key %s: %w", c.KeyFile, err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("TLS certificate %s and key %s: %s", c.CertFile, c.KeyFile, strings.TrimPrefix(err.Error(), "tls: "))
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return fmt.Errorf("TLS certificate %s: %v", c.CertFile, err)
		}
		pair.Leaf = leaf
	}
	// Every client would refuse it: say so at start (or on SIGHUP, keeping
	// the pair in use) rather than through each client's handshake error.
	switch {
	case now.After(leaf.NotAfter):
		return fmt.Errorf("TLS certificate %s expired at %s", c.CertFile, leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		return fmt.Errorf("TLS certificate %s is not valid before %s", c.CertFile, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	c.cur.Store(&pair)
	return nil
}

// Leaf is the certificate in use.
func (c *Certificate) Leaf() *x509.Certificate { return c.cur.Load().Leaf }

// Names are the DNS names and IP addresses the certificate in use is for,
// for the log.
func (c *Certificate) Names() []string {
	leaf := c.Leaf()
	names := append([]string(nil), leaf.DNSNames...)
	for _, ip := range leaf.IPAddresses {
		names = append(names, ip.String())
	}
	return names
}

// TLSConfig is the daemons' server configuration: TLS 1.2 at least (Go
// negotiates 1.3 whenever the client offers it, with Go's default cipher
// suites, all forward-secret AEADs for 1.2), HTTP/1.1, and the certificate
// read at each handshake so that Reload takes effect at once.
func (c *Certificate) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.cur.Load(), nil
		},
	}
}

// readPEMFile reads a regular file of at most maxPEMFile bytes: a FIFO or
// a device named by mistake must not hang or flood a daemon at start
// (O_NONBLOCK: opening a FIFO would otherwise wait for a writer).
func readPEMFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxPEMFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxPEMFile {
		return nil, fmt.Errorf("larger than %d bytes", maxPEMFile)
	}
	return data, nil
}

// IsLoopbackAddr reports whether a listener's address is on the loopback
// interface. Local mode (no tokens file) asks it of the address the daemon
// actually bound, not of the name it was given: "localhost" is whatever
// /etc/hosts says, and a remapped one must not open an unauthenticated
// listener on another interface (DESIGN §11 "Transport", issue 13). The
// unspecified address (0.0.0.0, ::) is every interface, not loopback.
func IsLoopbackAddr(a net.Addr) bool {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UDPAddr:
		return a.IP.IsLoopback()
	case *net.IPAddr:
		return a.IP.IsLoopback()
	}
	return false
}
