package peers

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"slices"
	"strings"
	"syscall"
)

// sysProcAttr puts the peer in its own process group, so cleanup can kill its children
// too, and kills it if the process that started it dies first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// listensHere reports whether the process pid holds the IPv4 socket
// listening on addr (host:port): some other process answers there when a
// port FreePort found free was taken before pid bound it, and a program
// that retries its bind (nginx tries five times over two seconds) is still
// running when the other answers the readiness check. Unknown (false, err)
// when /proc cannot be read.
func listensHere(pid int, addr string) (bool, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() {
		return false, fmt.Errorf("listensHere: %q is not an IPv4 host:port", addr)
	}
	b := ap.Addr().As4()
	// /proc/net/tcp{,6}: the local address as its bytes in hex, little-endian
	// words, then the port; st 0A is LISTEN; the tenth field the inode. A
	// listener on the wildcard address (0.0.0.0, ::) answers on addr too.
	port := fmt.Sprintf(":%04X", ap.Port())
	locals := []string{
		fmt.Sprintf("%02X%02X%02X%02X", b[3], b[2], b[1], b[0]) + port,
		"00000000" + port,
		strings.Repeat("0", 32) + port,
	}
	var inodes []string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(table)
		if err != nil {
			if table == "/proc/net/tcp6" && errors.Is(err, fs.ErrNotExist) {
				continue // no IPv6 here
			}
			return false, err
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) > 9 && f[3] == "0A" && slices.Contains(locals, f[1]) {
				inodes = append(inodes, "socket:["+f[9]+"]")
			}
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false, err
	}
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && slices.Contains(inodes, target) {
			return true, nil
		}
	}
	return false, nil
}
