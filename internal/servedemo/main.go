// Command servedemo is scripts/demo-serve.sh's helper: the scripted
// OpenAI-compatible chat completion server (internal/llmfake) as a
// process, since no model runs where the demo does.
//
//	servedemo SCRIPT
//
// It serves SCRIPT's steps (internal/llmfake's JSON Lines: one canned
// answer per request, in order) on 127.0.0.1, prints its base URL (with
// /v1) on a line of its own once it accepts requests, and serves until
// SIGINT or SIGTERM.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/govkit/govkit/internal/llmfake"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: servedemo SCRIPT")
		os.Exit(3)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "servedemo: %v\n", err)
		os.Exit(3)
	}
	steps, err := llmfake.Load(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "servedemo: %v\n", err)
		os.Exit(3)
	}
	srv, err := llmfake.Listen(steps)
	if err != nil {
		fmt.Fprintf(os.Stderr, "servedemo: %v\n", err)
		os.Exit(3)
	}
	fmt.Println(srv.URL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	srv.Close()
}
