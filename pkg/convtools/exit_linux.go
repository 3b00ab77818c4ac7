package convtools

import "golang.org/x/sys/unix"

// waitExit blocks until process pid has exited, without reaping it
// (WNOWAIT): exec.Cmd.Wait still reaps it and collects its status.
func waitExit(pid int, _ <-chan struct{}) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}
