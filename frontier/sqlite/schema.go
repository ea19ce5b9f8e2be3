package sqlite

import "fmt"

const (
	// applicationID marks a file as an exitgate frontier ("exgf"), so that
	// Open refuses some other program's database instead of adding tables
	// to it.
	applicationID = 0x65786766
	// schemaVersion is PRAGMA user_version of the schema below. Bump it on
	// any change to tables or indexes, and teach Open to migrate (see
	// migrations).
	schemaVersion = 2
)

// Times are unix nanoseconds; 0 means "immediately". due means: for queued
// and parked jobs, when they become claimable; for leased jobs, when the
// lease expires (so that an expired lease is claimable by the same index
// range); 0 for finished jobs. url is NULL when it equals key, which it
// usually does, to keep the file small. Defaults cost no bytes in a row.
//
// jobs_due is partial: finished jobs leave it, so it shrinks as the crawl
// advances, and Claim is one range scan per host whatever the size of the
// table. The query predicate "state < 4" must match it textually.
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
	truncated INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE UNIQUE INDEX jobs_key ON jobs(key, method);
CREATE INDEX jobs_due ON jobs(host, due) WHERE state < 4;
`

// migrations[v] takes a file from schema version v to v+1.
var migrations = map[int]string{
	// 1 -> 2: done jobs record whether their body was cut at the size cap.
	1: "ALTER TABLE jobs ADD COLUMN truncated INTEGER NOT NULL DEFAULT 0",
}

// SchemaError reports a database written with another schema version.
type SchemaError struct {
	Path      string
	Got, Want int
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("frontier/sqlite: %s has schema version %d, this build reads version %d", e.Path, e.Got, e.Want)
}
