package peers

import "syscall"

// sysProcAttr puts the peer in its own process group, so cleanup can kill its children
// too, and kills it if the process that started it dies first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
