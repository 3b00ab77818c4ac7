package classify

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/intent"
)

// BenchmarkBatch is classify's batch mode on the public corpus, one command
// per line, JSON Lines out: reading, classifying and encoding; ns/op is per
// command. The corpus is repeated to a batch of at least 10,000 lines, so that
// the start of a run (its 64 KiB buffers) weighs on each command as little as
// in a real batch; one-shot runs are measured by scripts/bench.sh. Issue 14's target is ≤ 2× intent's BenchmarkParseOnly (parsing
// alone with mvdan.cc/sh).
func BenchmarkBatch(b *testing.B) {
	f, err := os.Open("../../intent/testdata/commands.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var input bytes.Buffer
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var row struct{ Cmd string }
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			b.Fatal(err)
		}
		if bytes.ContainsAny([]byte(row.Cmd), "\n\x00") {
			continue // one record per line
		}
		input.WriteString(row.Cmd + "\n")
	}
	corpus := bytes.Clone(input.Bytes())
	for input.Len() > 0 && bytes.Count(input.Bytes(), []byte{'\n'}) < 10000 {
		input.Write(corpus)
	}
	lines := bytes.Count(input.Bytes(), []byte{'\n'})
	classify := intent.New(intent.Options{}).Classify
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += lines {
		opts := &ClassifyOptions{IO: &cli.IOStreams{In: bytes.NewReader(input.Bytes()), Out: io.Discard}}
		p := newPrinter(io.Discard, cli.FormatJSON)
		var exit *cli.ExitError
		if err := classifyBatch(opts, classify, p); err != nil && (!errors.As(err, &exit) || exit.Code == 3) {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cmds/s")
}
