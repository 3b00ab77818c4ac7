// Command chaingen writes a valid audit database of N sealed events, for
// measuring verify-chain on a large log (scripts/bench.sh), and measures
// verify-chain end to end against its floor:
//
//	go run ./internal/chaingen -db /tmp/chain.db -n 1000000
//	go run ./internal/chaingen -db /tmp/chain.db -measure bin/verify-chain [-rounds 5]
//
// -measure runs the verify-chain binary on the existing file (process start
// and every read included) and, alternating with it in the same run, the
// floor: SHA-256 of the same stored bodies, already in memory, on every
// core. It prints both and their ratio in wall and CPU time (issue 20: the
// bar is ≤ 4×).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/store/sqlite"
)

func main() {
	db := flag.String("db", "", "the database `FILE` to create (must not exist)")
	n := flag.Int("n", 1_000_000, "how many events")
	measureBin := flag.String("measure", "", "measure this verify-chain `binary` on the existing -db FILE against the SHA-256 floor")
	rounds := flag.Int("rounds", 5, "with -measure: alternating rounds of each")
	flag.Parse()
	if *db == "" || *n < 1 || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "usage: chaingen -db FILE [-n N] | chaingen -db FILE -measure BIN [-rounds R]")
		os.Exit(3)
	}
	if *measureBin != "" {
		if err := measure(*db, *measureBin, *rounds); err != nil {
			fmt.Fprintln(os.Stderr, "chaingen:", err)
			os.Exit(3)
		}
		return
	}
	if _, err := os.Stat(*db); err == nil {
		fmt.Fprintf(os.Stderr, "chaingen: %s exists; give a new file\n", *db)
		os.Exit(3)
	}
	if err := generate(*db, *n); err != nil {
		fmt.Fprintln(os.Stderr, "chaingen:", err)
		os.Exit(3)
	}
}

// generate seals n typical tool_execution events (~600-byte bodies) about a
// millisecond apart, and appends them in batches, as auditd's writer would.
// The timestamps' nanoseconds vary as real ones do: verification compares
// the stored text with the body's, which differ when the nanoseconds end in
// zeros.
func generate(path string, n int) error {
	st, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		return err
	}
	prev, now := audit.ZeroHash, time.Now()
	batch := make([]audit.Record, 0, 2000)
	for i := 1; i <= n; i++ {
		e := audit.Event{
			EventID: fmt.Sprintf("evt_%020d", i), EventType: audit.TypeToolExecution,
			Agent: "agent-1", TraceID: fmt.Sprintf("trace-%d", i/100), ActionClass: "read",
			Tool: &audit.Tool{Name: "bash", RawCommand: "ls -la /var/log && grep -i error /var/log/syslog | tail -n 50",
				Result: "total 4096 drwxr-xr-x 2 root root 4096 syslog messages kern.log auth.log dpkg.log"},
		}
		rec, err := audit.Seal(&e, int64(i), prev, now.Add(time.Duration(i)*1_000_037))
		if err != nil {
			return err
		}
		prev = rec.EventHash
		if batch = append(batch, rec); len(batch) == cap(batch) || i == n {
			if err := st.Append(context.Background(), batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return st.Close()
}
