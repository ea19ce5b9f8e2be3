package sqlite

import (
	"encoding/json"
	"fmt"
)

const (
	// applicationID marks a file as an exitgate frontier ("exgf"), so that
	// Open refuses some other program's database instead of adding tables
	// to it.
	applicationID = 0x65786766
	// schemaVersion is PRAGMA user_version of the schema below. Bump it on
	// any change to tables or indexes, and teach Open to migrate (see
	// migrations).
	schemaVersion = 3
)

// Times are unix nanoseconds; 0 means "immediately". due means: for queued
// and parked jobs, when they become claimable; for leased jobs, when the
// lease expires (so that an expired lease is claimable by the same index
// range); 0 for finished jobs. url is NULL when it equals key, which it
// usually does, to keep the file small. Defaults cost no bytes in a row.
//
// jobs_due is partial: finished jobs leave it, so it shrinks as the crawl
// advances. Its entries are in claim order within a host (due, then the
// rowid every index ends with), so Claim reads and leases the first rows of
// one range per host, whatever the size of the queue. The query predicate
// "state < 4" must match it textually.
//
// header and meta are a job's own request headers and metadata, as JSON
// (see encExtra), empty when it has none.
const schema = `
CREATE TABLE hosts (
	id   INTEGER PRIMARY KEY,
	name TEXT NOT NULL UNIQUE
) STRICT;
CREATE TABLE jobs (
	id        INTEGER PRIMARY KEY,
	key       TEXT NOT NULL,
	method    TEXT NOT NULL,
	url       TEXT,
	host      INTEGER NOT NULL REFERENCES hosts(id),
	exit      TEXT NOT NULL DEFAULT '',
	state     INTEGER NOT NULL,
	due       INTEGER NOT NULL,
	attempts  INTEGER NOT NULL DEFAULT 0,
	seq       INTEGER NOT NULL DEFAULT 0,
	status    INTEGER NOT NULL DEFAULT 0,
	reason    TEXT NOT NULL DEFAULT '',
	bytes     INTEGER NOT NULL DEFAULT 0,
	elapsed   INTEGER NOT NULL DEFAULT 0,
	served_by TEXT NOT NULL DEFAULT '',
	body      TEXT NOT NULL DEFAULT '',
	truncated INTEGER NOT NULL DEFAULT 0,
	header    TEXT NOT NULL DEFAULT '',
	meta      TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE UNIQUE INDEX jobs_key ON jobs(key, method);
CREATE INDEX jobs_due ON jobs(host, due) WHERE state < 4;
`

// migrations[v] takes a file from schema version v to v+1.
var migrations = map[int]string{
	// 1 -> 2: done jobs record whether their body was cut at the size cap.
	1: "ALTER TABLE jobs ADD COLUMN truncated INTEGER NOT NULL DEFAULT 0",
	// 2 -> 3: jobs carry their own request headers and metadata.
	2: "ALTER TABLE jobs ADD COLUMN header TEXT NOT NULL DEFAULT ''; ALTER TABLE jobs ADD COLUMN meta TEXT NOT NULL DEFAULT ''",
}

// SchemaError reports a database written with another schema version.
type SchemaError struct {
	Path      string
	Got, Want int
}

func (e *SchemaError) Error() string {
	if e.Got > e.Want {
		return fmt.Sprintf("frontier/sqlite: %s has schema version %d, written by a newer exitgate; this build reads versions 1 to %d: use a newer build, or a new --out", e.Path, e.Got, e.Want)
	}
	return fmt.Sprintf("frontier/sqlite: %s has schema version %d, which this build cannot read (it reads versions 1 to %d)", e.Path, e.Got, e.Want)
}

// encExtra encodes a job's header or meta map for its column: JSON, or ""
// when it is empty, so that most rows spend a byte on it.
func encExtra[M ~map[string]V, V any](m M) string {
	if len(m) == 0 {
		return ""
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return string(b)
}

// decExtra decodes what encExtra wrote; "" leaves *m nil.
func decExtra[M ~map[string]V, V any](s string, m *M) error {
	if s == "" {
		return nil
	}
	return json.Unmarshal([]byte(s), m)
}
