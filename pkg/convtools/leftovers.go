package convtools

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// MarkEnv is the environment variable that carries a Runner's Mark into
// every command it starts, and so into everything those start.
const MarkEnv = "GOVKIT_SERVE_TOOL"

// KillMarked SIGKILLs every process whose environment carries mark, with
// its process group, and returns how many it found. A server calls it
// when it starts, before any tool of its own runs: what it finds was left
// by a predecessor that died without killing its tools' process groups
// (kill -9, a crash), and whose calls the restart records as interrupted
// (REQ-BED-007: nothing left running). Processes of other users, which
// cannot be read, are not its own.
func KillMarked(mark string) int {
	if mark == "" {
		return 0
	}
	want := []byte(MarkEnv + "=" + mark + "\x00")
	self, selfGroup := os.Getpid(), syscall.Getpgrp()
	dirs, _ := os.ReadDir("/proc")
	n := 0
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
			continue
		}
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 && pgid != selfGroup {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		// A process that left the group (setsid) still carries the mark.
		_ = syscall.Kill(pid, syscall.SIGKILL)
		n++
	}
	return n
}
