package notify

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"io"
	"math/big"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/textproto"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// smtpServer is an SMTP server on loopback that speaks enough of RFC 5321
// (EHLO, STARTTLS, AUTH PLAIN, MAIL, RCPT, DATA, QUIT) to receive what the
// email notifier sends, and records the conversation.
type smtpServer struct {
	ln       net.Listener
	tls      *tls.Config // nil: no STARTTLS offered
	implicit bool        // TLS from the first byte (port 465)
	sessions chan *smtpSession
}

type smtpSession struct {
	commands []string // verbs in order; "STARTTLS" marks the switch
	auths    []smtpAuth
	from     string
	rcpt     []string
	data     []byte
}

type smtpAuth struct {
	overTLS bool
	plain   string // decoded: authzid NUL user NUL password
}

func newSMTPServer(t *testing.T, tlsConfig *tls.Config, addr string, implicit bool) *smtpServer {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("listen %s: %v", addr, err)
	}
	s := &smtpServer{ln: ln, tls: tlsConfig, implicit: implicit, sessions: make(chan *smtpSession, 16)}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.serve(conn)
			}()
		}
	}()
	return s
}

func (s *smtpServer) config(t *testing.T) SMTPConfig {
	host, port, _ := net.SplitHostPort(s.ln.Addr().String())
	p, _ := strconv.Atoi(port)
	return SMTPConfig{Host: host, Port: p, From: "govkit <govkit@example.com>", To: []string{"ops@example.com, On Call <oncall@example.com>"}}
}

func (s *smtpServer) session(t *testing.T) *smtpSession {
	t.Helper()
	select {
	case ss := <-s.sessions:
		return ss
	case <-time.After(10 * time.Second):
		t.Fatal("no SMTP session ended")
		return nil
	}
}

func (s *smtpServer) serve(conn net.Conn) {
	ss := &smtpSession{}
	defer func() { conn.Close(); s.sessions <- ss }()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	isTLS := false
	if s.implicit {
		conn = tls.Server(conn, s.tls)
		isTLS = true
	}
	tp := textproto.NewConn(conn)
	reply := func(lines ...string) {
		for i, l := range lines {
			sep := "-"
			if i == len(lines)-1 {
				sep = " "
			}
			_ = tp.PrintfLine("%s%s%s", l[:3], sep, l[3:])
		}
	}
	reply("220mx.test ESMTP")
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		verb = strings.ToUpper(verb)
		ss.commands = append(ss.commands, verb)
		switch verb {
		case "EHLO":
			lines := []string{"250mx.test"}
			if s.tls != nil && !isTLS {
				lines = append(lines, "250STARTTLS")
			}
			// AUTH is offered even on a plain connection: a careless
			// client would take the bait.
			reply(append(lines, "250AUTH PLAIN")...)
		case "STARTTLS":
			if s.tls == nil || isTLS {
				reply("502not offered")
				continue
			}
			reply("220go ahead")
			tc := tls.Server(conn, s.tls)
			if err := tc.Handshake(); err != nil {
				return
			}
			conn, isTLS = tc, true
			tp = textproto.NewConn(conn)
		case "AUTH":
			mech, resp, _ := strings.Cut(arg, " ")
			if strings.ToUpper(mech) != "PLAIN" {
				reply("504unsupported")
				continue
			}
			if resp == "" {
				reply("334 ")
				if resp, err = tp.ReadLine(); err != nil {
					return
				}
			}
			dec, err := base64.StdEncoding.DecodeString(resp)
			if err != nil {
				reply("501bad base64")
				continue
			}
			ss.auths = append(ss.auths, smtpAuth{overTLS: isTLS, plain: string(dec)})
			reply("235accepted")
		case "MAIL":
			ss.from = arg
			reply("250ok")
		case "RCPT":
			ss.rcpt = append(ss.rcpt, arg)
			reply("250ok")
		case "DATA":
			reply("354end with .")
			if ss.data, err = tp.ReadDotBytes(); err != nil {
				return
			}
			reply("250queued")
		case "RSET", "NOOP":
			reply("250ok")
		case "QUIT":
			reply("221bye")
			return
		default:
			reply("502unknown")
		}
	}
}

// selfSigned returns a server certificate for 127.0.0.1 and a pool that
// trusts it.
func selfSigned(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "mx.test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}}}, pool
}

// readMail parses a received message and decodes its quoted-printable body.
func readMail(t *testing.T, data []byte) (*mail.Message, string) {
	t.Helper()
	msg, err := mail.ReadMessage(strings.NewReader(string(data)))
	if err != nil {
		t.Fatalf("not an RFC 5322 message: %v\n%s", err, data)
	}
	if msg.Header.Get("Content-Transfer-Encoding") != "quoted-printable" {
		t.Fatalf("Content-Transfer-Encoding = %q", msg.Header.Get("Content-Transfer-Encoding"))
	}
	body, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
	if err != nil {
		t.Fatal(err)
	}
	return msg, string(body)
}

func TestEmailRequested(t *testing.T) {
	serverTLS, roots := selfSigned(t)
	srv := newSMTPServer(t, serverTLS, "", false)
	c := srv.config(t)
	c.User, c.Password, c.TLS = "govkit", "s3cret-pw", &tls.Config{RootCAs: roots}
	n := only(t, Config{SMTP: c, BaseURL: testBase})
	if n.Name() != "email" {
		t.Errorf("Name = %q", n.Name())
	}
	if err := n.Notify(context.Background(), Message{Kind: Requested, Request: pending(t), Now: now}); err != nil {
		t.Fatal(err)
	}
	ss := srv.session(t)

	// Credentials only after STARTTLS, then the envelope.
	if got := strings.Join(ss.commands, " "); got != "EHLO STARTTLS EHLO AUTH MAIL RCPT RCPT DATA QUIT" {
		t.Errorf("conversation = %s", got)
	}
	if len(ss.auths) != 1 || !ss.auths[0].overTLS || ss.auths[0].plain != "\x00govkit\x00s3cret-pw" {
		t.Errorf("auth = %+v; want one AUTH PLAIN over TLS", ss.auths)
	}
	if ss.from != "FROM:<govkit@example.com>" || strings.Join(ss.rcpt, ",") != "TO:<ops@example.com>,TO:<oncall@example.com>" {
		t.Errorf("envelope from %q to %q", ss.from, ss.rcpt)
	}

	msg, body := readMail(t, ss.data)
	h := msg.Header
	subject, err := new(mime.WordDecoder).DecodeHeader(h.Get("Subject"))
	if err != nil {
		t.Fatal(err)
	}
	date, err := h.Date()
	for _, bad := range []bool{
		h.Get("From") != `"govkit" <govkit@example.com>`,
		h.Get("To") != `<ops@example.com>, "On Call" <oncall@example.com>`,
		subject != "[govkit] Approval requested: write on database:prod-db by alice",
		err != nil || !date.Equal(now),
		!regexp.MustCompile(`^<[0-9a-f]{32}\.govkit@example\.com>$`).MatchString(h.Get("Message-Id")),
		h.Get("Mime-Version") != "1.0",
		h.Get("Content-Type") != "text/plain; charset=utf-8",
	} {
		if bad {
			head, _, _ := strings.Cut(string(ss.data), "\n\n")
			t.Errorf("headers:\n%s", head)
			break
		}
	}
	for _, want := range []string{
		"Resource:     database:prod-db\n",
		"Tags:         production, pii\n",
		"Action:       write\n",
		"Requested by: alice\n",
		"Reason:       unstick order 7\n",
		"Policy:       prod-db-guard\n",
		"Explanation:  " + explanation + "\n",
		"Quorum:       0 of 2 approvals\n",
		"Expiry:       expires in 4m59s, at 10:05:00 UTC\n",
		"approvals approve apr_01HX --url http://auditd.internal:1199\n",
		`approvals deny apr_01HX --reason "…" --url http://auditd.internal:1199` + "\n",
		"http://auditd.internal:1199/v1/approvals/apr_01HX\n",
	} {
		if !strings.Contains(strings.ReplaceAll(body, "\r\n", "\n"), want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
}

func TestEmailResolved(t *testing.T) {
	serverTLS, roots := selfSigned(t)
	srv := newSMTPServer(t, serverTLS, "", false)
	c := srv.config(t)
	c.TLS = &tls.Config{RootCAs: roots}
	n := only(t, Config{SMTP: c})
	if err := n.Notify(context.Background(), Message{Kind: Resolved, Request: denied(t), Now: now}); err != nil {
		t.Fatal(err)
	}
	ss := srv.session(t)
	if len(ss.auths) != 0 || ss.commands[1] != "STARTTLS" {
		t.Errorf("conversation %v, auths %v: want STARTTLS (offered) and no AUTH (no user)", ss.commands, ss.auths)
	}
	msg, body := readMail(t, ss.data)
	if got, _ := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject")); got != "[govkit] Approval denied by carol: write on database:prod-db" {
		t.Errorf("Subject = %q", got)
	}
	if !strings.Contains(body, "Outcome:      denied by carol") || !strings.Contains(body, "Why:          not during the freeze") {
		t.Errorf("body:\n%s", body)
	}
}

// Never send credentials in the clear, even to a loopback server (which
// net/smtp's PlainAuth alone would allow).
func TestEmailRefusesPasswordWithoutSTARTTLS(t *testing.T) {
	srv := newSMTPServer(t, nil, "", false)
	c := srv.config(t)
	c.User, c.Password = "govkit", "s3cret-pw"
	err := only(t, Config{SMTP: c}).Notify(context.Background(), Message{Kind: Requested, Request: pending(t), Now: now})
	var pe *permanentError
	if err == nil || !strings.Contains(err.Error(), "STARTTLS") || !errors.As(err, &pe) {
		t.Fatalf("err = %v; want a permanent refusal naming STARTTLS", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error shows the password: %v", err)
	}
	ss := srv.session(t)
	if len(ss.auths) != 0 || ss.from != "" || ss.data != nil {
		t.Errorf("server got auth %v, MAIL %q, data %d bytes; want nothing", ss.auths, ss.from, len(ss.data))
	}

	// Without a password, a plain server is fine.
	c.User, c.Password = "", ""
	if err := only(t, Config{SMTP: c}).Notify(context.Background(), Message{Kind: Requested, Request: pending(t), Now: now}); err != nil {
		t.Fatal(err)
	}
	if ss := srv.session(t); ss.data == nil {
		t.Error("no message without credentials")
	}
}

func TestEmailVerifiesCertificate(t *testing.T) {
	serverTLS, _ := selfSigned(t)
	srv := newSMTPServer(t, serverTLS, "", false)
	c := srv.config(t)
	c.User, c.Password = "govkit", "s3cret-pw" // system roots do not trust the test cert
	err := only(t, Config{SMTP: c}).Notify(context.Background(), Message{Kind: Requested, Request: pending(t), Now: now})
	if err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Fatalf("err = %v; want a certificate failure", err)
	}
	if ss := srv.session(t); len(ss.auths) != 0 {
		t.Error("credentials sent to an unverified server")
	}
}

// Request fields with CR/LF must not add headers or recipients, and the
// body must survive a lone "." line.
func TestEmailHeaderInjection(t *testing.T) {
	serverTLS, roots := selfSigned(t)
	srv := newSMTPServer(t, serverTLS, "", false)
	c := srv.config(t)
	c.TLS = &tls.Config{RootCAs: roots}
	r := pending(t)
	r.RequestedBy = "alice\r\nBcc: mallory@evil.test"
	r.Resource.Name = "bäse\r\nX-Injected: yes\r\n\r\nfake body"
	r.Action = "write\nReply-To: mallory@evil.test"
	r.Reason = "line one\n.\nMAIL FROM:<mallory@evil.test>\r\nline four"
	if err := only(t, Config{SMTP: c}).Notify(context.Background(), Message{Kind: Requested, Request: r, Now: now}); err != nil {
		t.Fatal(err)
	}
	ss := srv.session(t)
	if len(ss.rcpt) != 2 {
		t.Errorf("recipients %v", ss.rcpt)
	}
	msg, body := readMail(t, ss.data)
	for _, h := range []string{"Bcc", "X-Injected", "Reply-To"} {
		if v := msg.Header.Get(h); v != "" {
			t.Errorf("injected header %s: %q", h, v)
		}
	}
	if len(msg.Header) != 9 {
		t.Errorf("%d headers; want 9: %v", len(msg.Header), msg.Header)
	}
	raw := msg.Header.Get("Subject")
	if !strings.HasPrefix(raw, "=?utf-8?q?") {
		t.Errorf("non-ASCII subject not Q-encoded: %q", raw)
	}
	subject, _ := new(mime.WordDecoder).DecodeHeader(raw)
	if want := "[govkit] Approval requested: write Reply-To: mallory@evil.test on database:bäse  X-Injected: yes    fake body by alice  Bcc: mallory@evil.test"; subject != want {
		t.Errorf("Subject = %q; want %q", subject, want)
	}
	if !strings.Contains(body, "Reason:       line one\n              .\n              MAIL FROM:<mallory@evil.test>\n              line four\n") {
		t.Errorf("body:\n%s", body)
	}
	// Every header line is a field or a folded continuation.
	head, _, _ := strings.Cut(string(ss.data), "\n\n") // ReadDotBytes turned CRLF into LF
	sc := bufio.NewScanner(strings.NewReader(head))
	for sc.Scan() {
		if !regexp.MustCompile(`^([A-Za-z-]+: |[ \t])`).MatchString(sc.Text()) {
			t.Errorf("stray header line %q", sc.Text())
		}
	}
}

// Port 465 is SMTPS: TLS from the first byte, no STARTTLS.
func TestEmailImplicitTLS(t *testing.T) {
	serverTLS, roots := selfSigned(t)
	srv := newSMTPServer(t, serverTLS, "127.0.0.1:465", true)
	c := srv.config(t)
	c.User, c.Password, c.TLS = "govkit", "s3cret-pw", &tls.Config{RootCAs: roots}
	if err := only(t, Config{SMTP: c}).Notify(context.Background(), Message{Kind: Requested, Request: pending(t), Now: now}); err != nil {
		t.Fatal(err)
	}
	ss := srv.session(t)
	if len(ss.auths) != 1 || !ss.auths[0].overTLS || ss.data == nil {
		t.Errorf("auths %+v, data %d bytes", ss.auths, len(ss.data))
	}
}

// A server that never answers is bounded by the context.
func TestEmailHonoursContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		conn, err := ln.Accept()
		if err == nil {
			<-quit // no greeting, ever
			conn.Close()
		}
	}()
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := strconv.Atoi(port)
	n := only(t, Config{SMTP: SMTPConfig{Host: host, Port: p, From: "a@example.com", To: []string{"b@example.com"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	// The server never answers: Notify returns at all only because the
	// context ended (the hang guard stops a Notify that ignores it).
	m := Message{Kind: Requested, Request: pending(t), Now: now}
	done := make(chan error, 1)
	go func() { done <- n.Notify(ctx, m) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("no error from a silent server")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Notify did not return within 30s of a 200ms context (hang guard)")
	}
}
