package main

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/govkit/govkit/internal/pgtest"
)

// pgRun is the throwaway PostgreSQL cluster of the -pg runs.
type pgRun struct {
	cluster *pgtest.Cluster
	dir     string
	dbs     int
}

// startPostgres starts a durable cluster (fsync on) in a new short
// directory: a socket path is at most 107 bytes, so it cannot live under
// any -dir. It says whether the cluster's disk is the SQLite files' (work):
// a comparison across two disks compares the disks.
func startPostgres(work string) (*pgRun, error) {
	dir, err := os.MkdirTemp("", "ib-pg-")
	if err != nil {
		return nil, err
	}
	c, err := pgtest.StartDir(dir, pgtest.Options{Durable: true})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	same := "the same disk as the SQLite files"
	if !sameDevice(dir, work) {
		same = "NOT the SQLite files' disk: the comparison is of two disks"
	}
	fmt.Printf("PostgreSQL cluster in %s (server binaries in %s; fsync on, synchronous_commit on), on %s\n\n", dir, c.Bin, same)
	return &pgRun{cluster: c, dir: dir}, nil
}

func (r *pgRun) stop() {
	r.cluster.Stop()
	os.RemoveAll(r.dir)
}

// database creates a fresh database and returns its connection string.
func (r *pgRun) database() (string, error) {
	r.dbs++
	return r.cluster.CreateDatabase(fmt.Sprintf("ingest_%d", r.dbs))
}

// measure prints PostgreSQL's single-row-commit rate, then auditd's ingest
// with each instance count at each client count. sqliteFloor is SQLite's
// single-row-commit rate of the same run, for the "x floor" column.
func (r *pgRun) measure(bin string, clients, instances []int, d time.Duration, sqliteFloor float64) error {
	dsn, err := r.database()
	if err != nil {
		return err
	}
	floor, err := baselinePostgres(dsn, 2*time.Second)
	if err != nil {
		return err
	}
	fmt.Printf("\n%-44s %9.0f commits/s\n\n", "PostgreSQL single-row commit (one-column)", floor)
	fmt.Printf("%-10s %9s %6s %10s %9s %9s %13s %10s\n", "postgres", "instances", "batch", "events/s", "p50", "p99", "x SQL floor", "x PG floor")
	for _, n := range clients {
		for _, k := range instances {
			dsn, err := r.database()
			if err != nil {
				return err
			}
			args := make([][]string, k)
			for i := range args {
				args[i] = []string{"--db", dsn}
			}
			res, err := ingest(bin, args, n, d, 0)
			if err != nil {
				return fmt.Errorf("PostgreSQL, %d instances: %w", k, err)
			}
			fmt.Printf("%-10s %9d %6d %10.0f %9s %9s %12.1fx %9.1fx\n",
				fmt.Sprintf("%d clients", n), k, *batch, res.rate, ms(res.p50), ms(res.p99), res.rate/sqliteFloor, res.rate/floor)
		}
	}
	return nil
}

// baselinePostgres commits one row per transaction into a one-column
// table for d, with synchronous_commit on as auditd sets it; it returns
// commits/s.
func baselinePostgres(dsn string, d time.Duration) (float64, error) {
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return 0, err
	}
	cfg.RuntimeParams["synchronous_commit"] = "on"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE t (x bytea NOT NULL)"); err != nil {
		return 0, err
	}
	row := make([]byte, 400)
	n := 0
	start := time.Now()
	for time.Since(start) < d {
		// One statement outside a transaction block commits on its own:
		// one WAL flush per row.
		if _, err := conn.Exec(ctx, "INSERT INTO t (x) VALUES ($1)", row); err != nil {
			return 0, err
		}
		n++
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// sameDevice reports whether paths a and b are on one file system.
func sameDevice(a, b string) bool {
	var sa, sb syscall.Stat_t
	if syscall.Stat(a, &sa) != nil || syscall.Stat(b, &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev
}
