package sqlite

import (
	"fmt"
	"syscall"
)

// diskHint says what is wrong with the file system holding dir when it is
// out of free inodes or of space, or "": the cause of an open SQLite names
// only as "unable to open database file (14)".
func diskHint(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return ""
	}
	switch {
	case st.Files > 0 && st.Ffree == 0:
		return fmt.Sprintf("no free inodes left on the file system of %s", dir)
	case st.Bavail == 0:
		return fmt.Sprintf("no space left on the file system of %s", dir)
	}
	return ""
}
