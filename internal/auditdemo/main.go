// Command auditdemo is scripts/demo-auditd.sh's helper: it records the
// classify tour as audit events through pkg/client, and prints auditd's
// event stream, so that the demo needs nothing but Go (no curl, no jq).
//
//	auditdemo record URL CLASSIFY COMMANDS   classify each command, post a tool_execution event
//	auditdemo subscribe SOCKET N             print N streamed events (replayed from seq 0), then exit
//	auditdemo secret URL                     post a command with a password and show what was sealed
//	auditdemo sql DB STATEMENT               run one SQL statement on a SQLite file, as an intruder with sqlite3 would
package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // sql

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/client"
)

func main() {
	var err error
	switch {
	case len(os.Args) == 5 && os.Args[1] == "record":
		err = record(os.Args[2], os.Args[3], os.Args[4])
	case len(os.Args) == 4 && os.Args[1] == "subscribe":
		err = subscribe(os.Args[2], os.Args[3])
	case len(os.Args) == 3 && os.Args[1] == "secret":
		err = secret(os.Args[2])
	case len(os.Args) == 4 && os.Args[1] == "sql":
		err = execSQL(os.Args[2], os.Args[3])
	default:
		err = errors.New("usage: auditdemo record URL CLASSIFY COMMANDS | auditdemo subscribe SOCKET N | auditdemo secret URL | auditdemo sql DB STATEMENT")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "auditdemo: error: %v\n", err)
		os.Exit(3)
	}
}

// secret posts what an agent's careless command line looks like — a
// password in the environment, a bearer token in the output — and prints the
// tool as auditd sealed it: the chain can never be edited, so auditd
// redacts before it hashes (DESIGN §11).
func secret(url string) error {
	c, err := client.New(url, client.WithUserAgent("auditdemo"))
	if err != nil {
		return err
	}
	raw := "PGPASSWORD=hunter2-prod psql -h db.internal -U app -c 'SELECT count(*) FROM orders'"
	fmt.Printf("  posted:  raw_command %q\n", raw)
	ev, err := c.Append(context.Background(), audit.Event{
		EventType: audit.TypeToolExecution, Agent: "demo-agent", ActionClass: audit.ActionRead,
		Tool: &audit.Tool{Name: "psql", RawCommand: raw, Result: "connected with Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhcHAifQ.c2lnbmF0dXJl"},
	})
	if err != nil {
		return err
	}
	fmt.Printf("  sealed:  raw_command %q\n", ev.Tool.RawCommand)
	fmt.Printf("           result      %q\n", ev.Tool.Result)
	b, err := json.Marshal(ev.Redactions)
	if err != nil {
		return err
	}
	fmt.Printf("           redactions  %s (seq %d, event_hash %.16s…)\n", b, ev.Seq, ev.EventHash)
	return nil
}

// verdict is the part of classify's JSON the event records.
type verdict struct {
	Intent      string `json:"intent"`
	Bounded     bool   `json:"bounded"`
	Risk        string `json:"risk"`
	ActionClass string `json:"action_class"`
}

// record classifies each command of the file with classify -o json and
// appends one tool_execution event per command: what an agent's gate would
// record before deciding whether to run it. Nothing is run.
func record(url, classify, commands string) error {
	c, err := client.New(url, client.WithUserAgent("auditdemo"))
	if err != nil {
		return err
	}
	f, err := os.Open(commands)
	if err != nil {
		return err
	}
	defer f.Close()
	ctx := context.Background()
	session := fmt.Sprintf("demo-%d", time.Now().Unix())
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); {
		command := sc.Text()
		if command == "" || strings.HasPrefix(command, "#") {
			continue
		}
		out, code, err := runClassify(classify, command)
		if err != nil {
			return err
		}
		var v verdict
		if err := json.Unmarshal(out, &v); err != nil {
			return fmt.Errorf("classify output for %q: %v", command, err)
		}
		ev, err := c.Append(ctx, audit.Event{
			EventID:     fmt.Sprintf("%s-%03d", session, n), // a retry would not duplicate it
			EventType:   audit.TypeToolExecution,
			TraceID:     fmt.Sprintf("%s-%03d", session, n),
			SessionID:   session,
			Agent:       "demo-agent",
			Principal:   &audit.Principal{UserID: os.Getenv("USER")},
			ActionClass: v.ActionClass,
			Tool:        &audit.Tool{Name: "bash", RawCommand: command},
			Outcome:     &audit.Outcome{Status: outcome(code)},
			Data:        json.RawMessage(out),
		})
		if err != nil {
			return fmt.Errorf("posting %q: %w", command, err)
		}
		fmt.Printf("  posted seq %-3d %-12s %-18s %s\n", ev.Seq, v.ActionClass, outcome(code), command)
		n++
	}
	return sc.Err()
}

// runClassify returns classify's JSON verdict and exit code for command.
func runClassify(classify, command string) ([]byte, int, error) {
	cmd := exec.Command(classify, "-o", "json", "--", command)
	out, err := cmd.Output()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() <= 2:
		return out, ee.ExitCode(), nil
	case err != nil:
		return nil, 0, fmt.Errorf("classify %q: %v", command, err)
	}
	return out, 0, nil
}

// outcome names what a gate would do with classify's verdict (DESIGN §4
// exit codes).
func outcome(code int) string {
	switch code {
	case 0:
		return "allowed"
	case 1:
		return "needs_approval"
	default:
		return "refused_unbounded"
	}
}

// subscribe prints n events from the stream, replayed from the start, one
// summary line each.
func subscribe(socket, count string) error {
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 {
		return fmt.Errorf("N must be a positive number, not %q", count)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := 0
	errDone := errors.New("done")
	err = client.Subscribe(ctx, socket, 0, func(ev audit.Event) error {
		command := ""
		if ev.Tool != nil {
			command = ev.Tool.RawCommand
		}
		fmt.Printf("  stream: seq %-3d %s  prev %.12s…  hash %.12s…  %s\n", ev.Seq, ev.Timestamp.Format("15:04:05.000"), ev.PrevHash, ev.EventHash, command)
		if got++; got == n {
			return errDone
		}
		return nil
	})
	if errors.Is(err, errDone) {
		return nil
	}
	return err
}

// execSQL runs one statement on the SQLite database at path, through the
// driver auditd uses, so that the demo's tampering needs no sqlite3 shell
// (issue 19: a truncated copy of the demo database).
func execSQL(path, stmt string) error {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := db.Exec(stmt)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	fmt.Printf("  %d rows\n", n)
	return nil
}
