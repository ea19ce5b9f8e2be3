package peertest

import "syscall"

// sysProcAttr puts the peer in its own process group, so cleanup can kill its children
// too, and kills it if the test binary dies first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
