package peertest

import (
	"fmt"
	"os"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs at dir (created if missing) with the given mount
// options, e.g. "size=64k" or "nr_inodes=12", and unmounts it at the end of
// the test: a real file system that fills up. Mounting needs root (or
// CAP_SYS_ADMIN); where it is refused the test is skipped, or failed when
// EXITGATE_REQUIRE_PEERS=1. Remount with syscall.Mount and MS_REMOUNT to make
// room.
func Tmpfs(t testing.TB, dir, options string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, options); err != nil {
		msg := fmt.Sprintf("cannot mount a tmpfs at %s (needs root): %v", dir, err)
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s; %s=1 forbids skipping", msg, RequireEnv)
		}
		t.Skip(msg)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
}
