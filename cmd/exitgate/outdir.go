package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/exitgate/exitgate/report"
)

// outLockFile, in --out, is held (flock) while a crawl or a distributed
// worker runs there; the kernel lets it go when the process ends, kill -9
// included.
const outLockFile = ".exitgate.lock"

// lockOut takes --out out for this process, or says that another exitgate
// crawl (or worker) holds it. A crawl's URL list is checked against the
// crawl recorded in out only once it holds the lock: two crawls started at
// once on a new --out both found it empty, and the second loaded its list
// into the first's crawl.
func lockOut(out string) (release func(), err error) {
	lock, err := os.OpenFile(filepath.Join(out, outLockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--out %s: %w", out, err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("--out %s is in use by another exitgate process (a crawl, a worker or a gateway): wait for it to end, or use another --out (each needs its own)", out)
		}
		return nil, fmt.Errorf("--out %s: lock: %w", out, err)
	}
	return func() { lock.Close() }, nil // closing the file lets the lock go
}

// claimWorkerOut makes out a worker's own for the distributed crawl named
// crawl: it refuses an out that another worker is using (both would write
// one journal and one results file), that holds a crawl of its own (its
// frontier.db, its crawl.json) or a worker's part of another distributed
// crawl (whose results and bodies, numbered by job id, this one's would
// overwrite: two crawls' workers sharing an --out left one crawl's rows).
// The lock is held until release. before reports that out was a worker's
// of this crawl already.
func claimWorkerOut(out, crawl string) (release func(), before bool, err error) {
	release, err = lockOut(out)
	if err != nil {
		return nil, false, err
	}
	fail := func(err error) (func(), bool, error) { release(); return nil, false, err }
	if _, err := os.Stat(filepath.Join(out, "frontier.db")); err == nil {
		return fail(fmt.Errorf("--out %s holds a crawl of its own (frontier.db): use another --out for the distributed crawl %q", out, crawl))
	}
	path := filepath.Join(out, crawlRecordFile)
	var rec crawlRecord
	switch b, err := os.ReadFile(path); {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fail(err)
	default:
		if err := json.Unmarshal(b, &rec); err != nil {
			return fail(fmt.Errorf("%s: %w", path, err))
		}
		switch {
		case rec.Distributed == crawl:
			return release, true, nil
		case rec.Distributed != "":
			return fail(fmt.Errorf("--out %s holds a worker's part of the distributed crawl %q: use another --out for %q", out, rec.Distributed, crawl))
		default:
			return fail(fmt.Errorf("--out %s holds a crawl of its own (%s): use another --out for the distributed crawl %q", out, crawlRecordFile, crawl))
		}
	}
	if err := report.WriteJSON(path, crawlRecord{Distributed: crawl}); err != nil {
		return fail(err)
	}
	return release, false, nil
}

// checkCrawlName refuses a --crawl name that cannot name a crawl: it is
// part of Redis keys (no braces: they are its hash tag) and of the
// worker's journal file name.
func checkCrawlName(name string) error {
	switch {
	case name == "":
		return errors.New("--crawl: want a name")
	case len(name) > 100:
		return fmt.Errorf("--crawl %.20q…: %d bytes, want at most 100", name, len(name))
	case name == "." || name == "..":
		return fmt.Errorf("--crawl %q: want a name", name)
	}
	for _, r := range name {
		switch {
		case r == '{' || r == '}':
			return fmt.Errorf("--crawl %q: want a name without braces (Redis reads them as a hash tag)", name)
		case r == '/' || r == '\\' || r < ' ' || r == 0x7f:
			return fmt.Errorf("--crawl %q: want a name without slashes or control characters (it names a crawl worker's journal file)", name)
		}
	}
	return nil
}
