package sqlite

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenSaysNoInodes: a frontier that cannot be opened on a file system
// out of inodes says so; SQLite's own words were "unable to open database
// file (14)". It mounts a small tmpfs, so it runs as root only (the test
// command runs as root; elsewhere it is skipped, saying why).
func TestOpenSaysNoInodes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs out of inodes needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m,nr_inodes=64", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	path := filepath.Join(dir, "frontier.db")
	s, err := Open(context.Background(), Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for i := 0; ; i++ { // every inode taken
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", i)), nil, 0o644); err != nil {
			break
		}
	}
	_, err = Open(context.Background(), Config{Path: path})
	if err == nil || !strings.Contains(err.Error(), "no free inodes left") {
		t.Errorf("Open with no inode left: %v, want it to say so", err)
	}
}
