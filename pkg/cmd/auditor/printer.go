package auditor

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/termtext"
)

// printer writes alerts to standard output, one line each: the alert's JSON
// (DESIGN §3: JSON Lines with schema_version), or a text line for a person
// at a terminal:
//
//	2026-01-15 14:30:00 CRITICAL unauthorized_destructive agent sre-bot seq 2: Destructive action on …
type printer struct {
	mu   sync.Mutex
	w    io.Writer
	json bool
	loc  *time.Location // of the text's clock times
}

func (p *printer) print(a detect.Alert) error {
	var line []byte
	if p.json {
		var b bytes.Buffer
		if err := cli.WriteJSON(&b, a); err != nil {
			return err
		}
		line = b.Bytes()
	} else {
		line = []byte(textLine(a, p.loc) + "\n")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.w.Write(line)
	return err
}

func textLine(a detect.Alert, loc *time.Location) string {
	var b strings.Builder
	b.WriteString(a.Timestamp.In(loc).Format(time.DateTime))
	b.WriteString(" " + strings.ToUpper(a.Severity) + " " + a.Type)
	if a.Agent != "" {
		b.WriteString(" agent " + termtext.Printable(a.Agent))
	}
	if a.Seq != 0 {
		fmt.Fprintf(&b, " seq %d", a.Seq)
	}
	b.WriteString(": " + termtext.Printable(a.Message))
	return b.String()
}
