// Package sqlite is the embedded frontier: one SQLite file (pure Go
// modernc.org/sqlite, WAL; a URL list is loaded under a rollback journal,
// BulkLoad) owned by one process.
//
// Every change is one transaction on one connection, committed before the
// call returns: with the default synchronous=NORMAL a committed change
// survives the process being killed (kill -9); SyncFull makes it survive
// power loss as well, at the cost of an fsync per change. The file is
// opened in exclusive locking mode, so a second process cannot open it
// while the first has it open.
//
// The store keeps a small index in memory (per host: whether it has
// unfinished work and when its earliest job falls due), rebuilt from the
// file on Open, so that Ready and Claim know which hosts to serve without
// a query.
//
// Config, Sync and SchemaError are plain values; Store is safe for
// concurrent use.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/exitgate/exitgate/frontier"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Sync is the durability level of a commit.
type Sync uint8

const (
	// SyncNormal (synchronous=NORMAL, the default): a commit survives the
	// process dying; the last commits may be lost if the machine loses
	// power.
	SyncNormal Sync = iota
	// SyncFull (synchronous=FULL): every commit is fsynced.
	SyncFull
)

// pragma is the synchronous setting that gives s.
func (s Sync) pragma() string {
	if s == SyncFull {
		return "FULL"
	}
	return "NORMAL"
}

// Defaults for zero Config fields.
const (
	DefaultLease       = 5 * time.Minute
	DefaultBusyTimeout = 5 * time.Second
	DefaultCacheMiB    = 32
)

// Config configures Open. The zero value of every field but Path means the
// documented default.
type Config struct {
	// Path of the database file, created if missing. Required; may not
	// contain '?'.
	Path string
	// Sync is the commit durability; zero is SyncNormal.
	Sync Sync
	// Lease is the visibility timeout: how long a claim holds a job before
	// it becomes claimable again. Zero means DefaultLease.
	Lease time.Duration
	// BusyTimeout bounds how long Open waits for a lock another process
	// holds. Zero means DefaultBusyTimeout.
	BusyTimeout time.Duration
	// CacheMiB is SQLite's page cache size. Zero means DefaultCacheMiB.
	CacheMiB int
	// Logger receives open and recovery events; nil discards them.
	Logger *slog.Logger
}

// Errors Open returns besides *SchemaError.
var (
	// ErrNotFrontier: the file is a SQLite database of some other program.
	ErrNotFrontier = errors.New("frontier/sqlite: not a frontier database")
	// ErrLocked: another process, or another Store of this one, has the
	// database open.
	ErrLocked = errors.New("frontier/sqlite: database is in use by another process or another Store of this one")
)

// Store is a frontier.Frontier in one SQLite file. It is safe for
// concurrent use: operations are serialised on one connection.
type Store struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex // held for every operation, and while committing
	closed  bool
	db      *sql.DB
	conn    *sql.Conn
	st      stmts
	all     []*sql.Stmt // every statement in st, to close
	sched   *sched
	counts  [frontier.Abandoned + 1]int
	reasons map[string]int

	qmu   sync.Mutex  // guards queue only; never held while waiting for mu
	queue []*settleOp // changes waiting for a group commit

	stats Stats // guarded by mu
}

// Stats counts the store's group commits: how many settling changes
// (Complete, Retry, Park, Abandon, Release, Extend) went into how many
// commits. Changes/Commits is the grouping concurrent callers get.
type Stats struct {
	Commits int64 // transactions that committed settling changes
	Changes int64 // settling changes they held
}

// Stats returns the group commit counts since Open.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

var _ frontier.Frontier = (*Store)(nil)

type stmts struct {
	begin, commit, rollback                         *sql.Stmt
	insHost, insJob, insJobs, insPlain, insRun      *sql.Stmt
	selHead, lease, minDue, getLease                *sql.Stmt
	complete, retry, park, abandon, release, extend *sql.Stmt
	get, finished                                   *sql.Stmt
}

const jobCols = `id, key, method, url, host, exit, state, due, attempts, seq, status, reason, bytes, elapsed, served_by, body, truncated, header, meta`

// Open opens or creates the frontier database at cfg.Path. It does not
// recover leases: call Recover once the store is open.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Path == "" {
		return nil, errors.New("frontier/sqlite: Config.Path is empty")
	}
	if strings.ContainsRune(cfg.Path, '?') {
		return nil, fmt.Errorf("frontier/sqlite: Config.Path %q contains '?'", cfg.Path)
	}
	if cfg.Sync > SyncFull {
		return nil, fmt.Errorf("frontier/sqlite: invalid Config.Sync %d", cfg.Sync)
	}
	if cfg.Lease < 0 || cfg.BusyTimeout < 0 || cfg.CacheMiB < 0 {
		return nil, fmt.Errorf("frontier/sqlite: Config.Lease %v, BusyTimeout %v, CacheMiB %d: want none negative", cfg.Lease, cfg.BusyTimeout, cfg.CacheMiB)
	}
	if cfg.Lease == 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.BusyTimeout == 0 {
		cfg.BusyTimeout = DefaultBusyTimeout
	}
	if cfg.CacheMiB == 0 {
		cfg.CacheMiB = DefaultCacheMiB
	}
	s := &Store{cfg: cfg, log: cfg.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	// Exclusive locking: one process owns the file (the in-memory index
	// would go stale if another wrote to it), and WAL needs no shared
	// memory file then.
	dsn := cfg.Path + "?_pragma=busy_timeout(" + strconv.FormatInt(cfg.BusyTimeout.Milliseconds(), 10) + ")" +
		"&_pragma=journal_mode(WAL)&_pragma=locking_mode(EXCLUSIVE)&_pragma=synchronous(" + cfg.Sync.pragma() + ")" +
		"&_pragma=cache_size(-" + strconv.Itoa(cfg.CacheMiB*1024) + ")&_pragma=temp_store(MEMORY)&_pragma=wal_autocheckpoint(16384)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("frontier/sqlite: open %s: %w", cfg.Path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	s.db = db
	if err := s.open(ctx); err != nil {
		s.release()
		if isBusy(err) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, cfg.Path)
		}
		if hint := diskHint(filepath.Dir(cfg.Path)); hint != "" {
			// SQLite says "unable to open database file (14)" of a file
			// system out of inodes, and "disk I/O error" of one full.
			return nil, fmt.Errorf("%w (%s)", err, hint)
		}
		return nil, err
	}
	return s, nil
}

func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

func (s *Store) open(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("frontier/sqlite: open %s: %w", s.cfg.Path, err)
	}
	s.conn = conn
	if err := s.initSchema(ctx); err != nil {
		return err
	}
	if err := s.prepare(ctx); err != nil {
		return err
	}
	if err := s.load(ctx); err != nil {
		return err
	}
	c := s.countsLocked()
	s.log.Info("frontier opened", "path", s.cfg.Path, "hosts", len(s.sched.byID),
		"queued", c.Queued, "leased", c.Leased, "parked", c.Parked, "done", c.Done, "abandoned", c.Abandoned)
	return nil
}

// initSchema creates the schema in an empty file, or checks that the file
// holds our schema at our version. Its write transaction also takes the
// exclusive lock at once, so a second process fails here.
func (s *Store) initSchema(ctx context.Context) error {
	c := s.conn
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("frontier/sqlite: open %s: %w", s.cfg.Path, err)
	}
	err := func() error {
		var app, ver, tables int
		if err := c.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
			return err
		}
		if err := c.QueryRowContext(ctx, "PRAGMA user_version").Scan(&ver); err != nil {
			return err
		}
		if err := c.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&tables); err != nil {
			return err
		}
		switch {
		case app == 0 && ver == 0 && tables == 0:
			if _, err := c.ExecContext(ctx, schema); err != nil {
				return err
			}
			_, err := c.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d; PRAGMA user_version = %d", applicationID, schemaVersion))
			return err
		case app != applicationID:
			return fmt.Errorf("%w: %s", ErrNotFrontier, s.cfg.Path)
		case ver > schemaVersion || ver < 1:
			return &SchemaError{Path: s.cfg.Path, Got: ver, Want: schemaVersion}
		}
		// An older file is migrated in this same transaction: all or nothing.
		for v := ver; v < schemaVersion; v++ {
			if _, err := c.ExecContext(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migrate schema %d to %d: %w", v, v+1, err)
			}
			s.log.Info("frontier migrated", "path", s.cfg.Path, "from", v, "to", v+1)
		}
		if ver < schemaVersion {
			_, err := c.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion))
			return err
		}
		return nil
	}()
	if err != nil {
		c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		var se *SchemaError
		if errors.As(err, &se) || errors.Is(err, ErrNotFrontier) {
			return err
		}
		return fmt.Errorf("frontier/sqlite: open %s: %w", s.cfg.Path, err)
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("frontier/sqlite: open %s: %w", s.cfg.Path, err)
	}
	return nil
}

func (s *Store) prepare(ctx context.Context) error {
	list := []struct {
		p *(*sql.Stmt)
		q string
	}{
		{&s.st.begin, "BEGIN IMMEDIATE"},
		{&s.st.commit, "COMMIT"},
		{&s.st.rollback, "ROLLBACK"},
		{&s.st.insHost, "INSERT INTO hosts(name) VALUES(?)"},
		{&s.st.insJob, insertJobs(1)},
		{&s.st.insJobs, insertJobs(insRows)},
		{&s.st.insPlain, insertPlain(insRows)},
		// Jobs that share method, host and due, keys in a JSON array:
		// json_each yields them in array order.
		{&s.st.insRun, "INSERT OR IGNORE INTO jobs(key, method, host, due, state) SELECT value, ?2, ?3, ?4, 1 FROM json_each(?1)"},
		// The head of a host's unfinished jobs, in claim order.
		{&s.st.selHead, "SELECT id, key, method, url, exit, state, due, attempts, seq, status, reason, header, meta FROM jobs WHERE host = ? AND state < 4 ORDER BY due, id LIMIT ?"},
		// Lease the first ?4 rows of that order, all due by ?3. The rows
		// are found by the same index range, read from its start, so the
		// cost is that of ?4 rows however many the host has queued (a
		// bound on (due, id) as a range would not use the index's rowid).
		{&s.st.lease, "UPDATE jobs SET state = 2, seq = seq + 1, due = ?1 WHERE id IN (SELECT id FROM jobs WHERE host = ?2 AND state < 4 AND due <= ?3 ORDER BY due, id LIMIT ?4)"},
		{&s.st.minDue, "SELECT due FROM jobs WHERE host = ? AND state < 4 ORDER BY due LIMIT 1"},
		{&s.st.getLease, "SELECT host, state, seq, due FROM jobs WHERE id = ?"},
		{&s.st.complete, "UPDATE jobs SET state = 4, due = 0, attempts = attempts + 1, status = ?, bytes = ?, elapsed = ?, served_by = ?, body = ?, truncated = ? WHERE id = ?"},
		{&s.st.retry, "UPDATE jobs SET state = 1, due = ?, attempts = attempts + ?, status = ?, reason = ? WHERE id = ?"},
		{&s.st.park, "UPDATE jobs SET state = 3, due = ?, status = ?, reason = ? WHERE id = ?"},
		{&s.st.abandon, "UPDATE jobs SET state = 5, due = 0, attempts = attempts + 1, status = ?, reason = ? WHERE id = ?"},
		{&s.st.release, "UPDATE jobs SET state = 1, due = 0 WHERE id = ?"},
		{&s.st.extend, "UPDATE jobs SET due = ? WHERE id = ?"},
		{&s.st.get, "SELECT " + jobCols + " FROM jobs WHERE id = ?"},
		{&s.st.finished, "SELECT " + jobCols + " FROM jobs WHERE id > ? AND state >= 4 ORDER BY id LIMIT ?"},
	}
	for _, x := range list {
		st, err := s.conn.PrepareContext(ctx, x.q)
		if err != nil {
			return fmt.Errorf("frontier/sqlite: prepare %q: %w", x.q, err)
		}
		*x.p = st
		s.all = append(s.all, st)
	}
	return nil
}

// insertJobs is the statement that adds n jobs, each with every column a
// push sets.
func insertJobs(n int) string {
	return insertRows("key, method, url, host, exit, due, header, meta", n)
}

// insertPlain is the statement that adds n jobs that are their own key
// and have no exit pin, header or meta: key, method, host and due each.
func insertPlain(n int) string { return insertRows("key, method, host, due", n) }

// insertRows is the statement that adds n queued jobs with the columns
// cols, one value each.
func insertRows(cols string, n int) string {
	row := "(" + strings.Repeat("?, ", strings.Count(cols, ",")+1) + "1)"
	var b strings.Builder
	b.WriteString("INSERT OR IGNORE INTO jobs(" + cols + ", state) VALUES")
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(row)
	}
	return b.String()
}

// load rebuilds the in-memory index and counts from the file.
func (s *Store) load(ctx context.Context) error {
	apply, err := s.loadState(ctx)
	if err != nil {
		return err
	}
	apply()
	return nil
}

// loadState reads the in-memory index and counts from the file and returns
// a function that installs them.
func (s *Store) loadState(ctx context.Context) (func(), error) {
	sc := newSched()
	rows, err := s.conn.QueryContext(ctx, "SELECT id, name FROM hosts")
	if err != nil {
		return nil, fmt.Errorf("frontier/sqlite: load hosts: %w", err)
	}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			rows.Close()
			return nil, fmt.Errorf("frontier/sqlite: load hosts: %w", err)
		}
		sc.add(id, name)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("frontier/sqlite: load hosts: %w", err)
	}
	rows, err = s.conn.QueryContext(ctx, "SELECT host, min(due) FROM jobs WHERE state < 4 GROUP BY host")
	if err != nil {
		return nil, fmt.Errorf("frontier/sqlite: load due times: %w", err)
	}
	for rows.Next() {
		var id, next int64
		if err := rows.Scan(&id, &next); err != nil {
			rows.Close()
			return nil, fmt.Errorf("frontier/sqlite: load due times: %w", err)
		}
		if h := sc.byID[id]; h != nil {
			sc.set(h, true, next)
		}
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("frontier/sqlite: load due times: %w", err)
	}
	var counts [frontier.Abandoned + 1]int
	rows, err = s.conn.QueryContext(ctx, "SELECT state, count(*) FROM jobs GROUP BY state")
	if err != nil {
		return nil, fmt.Errorf("frontier/sqlite: load counts: %w", err)
	}
	for rows.Next() {
		var st, n int
		if err := rows.Scan(&st, &n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("frontier/sqlite: load counts: %w", err)
		}
		if st < 1 || st >= len(counts) {
			rows.Close()
			return nil, fmt.Errorf("frontier/sqlite: load counts: invalid state %d in %s", st, s.cfg.Path)
		}
		counts[st] = n
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("frontier/sqlite: load counts: %w", err)
	}
	reasons := make(map[string]int)
	rows, err = s.conn.QueryContext(ctx, "SELECT reason, count(*) FROM jobs WHERE state = 5 GROUP BY reason")
	if err != nil {
		return nil, fmt.Errorf("frontier/sqlite: load reasons: %w", err)
	}
	for rows.Next() {
		var r string
		var n int
		if err := rows.Scan(&r, &n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("frontier/sqlite: load reasons: %w", err)
		}
		reasons[r] = n
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("frontier/sqlite: load reasons: %w", err)
	}
	return func() { s.sched, s.counts, s.reasons = sc, counts, reasons }, nil
}

// Close closes the database. Leased jobs stay leased in the file; the next
// Open's Recover returns them.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.release()
}

// release closes the statements, the connection and the pool. Statements
// first: the pool keeps a connection with open statements, and with it the
// exclusive lock on the file.
func (s *Store) release() error {
	var errs []error
	for _, st := range s.all {
		errs = append(errs, st.Close())
	}
	if s.conn != nil {
		errs = append(errs, s.conn.Close())
	}
	errs = append(errs, s.db.Close())
	return errors.Join(errs...)
}

// BulkLoad runs fn, a series of pushes with nothing else using the store,
// under a rollback journal instead of the write-ahead log. In the log every
// page a push writes is written twice, to the log and then by a checkpoint
// to the file (each page as often again as later commits change it); a
// rollback journal writes a page the file already held once to the journal
// and once in place, and a page the load adds to the file once. A kill
// mid-load leaves a hot journal, which the next Open rolls back to the last
// commit, as it would the log's uncommitted frames; that Open returns the
// file to the log (the DSN's journal_mode), as BulkLoad does when fn
// returns.
//
// Into a store that holds no job yet, and with SyncNormal, the load does
// not fsync: what SyncNormal promises is a commit that survives the process
// being killed, and the operating system has every write a killed process
// made. A power loss mid-load could then leave the file corrupt, but it
// held nothing before the load, and the list is the user's: a new --out
// loads it again. A store that holds jobs (a crawl resumed, or a list
// appended) keeps synchronous=NORMAL, which under a rollback journal syncs
// the journal before the file is written over, so that no power loss
// corrupts a crawl's progress; it costs a fifth of the rate for one host
// and a third over 1,000 (BenchmarkPushFile, 411k-418k and 156k-162k URLs/s
// against 469k-497k and 180k-232k).
//
// The page cache is held to bulkCacheMiB meanwhile: measured, not worked
// out (BenchmarkPushFile, 1,000,000 URLs: 471k URLs/s of one host against
// 430k with the usual 32 MiB, over 1,000 hosts the same 219k).
func (s *Store) BulkLoad(ctx context.Context, fn func() error) error {
	sync := s.cfg.Sync.pragma()
	loadSync := sync
	s.mu.Lock()
	if s.cfg.Sync == SyncNormal && s.countsLocked().Total() == 0 {
		loadSync = "OFF"
	}
	s.mu.Unlock()
	if err := s.setJournal(ctx, "TRUNCATE", loadSync, min(s.cfg.CacheMiB, bulkCacheMiB)); err != nil {
		return err
	}
	err := fn()
	// Back to the log even when fn failed or ctx ended: the crawl goes
	// on (or the next run opens) in WAL mode.
	return errors.Join(err, s.setJournal(context.WithoutCancel(ctx), "WAL", sync, s.cfg.CacheMiB))
}

// bulkCacheMiB is the page cache BulkLoad holds the store to.
const bulkCacheMiB = 8

// setJournal sets the file's journal mode, checking that it took, and the
// connection's synchronous setting and page cache.
func (s *Store) setJournal(ctx context.Context, mode, sync string, cacheMiB int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return frontier.ErrClosed
	}
	var got string
	if err := s.conn.QueryRowContext(ctx, "PRAGMA journal_mode = "+mode).Scan(&got); err != nil {
		return fmt.Errorf("frontier/sqlite: journal mode %s: %w", mode, s.onDisk(err))
	}
	if !strings.EqualFold(got, mode) {
		return fmt.Errorf("frontier/sqlite: journal mode %s: the file stayed in %s", mode, got)
	}
	q := "PRAGMA synchronous = " + sync + "; PRAGMA cache_size = -" + strconv.Itoa(cacheMiB*1024)
	if _, err := s.conn.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("frontier/sqlite: %s: %w", q, err)
	}
	return nil
}

// inTx runs fn in a write transaction. The caller holds s.mu. fn returns a
// function to apply to the in-memory state, run only once the commit
// succeeded, so that memory never reflects a rolled-back change.
func (s *Store) inTx(ctx context.Context, fn func() (func(), error)) error {
	if s.closed {
		return frontier.ErrClosed
	}
	if _, err := s.st.begin.ExecContext(ctx); err != nil {
		return err
	}
	apply, err := fn()
	if err == nil {
		// Everything is written; a cancellation now would only make the
		// outcome ambiguous to the caller.
		_, err = s.st.commit.ExecContext(context.WithoutCancel(ctx))
	}
	if err != nil {
		s.st.rollback.ExecContext(context.WithoutCancel(ctx))
		return s.onDisk(err)
	}
	if apply != nil {
		apply()
	}
	return nil
}

// onDisk names the file and the full disk in a SQLITE_FULL error: SQLite's
// own text ("database or disk is full (13)") names neither, and a crawl
// whose --out filled up read as a fault of the frontier, in no file.
func (s *Store) onDisk(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_FULL {
		return fmt.Errorf("%s: no space left on device: %w", s.cfg.Path, err)
	}
	return err
}

const maxNanos = math.MaxInt64

// enc maps a time to the stored integer: zero time is 0 ("immediately"),
// times beyond int64 nanoseconds clamp.
func enc(t time.Time) int64 {
	switch {
	case t.IsZero():
		return 0
	case t.Year() > 2261:
		return maxNanos
	case t.Year() < 1678:
		return math.MinInt64
	}
	return t.UnixNano()
}

func dec(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.Unix(0, v)
}
