package fetch

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/frontier/sqlite"
	"github.com/exitgate/exitgate/limit"
)

// sqliteFrontier opens a SQLite frontier in dir, closed when the test ends,
// and pushes jobs into it.
func sqliteFrontier(tb testing.TB, dir string, jobs ...frontier.NewJob) *sqlite.Store {
	tb.Helper()
	fr, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(dir, "f.db")})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { fr.Close() })
	if _, err := fr.Push(context.Background(), jobs); err != nil {
		tb.Fatal(err)
	}
	return fr
}

// limiterWith returns a limiter configured by cfg over the exits named.
func limiterWith(tb testing.TB, cfg limit.Config, exits ...string) *limit.Limiter {
	tb.Helper()
	lim, err := limit.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	es := make([]limit.Exit, len(exits))
	for i, id := range exits {
		es[i].ID = id
	}
	lim.SetExits(es)
	return lim
}
