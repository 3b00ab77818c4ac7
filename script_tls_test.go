package govkit_test

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/govkit/govkit/internal/testcert"
	"github.com/govkit/govkit/pkg/client"
)

// Script commands and conditions for auditd's transport (DESIGN §11
// "Transport", issue 13): TLS with a throwaway CA, raw POSTs of any
// Content-Type, and a remapped localhost.

// gencert DIR: write a new CA (DIR/ca.pem) and a server certificate it
// signed for 127.0.0.1, ::1 and localhost (DIR/cert.pem, DIR/key.pem).
func cmdGencert(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: gencert DIR")
	}
	dir := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dir, 0o755))
	_, err := testcert.Write(dir, testcert.Options{})
	ts.Check(err)
}

// httpsClient trusts the CA certificate in caFile.
func httpsClient(ts *testscript.TestScript, caFile string) *http.Client {
	roots, err := client.LoadCACert(ts.MkAbs(caFile))
	ts.Check(err)
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: t}
}

// httppost URL CONTENT-TYPE FILE [HEADER=VALUE...]: POST the bytes of FILE
// to URL with that Content-Type (an empty one sends none; an empty FILE,
// no body) and print the answer's status and body on one line: "415 {…}".
// Any status is printed; scripts match it.
func cmdHTTPPost(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: httppost URL CONTENT-TYPE FILE [HEADER=VALUE...]")
	}
	var body io.Reader
	if args[2] != "" {
		data, err := os.ReadFile(ts.MkAbs(args[2]))
		ts.Check(err)
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequest(http.MethodPost, args[0], body)
	ts.Check(err)
	if args[1] != "" {
		req.Header.Set("Content-Type", args[1])
	}
	for _, h := range args[3:] {
		k, v, ok := strings.Cut(h, "=")
		if !ok {
			ts.Fatalf("httppost: header %q is not NAME=VALUE", h)
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	ts.Check(err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "%d %s\n", resp.StatusCode, bytes.TrimSpace(b))
}

// nonloopback VAR: set VAR to an IPv4 address of this machine that is not
// loopback ([nonloopback] tells whether there is one).
func cmdNonloopback(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: nonloopback VAR")
	}
	ip := nonloopbackIPv4()
	if ip == "" {
		ts.Fatalf("nonloopback: this machine has no IPv4 address beyond loopback")
	}
	ts.Setenv(args[0], ip)
}

// nonloopbackIPv4 is an IPv4 address of an interface that is up and not
// loopback; "" if there is none.
func nonloopbackIPv4() string {
	ifaces, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
				return n.IP.String()
			}
		}
	}
	return ""
}

// scriptCondition answers [root] (the tests run as root), [mountns]
// (unshare -m works here, with a private / to bind-mount over) and
// [nonloopback] (the machine has an IPv4 address beyond loopback).
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "root":
		return os.Geteuid() == 0, nil
	case "nonloopback":
		return nonloopbackIPv4() != "", nil
	case "mountns":
		if os.Geteuid() != 0 {
			return false, nil
		}
		if _, err := exec.LookPath("unshare"); err != nil {
			return false, nil
		}
		return exec.Command("unshare", "-m", "sh", "-c", "mount --make-rprivate /").Run() == nil, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}
