// Command hookbench measures classify the way coding-agent hooks run it: one
// process per command, start-up included. It runs the binary once per
// command, cycling through a corpus, and prints latency percentiles against
// the targets of DESIGN §10 (p50 ≤ 10 ms, p99 ≤ 25 ms). scripts/bench.sh runs
// it; it needs nothing but Go.
//
//	hookbench [-runs N] [-warmup N] [-strict] -bin bin/classify CORPUS
//
// CORPUS is JSON Lines with a "cmd" field per line (pkg/intent's labelled
// corpus) or plain text with one command per line ('#' lines and blank lines
// skipped).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/hook"
)

const (
	targetP50 = 10 * time.Millisecond
	targetP99 = 25 * time.Millisecond
)

func main() {
	runs := flag.Int("runs", 200, "measured runs (`N` processes)")
	warmup := flag.Int("warmup", 10, "unmeasured runs first, to warm caches")
	bin := flag.String("bin", "bin/classify", "the classify `binary`")
	strict := flag.Bool("strict", false, "exit 1 when a target is missed")
	agent := flag.String("agent", "", "measure `classify hook --agent AGENT` with each command in that agent's event")
	gate := flag.Int("gate", 0, "measure `gate hook --agent claude` (-bin is gate) on a session of `N` listed files, pre- and post-tool events of reads")
	flag.Parse()
	if *gate > 0 {
		times, size, err := measureGate(*bin, *gate, *warmup, *runs)
		if err != nil {
			fatal(err)
		}
		what := fmt.Sprintf("%s hook --agent claude, one process per event, state file %d KiB", *bin, size>>10)
		ok := report(os.Stdout, what, fmt.Sprintf("a session of %d listed files", *gate), *gate, times)
		if *strict && !ok {
			os.Exit(1)
		}
		return
	}
	if flag.NArg() != 1 || *runs < 1 {
		fmt.Fprintln(os.Stderr, "usage: hookbench [-runs N] [-warmup N] [-strict] -bin BINARY CORPUS")
		os.Exit(3)
	}
	commands, err := readCorpus(flag.Arg(0))
	if err != nil {
		fatal(err)
	}
	if _, ok := hook.Setups[*agent]; *agent != "" && !ok {
		fatal(fmt.Errorf("-agent %q: not one of %s", *agent, strings.Join(hook.Agents(), ", ")))
	}
	times, err := measure(*bin, *agent, commands, *warmup, *runs)
	if err != nil {
		fatal(err)
	}
	what := *bin + ", one process per command"
	if *agent != "" {
		what = *bin + " hook --agent " + *agent + ", one process per event"
	}
	ok := report(os.Stdout, what, flag.Arg(0), len(commands), times)
	if *strict && !ok {
		os.Exit(1)
	}
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "hookbench: error: %v\n", err)
	os.Exit(3)
}

// readCorpus returns the commands of a JSON Lines or plain text corpus.
func readCorpus(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	jsonl := strings.HasSuffix(path, ".jsonl")
	var commands []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || (!jsonl && strings.HasPrefix(line, "#")) {
			continue
		}
		if !jsonl {
			commands = append(commands, line)
			continue
		}
		var rec struct {
			Cmd *string `json:"cmd"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Cmd == nil {
			return nil, fmt.Errorf("%s:%d: want a JSON object with a \"cmd\" string", path, n)
		}
		commands = append(commands, *rec.Cmd)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(commands) == 0 {
		return nil, fmt.Errorf("%s: no commands", path)
	}
	return commands, nil
}

// measure runs bin once per command, warmup+runs times in all, and returns
// the wall time of each measured run. Standard input and output are
// /dev/null, as for a hook whose result is the exit code.
func measure(bin, agent string, commands []string, warmup, runs int) ([]time.Duration, error) {
	times := make([]time.Duration, 0, runs)
	for i := 0; i < warmup+runs; i++ {
		command := commands[i%len(commands)]
		cmd := exec.Command(bin, "--", command)
		if agent != "" {
			// The hook case proper: one event on stdin, the agent's answer
			// on stdout.
			cmd = exec.Command(bin, "hook", "--agent", agent)
			cmd.Stdin = bytes.NewReader(hook.Setups[agent].Sample(command, "/tmp"))
		}
		start := time.Now()
		err := cmd.Run()
		elapsed := time.Since(start)
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() >= 0 && ee.ExitCode() <= 2 {
			err = nil // a verdict, not a failure
		}
		if err != nil {
			return nil, fmt.Errorf("%s -- %q: %v", bin, command, err)
		}
		if i >= warmup {
			times = append(times, elapsed)
		}
	}
	return times, nil
}

// report prints the percentiles and says whether the targets are met.
func report(w io.Writer, what, corpus string, ncommands int, times []time.Duration) bool {
	slices.Sort(times)
	pct := func(p float64) time.Duration {
		i := int(p*float64(len(times))+0.5) - 1
		return times[min(max(i, 0), len(times)-1)]
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%6.2f ms", float64(d)/float64(time.Millisecond)) }
	verdict := func(d, target time.Duration) string {
		if d <= target {
			return fmt.Sprintf("target ≤ %v: ok", target)
		}
		return fmt.Sprintf("target ≤ %v: MISSED", target)
	}
	p50, p99 := pct(0.50), pct(0.99)
	fmt.Fprintf(w, "%s: %d runs over %d commands from %s\n", what, len(times), ncommands, corpus)
	fmt.Fprintf(w, "  min %s\n", ms(times[0]))
	fmt.Fprintf(w, "  p50 %s   %s\n", ms(p50), verdict(p50, targetP50))
	fmt.Fprintf(w, "  p90 %s\n", ms(pct(0.90)))
	fmt.Fprintf(w, "  p99 %s   %s\n", ms(p99), verdict(p99, targetP99))
	fmt.Fprintf(w, "  max %s\n", ms(times[len(times)-1]))
	return p50 <= targetP50 && p99 <= targetP99
}
