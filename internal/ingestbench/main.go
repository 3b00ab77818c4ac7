// Command ingestbench measures auditd's durable ingest over HTTP (DESIGN
// §10): events/s at 1, 8 and 32 concurrent clients against the real binary
// on a fresh SQLite file, next to SQLite's single-row-commit rate on the same
// disk in the same run, and auditd's resident memory while it ingests a
// large log. scripts/bench.sh runs it; it needs nothing but Go.
//
//	ingestbench [-bin bin/auditd] [-dir DIR] [-clients 1,8,32] [-batch 1]
//	            [-duration 5s] [-rss-events 1000000] [-raw] [-v] [-strict]
//	            [-event-ids] [-pg 1,3]
//
// Each client posts -batch events per request (1: one event per POST, the
// default; more: a JSON Lines batch append) and waits for the answer before
// it posts again. events/s counts events; p50 and p99 are per request.
//
// The baseline commits one row per transaction (WAL, synchronous=FULL, as
// auditd runs) twice: into a one-column table, and through the audit store
// (one event per Append). The first is the disk's floor, the second what
// auditd would do without group commit.
//
// With -pg 1,3 it then starts a throwaway PostgreSQL cluster (Debian's
// postgresql package, installed when missing and run as root; fsync on, as
// a production server runs) and measures the same load against 1 and 3
// auditd instances sharing one database (issue 19), the clients spread over
// the instances as a load balancer would, next to PostgreSQL's own
// single-row-commit rate on the same disk.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/govkit/govkit/internal/auditdproc"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/store/sqlite"

	_ "modernc.org/sqlite" // the "sqlite" driver for the plain baseline
)

func main() {
	bin := flag.String("bin", "bin/auditd", "the auditd `binary`")
	dir := flag.String("dir", "", "put the databases in `DIR` (default: a new directory under the working directory, i.e. on its disk)")
	clientsFlag := flag.String("clients", "1,8,32", "concurrent client counts, comma-separated")
	batch = flag.Int("batch", 1, "events per request: 1 posts one event, more a JSON Lines batch (at most 1000)")
	duration := flag.Duration("duration", 5*time.Second, "measure each client count for this long")
	rssEvents := flag.Int("rss-events", 1_000_000, "events to ingest while sampling auditd's RSS (0 skips)")
	strict := flag.Bool("strict", false, "exit 1 when a target is missed")
	verbose = flag.Bool("v", false, "print auditd's batch, commit and CPU metrics after each run")
	raw = flag.Bool("raw", false, "post with net/http and skip decoding the answers (a lighter load generator than pkg/client)")
	eventIDs = flag.Bool("event-ids", false, "give every event an event_id, as real clients do (auditd then checks each for a retry)")
	pgFlag := flag.String("pg", "", "also measure auditd on PostgreSQL with these instance `counts` (e.g. 1,3), at each client count")
	flag.Parse()

	clients, err := counts("-clients", *clientsFlag)
	if err != nil {
		fatal(err)
	}
	var instances []int
	if *pgFlag != "" {
		if instances, err = counts("-pg", *pgFlag); err != nil {
			fatal(err)
		}
	}
	if *batch < 1 || *batch > govapi.MaxBatchEvents {
		fatal(fmt.Errorf("-batch %d is not between 1 and %d", *batch, govapi.MaxBatchEvents))
	}
	work := *dir
	if work == "" {
		var err error
		if work, err = os.MkdirTemp(".", ".ingestbench-"); err != nil {
			fatal(err)
		}
		defer os.RemoveAll(work)
	}

	fmt.Printf("auditd durable ingest: %s, databases in %s\n\n", *bin, work)
	var pg *pgRun
	if len(instances) > 0 {
		// Started first: a missing package is installed before anything
		// is measured, and a failure costs no run.
		if pg, err = startPostgres(work); err != nil {
			fatal(err)
		}
		defer pg.stop()
	}
	plain, err := baselinePlain(filepath.Join(work, "plain.db"), 2*time.Second)
	if err != nil {
		fatal(err)
	}
	store1, err := baselineStore(filepath.Join(work, "store.db"), 2*time.Second)
	if err != nil {
		fatal(err)
	}
	fmt.Printf("%-44s %9.0f commits/s\n", "SQLite single-row commit (one-column table)", plain)
	fmt.Printf("%-44s %9.0f events/s\n", "audit store, one event per transaction", store1)
	fmt.Println()

	ok := true
	fmt.Printf("%-8s %6s %10s %9s %9s %9s %12s\n", "clients", "batch", "events/s", "p50", "p99", "x floor", "target")
	for _, n := range clients {
		r, err := ingest(*bin, [][]string{{"--db", filepath.Join(work, fmt.Sprintf("c%d.db", n))}}, n, *duration, 0)
		if err != nil {
			fatal(err)
		}
		target := ""
		if bar := ingestBar(*batch); n >= 32 && bar > 0 {
			pass := r.rate >= bar*plain
			target = fmt.Sprintf("≥%gx: %s", bar, passWord(pass))
			ok = ok && pass
		}
		fmt.Printf("%-8d %6d %10.0f %9s %9s %8.1fx %12s\n", n, *batch, r.rate, ms(r.p50), ms(r.p99), r.rate/plain, target)
	}

	if pg != nil {
		if err := pg.measure(*bin, clients, instances, *duration, plain); err != nil {
			fatal(err)
		}
	}

	if *rssEvents > 0 {
		r, err := ingest(*bin, [][]string{{"--db", filepath.Join(work, "rss.db")}}, 32, 0, *rssEvents)
		if err != nil {
			fatal(err)
		}
		pass := r.peakRSS < 100<<20
		ok = ok && pass
		fmt.Printf("\nRSS while ingesting %d events (32 clients, batch %d, %.0f events/s): max VmRSS %.1f MiB, VmHWM %.1f MiB (target < 100 MiB: %s)\n",
			*rssEvents, *batch, r.rate, mib(r.maxRSS), mib(r.peakRSS), passWord(pass))
	}
	if *strict && !ok {
		os.Exit(1)
	}
}

// ingestBar is the target at 32 keep-alive clients, as a multiple of the
// same run's single-row-commit rate (issue 20): 1.8× with one event per
// request, 6× with batches of 32 or more. Other batch sizes have no bar.
func ingestBar(batch int) float64 {
	switch {
	case batch == 1:
		return 1.8
	case batch >= 32:
		return 6
	}
	return 0
}

var (
	raw, verbose, eventIDs *bool
	batch                  *int
)

// counts parses a comma-separated list of positive numbers.
func counts(flagName, list string) ([]int, error) {
	var ns []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive number", flagName, s)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// poster posts events [i, i+k) of client g in one request and waits for
// auditd's answer.
type poster func(ctx context.Context, g, i, k int) error

// clientPoster posts through pkg/client: Append for one event, AppendBatch
// for more.
func clientPoster(c *client.Client) poster {
	return func(ctx context.Context, g, i, k int) error {
		evs := make([]audit.Event, k)
		for j := range evs {
			evs[j] = event(g, i+j)
		}
		if len(evs) == 1 {
			_, err := c.Append(ctx, evs[0])
			return err
		}
		_, err := c.AppendBatch(ctx, evs)
		return err
	}
}

// rawPoster posts with net/http and discards the answers: the lighter load
// generator. Each client's events are spliced from a template encoded once,
// so that the generator's CPU (on the same cores as auditd) is the HTTP
// exchange, not JSON encoding; the bytes sent are what event(g, i) encodes
// to (TestTemplateMatchesEvent).
func rawPoster(base string) poster {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}}
	var mu sync.Mutex
	templates := map[int]*lineTemplate{}
	return func(ctx context.Context, g, i, k int) error {
		mu.Lock()
		t := templates[g]
		if t == nil {
			var err error
			if t, err = newLineTemplate(g); err != nil {
				mu.Unlock()
				return err
			}
			templates[g] = t
		}
		mu.Unlock()
		var body []byte
		for j := range k {
			body = t.append(body, i+j)
			if k > 1 {
				body = append(body, '\n')
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+govapi.PathEvents, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", govapi.ContentTypeJSON) // auditd answers 415 to any other (DESIGN §11)
		if k > 1 {
			req.Header.Set("Content-Type", govapi.ContentTypeJSONLines)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("auditd answered %d", resp.StatusCode)
		}
		return err
	}
}

// lineTemplate is one client's encoded event cut where the two values that
// vary per event go: append writes parts[0], the value of holes[0],
// parts[1], and so on.
type lineTemplate struct {
	parts [][]byte
	holes []byte // 'T': the trace number i/10; 'I': the event number i
}

const traceHole, numberHole = "@@T@@", "@@I@@"

func newLineTemplate(g int) (*lineTemplate, error) {
	line, err := client.EncodeEvent(eventWith(g, traceHole, numberHole))
	if err != nil {
		return nil, err
	}
	t := &lineTemplate{}
	rest := line
	for {
		at := bytes.Index(rest, []byte("@@"))
		if at < 0 || len(rest) < at+5 {
			t.parts = append(t.parts, rest)
			return t, nil
		}
		hole := string(rest[at : at+5])
		if hole != traceHole && hole != numberHole {
			return nil, fmt.Errorf("template: unexpected %q", hole)
		}
		t.parts = append(t.parts, rest[:at])
		t.holes = append(t.holes, hole[2])
		rest = rest[at+5:]
	}
}

func (t *lineTemplate) append(b []byte, i int) []byte {
	for j, part := range t.parts {
		b = append(b, part...)
		if j < len(t.holes) {
			n := i
			if t.holes[j] == 'T' {
				n = i / 10
			}
			b = strconv.AppendInt(b, int64(n), 10)
		}
	}
	return b
}

// printMetrics prints auditd's batch, commit and CPU figures, and the
// averages that make runs comparable on a shared machine: events per
// commit, and auditd's CPU time per event, which depends much less than
// events/s on what else the machine runs.
func printMetrics(text string) {
	values := map[string]float64{}
	for _, l := range strings.Split(text, "\n") {
		name, value, ok := strings.Cut(l, " ")
		if !ok {
			continue
		}
		switch name {
		case "govkit_auditd_batch_size_events_sum", "govkit_auditd_batch_size_events_count",
			"govkit_auditd_commit_duration_seconds_sum", "process_cpu_seconds_total":
			fmt.Fprintln(os.Stderr, "  ", l)
			values[name], _ = strconv.ParseFloat(value, 64)
		}
	}
	events, commits := values["govkit_auditd_batch_size_events_sum"], values["govkit_auditd_batch_size_events_count"]
	if events > 0 && commits > 0 {
		fmt.Fprintf(os.Stderr, "   %.1f events/commit, %.2f ms/commit, auditd CPU %.0f µs/event\n", events/commits,
			1e3*values["govkit_auditd_commit_duration_seconds_sum"]/commits, 1e6*values["process_cpu_seconds_total"]/events)
	}
}

// cpuTime is this process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineCPU returns the busy and total jiffies of all cores from
// /proc/stat (zeros where it cannot be read).
func machineCPU() (busy, total int64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "ingestbench: error: %v\n", err)
	os.Exit(3)
}

func passWord(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISSED"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/1e6) }
func mib(b int64) float64       { return float64(b) / (1 << 20) }

// baselinePlain commits one row per transaction into a one-column table with
// auditd's pragmas, for d; it returns commits/s.
func baselinePlain(path string, d time.Duration) (float64, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("CREATE TABLE t (x BLOB NOT NULL)"); err != nil {
		return 0, err
	}
	row := make([]byte, 400)
	n := 0
	start := time.Now()
	for time.Since(start) < d {
		tx, err := db.Begin()
		if err != nil {
			return 0, err
		}
		if _, err := tx.Exec("INSERT INTO t (x) VALUES (?)", row); err != nil {
			return 0, err
		}
		if err := tx.Commit(); err != nil {
			return 0, err
		}
		n++
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// baselineStore appends one sealed event per transaction through the audit
// store for d; it returns events/s.
func baselineStore(path string, d time.Duration) (float64, error) {
	st, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		return 0, err
	}
	defer st.Close()
	ctx := context.Background()
	prev := audit.ZeroHash
	n := int64(0)
	start := time.Now()
	for time.Since(start) < d {
		ev := event(int(n%32), int(n))
		ev.EventID = audit.NewEventID(time.Now(), rand.Reader)
		rec, err := audit.Seal(&ev, n+1, prev, time.Now())
		if err != nil {
			return 0, err
		}
		if err := st.Append(ctx, []audit.Record{rec}); err != nil {
			return 0, err
		}
		prev = rec.EventHash
		n++
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// event is a realistic tool_execution record, ~600 bytes stored.
func event(client, i int) audit.Event {
	return eventWith(client, strconv.Itoa(i/10), strconv.Itoa(i))
}

// eventWith is event with the trace number and the event number as text.
func eventWith(client int, trace, n string) audit.Event {
	ev := audit.Event{
		EventType: audit.TypeToolExecution,
		TraceID:   fmt.Sprintf("trace-%d-%s", client, trace),
		SessionID: fmt.Sprintf("session-%d", client),
		Agent:     fmt.Sprintf("agent-%d", client),
		// No policy roles: auditd takes those from the caller's token, and
		// the benchmark runs auditd in local mode (DESIGN §11).
		Principal:   &audit.Principal{UserID: "alice@example.com"},
		ActionClass: audit.ActionRead,
		Resource:    &audit.Resource{Type: "host", Name: "web-1", Tags: []string{"production"}},
		Tool: &audit.Tool{
			Name: "bash", RawCommand: fmt.Sprintf("journalctl -u nginx -n 200 --since '10 min ago' # %s", n),
			Result:     strings.Repeat("Nov 21 06:00:00 web-1 nginx[812]: GET /healthz 200\n", 4),
			DurationMS: 42,
		},
		Outcome: &audit.Outcome{Status: "success"},
	}
	if *eventIDs {
		// As real clients (gate, the session loop) send them, so that a
		// retry is idempotent: auditd must refuse a second event under one.
		ev.EventID = fmt.Sprintf("bench-%d-%s", client, n)
	}
	return ev
}

type result struct {
	rate         float64
	p50, p99     time.Duration
	maxRSS       int64
	peakRSS      int64
	acknowledged int64
	elapsed      time.Duration
}

// ingest starts one auditd per element of instances (each its arguments,
// --addr added) on a fresh database and posts with n clients, client g to
// instance g mod len(instances), for d or until total events are
// acknowledged, sampling the first instance's RSS; then stops them with
// SIGTERM.
func ingest(bin string, instances [][]string, n int, d time.Duration, total int) (result, error) {
	var procs []*auditdproc.Proc
	var posts []poster
	defer func() {
		for _, p := range procs {
			p.Kill() // after Stop below, a no-op
		}
	}()
	for _, args := range instances {
		p, err := auditdproc.Start(bin, append(args, "--addr", "127.0.0.1:0")...)
		if err != nil {
			return result{}, err
		}
		procs = append(procs, p)
		c, err := client.New(p.URL)
		if err != nil {
			return result{}, err
		}
		post := clientPoster(c)
		if *raw {
			post = rawPoster(p.URL)
		}
		posts = append(posts, post)
	}
	p := procs[0]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var res result
	var count atomic.Int64
	stopRSS := make(chan struct{})
	rssDone := make(chan struct{})
	go func() {
		defer close(rssDone)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			if rss, peak, err := p.RSS(); err == nil {
				res.maxRSS = max(res.maxRSS, rss)
				res.peakRSS = max(res.peakRSS, peak)
			}
			select {
			case <-stopRSS:
				return
			case <-t.C:
			}
		}
	}()

	var mu sync.Mutex
	var lat []time.Duration
	keep := total == 0 // latencies only for the timed runs: 1M would cost memory
	var firstErr error
	var wg sync.WaitGroup
	cpu0 := cpuTime()
	busy0, total0 := machineCPU()
	start := time.Now()
	deadline := start.Add(d)
	for g := range n {
		wg.Go(func() {
			var mine []time.Duration
			defer func() {
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
			for i := 0; ; {
				k := int64(*batch)
				if total > 0 {
					// Claim k events of the total; the last batch
					// takes what is left.
					end := count.Add(k)
					if end-k >= int64(total) {
						return
					}
					k = min(k, int64(total)-(end-k))
				} else if time.Now().After(deadline) {
					return
				}
				t0 := time.Now()
				err := posts[g%len(posts)](ctx, g, i, int(k))
				i += int(k)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel()
					return
				}
				if keep {
					mine = append(mine, time.Since(t0))
					count.Add(k)
				}
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	clientCPU := cpuTime() - cpu0
	busy1, total1 := machineCPU()
	close(stopRSS)
	<-rssDone
	if total > 0 {
		res.acknowledged = int64(total)
	} else {
		res.acknowledged = count.Load()
	}
	if *verbose {
		fmt.Fprintf(os.Stderr, "   load generator CPU %.0f µs/event\n", float64(clientCPU.Microseconds())/float64(max(count.Load(), 1)))
		if total1 > total0 {
			// Whether the run was bound by the cores (near 100%: auditd,
			// the generator and whatever else runs) or by the disk.
			fmt.Fprintf(os.Stderr, "   machine CPU busy %.0f%% of %d cores\n", 100*float64(busy1-busy0)/float64(total1-total0), runtime.NumCPU())
		}
		for _, p := range procs {
			if resp, err := http.Get(p.URL + govapi.PathMetrics); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				printMetrics(string(b))
			}
		}
	}
	var stopErr error
	var stderr strings.Builder
	for _, p := range procs {
		if err := p.Stop(); err != nil && stopErr == nil {
			stopErr = err
		}
		stderr.WriteString(p.Stderr())
	}
	if firstErr != nil {
		return res, fmt.Errorf("%d clients: %v\n%s", n, firstErr, stderr.String())
	}
	if stopErr != nil {
		return res, fmt.Errorf("stopping auditd: %v\n%s", stopErr, stderr.String())
	}
	res.rate = float64(res.acknowledged) / res.elapsed.Seconds()
	if len(lat) > 0 {
		slices.Sort(lat)
		res.p50 = lat[len(lat)/2]
		res.p99 = lat[len(lat)*99/100]
	}
	if res.acknowledged == 0 {
		return res, errors.New("no event acknowledged")
	}
	return res, nil
}
