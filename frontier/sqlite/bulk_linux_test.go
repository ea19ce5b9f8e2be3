package sqlite

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/internal/peertest"
)

// TestBulkLoadDiskFull: a URL list loads into a file on a real tmpfs too
// small for it (peertest.Tmpfs). The push that does not fit fails with an
// error that names the file and the full disk (SQLite's own "database or
// disk is full (13)" named neither), the batches before it stay, the file
// is back in WAL mode, and once there is room loading the whole list again
// leaves every job there once.
func TestBulkLoadDiskFull(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fs")
	peertest.Tmpfs(t, dir, "size=1m")
	path := filepath.Join(dir, "f.db")
	const n, batch = 40000, 5000
	load := func(s *Store) (int, error) {
		loaded := 0
		err := s.BulkLoad(ctx, func() error {
			for from := 0; from < n; from += batch {
				k, err := s.Push(ctx, bulkJobs(from, batch))
				loaded += k
				if err != nil {
					return err
				}
			}
			return nil
		})
		return loaded, err
	}

	s, err := Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := load(s)
	if err == nil {
		t.Fatalf("%d jobs loaded into a 1 MiB file system without an error", loaded)
	}
	for _, want := range []string{path, "no space left on device"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("BulkLoad on a full disk: %q, want it to say %q", err, want)
		}
	}
	if loaded == 0 || loaded%batch != 0 {
		t.Errorf("%d jobs loaded before the disk was full, want whole batches of %d, at least one", loaded, batch)
	}
	if got := mustCounts(t, s).Queued; got != loaded {
		t.Errorf("queued %d after the failed load, want the %d of the batches that went in", got, loaded)
	}
	if m := journalMode(t, s); m != "wal" {
		t.Errorf("journal mode %q after the failed load, want wal", m)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, "size=64m"); err != nil {
		t.Fatalf("remount with room: %v", err)
	}
	s, err = Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatalf("open after making room: %v", err)
	}
	defer s.Close()
	if m := journalMode(t, s); m != "wal" {
		t.Errorf("journal mode %q on open, want wal", m)
	}
	more, err := load(s)
	if err != nil {
		t.Fatalf("load with room: %v", err)
	}
	if loaded+more != n {
		t.Errorf("%d jobs loaded, then %d new, want %d in all", loaded, more, n)
	}
	if c := mustCounts(t, s); c.Queued != n || c.Total() != n {
		t.Errorf("counts %+v, want all %d queued, once each", c, n)
	}
}

// mustCounts is s.Counts, failing t on an error.
func mustCounts(t *testing.T, s *Store) frontier.Counts {
	t.Helper()
	c, err := s.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
