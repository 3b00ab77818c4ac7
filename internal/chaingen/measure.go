package main

import (
	"database/sql"
	"fmt"
	"os/exec"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/govkit/govkit/internal/hashfloor"
	"github.com/govkit/govkit/internal/sqlitefile"
)

// measure times bin (verify-chain) on db against the floor, rounds times
// each, alternating so that both see the same machine.
func measure(db, bin string, rounds int) error {
	bodies, err := storedBodies(db)
	if err != nil {
		return err
	}
	var size int
	for _, b := range bodies {
		size += len(b)
	}
	fmt.Printf("%d events, %.0f MB of bodies; %s --db %s -o json vs SHA-256 of the bodies on %d cores\n\n",
		len(bodies), float64(size)/1e6, bin, db, runtime.GOMAXPROCS(0))
	fmt.Printf("%-6s %10s %10s %10s %10s %8s %8s\n", "round", "wall", "CPU", "floor", "floor CPU", "x wall", "x CPU")
	var xWall, xCPU []float64
	for r := 1; r <= rounds; r++ {
		wall, cpu, err := runVerify(bin, db)
		if err != nil {
			return err
		}
		fWall, fCPU := floor(bodies)
		xWall, xCPU = append(xWall, wall.Seconds()/fWall.Seconds()), append(xCPU, cpu.Seconds()/fCPU.Seconds())
		fmt.Printf("%-6d %9.3fs %9.3fs %9.3fs %9.3fs %7.2fx %7.2fx\n", r, wall.Seconds(), cpu.Seconds(),
			fWall.Seconds(), fCPU.Seconds(), xWall[len(xWall)-1], xCPU[len(xCPU)-1])
	}
	fmt.Printf("\nmedian: %.2fx wall, %.2fx CPU (target ≤ 4x)\n", median(xWall), median(xCPU))
	return nil
}

// runVerify runs verify-chain once and returns its wall and CPU (user +
// system) time; a chain it does not find intact is an error.
func runVerify(bin, db string) (wall, cpu time.Duration, err error) {
	cmd := exec.Command(bin, "--db", db, "-o", "json")
	start := time.Now()
	out, err := cmd.Output()
	wall = time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w (output: %.200s)", bin, err, out)
	}
	u := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu = time.Duration(syscall.TimevalToNsec(u.Utime) + syscall.TimevalToNsec(u.Stime))
	return wall, cpu, nil
}

// floor hashes every body on every core (hashfloor) and returns the wall
// and CPU time it took.
func floor(bodies [][]byte) (wall, cpu time.Duration) {
	startCPU, start := cpuTime(), time.Now()
	hashfloor.Hash(bodies, runtime.GOMAXPROCS(0))
	return time.Since(start), cpuTime() - startCPU
}

func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		panic(err)
	}
	return time.Duration(syscall.TimevalToNsec(u.Utime) + syscall.TimevalToNsec(u.Stime))
}

// storedBodies reads every stored body of db, in seq order.
func storedBodies(db string) ([][]byte, error) {
	conn, err := sql.Open(sqlitefile.DriverName, sqlitefile.DSN(db, sqlitefile.DSNOptions{ReadOnly: true}))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	rows, err := conn.Query("SELECT body FROM events ORDER BY seq")
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", db, err)
	}
	defer rows.Close()
	var bodies [][]byte
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		bodies = append(bodies, b)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(bodies) == 0 {
		return nil, fmt.Errorf("%s holds no events", db)
	}
	return bodies, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
