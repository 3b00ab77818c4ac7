package notify

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"strconv"
	"strings"
	"time"
)

// emailNotifier sends a plain-text email over SMTP (net/smtp).
type emailNotifier struct {
	cfg     SMTPConfig
	addr    string // host:port
	from    *mail.Address
	to      []*mail.Address
	baseURL string
}

var _ Notifier = (*emailNotifier)(nil)

func newEmail(c SMTPConfig, baseURL string) (*emailNotifier, error) {
	if c.Port == 0 {
		c.Port = DefaultSMTPPort
	}
	from, err := mail.ParseAddress(c.From)
	if err != nil {
		return nil, &ConfigError{"GOVKIT_SMTP_FROM", "SMTP.From", fmt.Sprintf("%q is not an email address: %v", c.From, err)}
	}
	to, err := c.recipients()
	if err != nil {
		return nil, err
	}
	host := strings.TrimSuffix(strings.TrimPrefix(c.Host, "["), "]")
	return &emailNotifier{
		cfg:     c,
		addr:    net.JoinHostPort(host, strconv.Itoa(c.Port)),
		from:    from,
		to:      to,
		baseURL: baseURL,
	}, nil
}

func (e *emailNotifier) Name() string { return "email" }

func (e *emailNotifier) Notify(ctx context.Context, m Message) error {
	if m.Notice != nil {
		return permanent(errors.New("email: only approval requests are sent by email"))
	}
	if m.Now.IsZero() {
		return permanent(fmt.Errorf("email: %w", errNoNow))
	}
	msg, err := e.message(newView(m, e.baseURL), m.Now)
	if err != nil {
		return permanent(fmt.Errorf("email: %w", err))
	}
	if err := e.send(ctx, msg); err != nil {
		return fmt.Errorf("email via %s: %w", e.addr, err)
	}
	return nil
}

// send speaks SMTP: EHLO, STARTTLS when offered (required before AUTH),
// AUTH PLAIN, MAIL, RCPT, DATA, QUIT. ctx bounds the whole conversation.
func (e *emailNotifier) send(ctx context.Context, msg []byte) (err error) {
	host := e.serverName()
	tlsConfig := e.tlsConfig(host)
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", e.addr)
	if err != nil {
		return err
	}
	// net/smtp knows no context: a deadline and a close on cancel bound it.
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	implicitTLS := e.cfg.Port == 465
	if implicitTLS {
		tc := tls.Client(conn, tlsConfig)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return fmt.Errorf("TLS: %w", err)
		}
		conn = tc
	}
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return err
	}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if err := c.Hello("localhost"); err != nil {
		return err
	}
	secure := implicitTLS
	if !secure {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(tlsConfig); err != nil {
				return fmt.Errorf("STARTTLS: %w", err)
			}
			secure = true
		}
	}
	if e.cfg.User != "" {
		if !secure {
			// net/smtp's PlainAuth would still log in to a loopback server
			// in the clear; a password never crosses a plain connection.
			return permanent(errors.New("the server does not offer STARTTLS; refusing to send GOVKIT_SMTP_USER's password in the clear (use a server with STARTTLS, port 465, or no GOVKIT_SMTP_USER)"))
		}
		if ok, _ := c.Extension("AUTH"); !ok {
			return permanent(errors.New("the server does not offer AUTH; unset GOVKIT_SMTP_USER or use the submission server"))
		}
		if err := c.Auth(smtp.PlainAuth("", e.cfg.User, e.cfg.Password, host)); err != nil {
			return fmt.Errorf("AUTH PLAIN as %s: %w", e.cfg.User, err)
		}
	}
	if err := c.Mail(e.from.Address); err != nil {
		return fmt.Errorf("MAIL FROM: %w", err)
	}
	for _, to := range e.to {
		if err := c.Rcpt(to.Address); err != nil {
			return fmt.Errorf("RCPT TO <%s>: %w", to.Address, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	if _, err := w.Write(msg); err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	// The message is accepted once DATA's answer is 250; a failed QUIT
	// does not make it undelivered (and retrying would send it twice).
	_ = c.Quit()
	return nil
}

func (e *emailNotifier) serverName() string {
	return strings.TrimSuffix(strings.TrimPrefix(e.cfg.Host, "["), "]")
}

func (e *emailNotifier) tlsConfig(host string) *tls.Config {
	var c *tls.Config
	if e.cfg.TLS != nil {
		c = e.cfg.TLS.Clone()
	} else {
		c = &tls.Config{}
	}
	if c.ServerName == "" {
		c.ServerName = host
	}
	if c.MinVersion == 0 {
		c.MinVersion = tls.VersionTLS12
	}
	return c
}

// message builds the RFC 5322 message. Every header value from the request
// passes through oneLine (no CR or LF, so no injected header) and is
// Q-encoded when not plain ASCII; the body is quoted-printable UTF-8, which
// no server needs 8BITMIME for.
func (e *emailNotifier) message(v view, now time.Time) ([]byte, error) {
	var b bytes.Buffer
	header := func(name, value string) {
		b.WriteString(name + ": " + value + "\r\n")
	}
	header("From", e.from.String())
	to := make([]string, len(e.to))
	for i, a := range e.to {
		to[i] = a.String()
	}
	header("To", strings.Join(to, ", "))
	subject := "[govkit] " + v.Title
	if v.Outcome == "" && v.RequestedBy != "" {
		subject += " by " + v.RequestedBy
	}
	header("Subject", mime.QEncoding.Encode("utf-8", oneLine(subject, 200)))
	header("Date", now.Format(time.RFC1123Z))
	id, err := messageID(e.from.Address)
	if err != nil {
		return nil, err
	}
	header("Message-ID", id)
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	header("Content-Transfer-Encoding", "quoted-printable")
	header("Auto-Submitted", "auto-generated") // RFC 3834: no vacation replies
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	if _, err := qp.Write([]byte(v.text())); err != nil {
		return nil, err
	}
	if err := qp.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// messageID is a random RFC 5322 msg-id at the sender's domain.
func messageID(from string) (string, error) {
	var r [16]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	domain := "govkit.invalid"
	if i := strings.LastIndexByte(from, '@'); i >= 0 && i+1 < len(from) {
		domain = from[i+1:]
	}
	return "<" + hex.EncodeToString(r[:]) + ".govkit@" + domain + ">", nil
}
