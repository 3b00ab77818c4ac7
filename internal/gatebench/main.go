// Command gatebench measures what gate run adds to a command, whole-process:
// it runs `gate run [ARGS] -- true` and plain `true` alternately, one process
// each, and prints both medians and the difference against the target of
// issue 15 (≤ 15 ms median added, readonly mode with the sandbox on).
// scripts/bench.sh runs it; it needs nothing but Go and the built gate.
//
//	gatebench [-runs N] [-strict] -bin bin/gate [-- GATE-RUN-FLAGS...]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"time"
)

const target = 15 * time.Millisecond

func main() {
	runs := flag.Int("runs", 200, "measured runs of each (`N` processes)")
	warmup := flag.Int("warmup", 10, "unmeasured runs of each first")
	bin := flag.String("bin", "bin/gate", "the gate `binary`")
	strict := flag.Bool("strict", false, "exit 1 when the target is missed")
	flag.Parse()
	truePath, err := exec.LookPath("true")
	if err != nil {
		fmt.Fprintln(os.Stderr, "gatebench:", err)
		os.Exit(3)
	}
	gateArgs := append(append([]string{"run"}, flag.Args()...), "--", "true")
	measure := func(name string, args ...string) time.Duration {
		cmd := exec.Command(name, args...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "gatebench: %s %v: %v\n", name, args, err)
			os.Exit(3)
		}
		return time.Since(start)
	}
	var plain, gated []time.Duration
	for i := range *warmup + *runs {
		// Alternate, so that a burst of load elsewhere on the machine
		// hits both sides alike.
		p, g := measure(truePath), measure(*bin, gateArgs...)
		if i >= *warmup {
			plain, gated = append(plain, p), append(gated, g)
		}
	}
	pm, gm := median(plain), median(gated)
	added := gm - pm
	fmt.Printf("gate %v -- true: median %v, p90 %v; true alone: median %v; added %v (target ≤ %v)\n",
		gateArgs[1:len(gateArgs)-2], round(gm), round(pct(gated, 90)), round(pm), round(added), target)
	if *strict && added > target {
		os.Exit(1)
	}
}

func median(d []time.Duration) time.Duration { return pct(d, 50) }

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)*p/100, len(s)-1)]
}

func round(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
