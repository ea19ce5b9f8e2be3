package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/frontier/sqlite"
)

// A worker's life: open, recover what a killed process left leased, push,
// then claim and settle.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "frontier")
	defer os.RemoveAll(dir)

	s, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "crawl.db")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s.Recover(ctx, now)

	added, _ := s.Push(ctx, []frontier.NewJob{
		{URL: "https://a.example/1"},
		{URL: "https://A.example:443/1#dup"}, // same key: not added
		{URL: "https://b.example/1"},
		{URL: "https://b.example/gone"},
	})
	fmt.Println("added", added)

	jobs, _ := s.Claim(ctx, now, 10, nil)
	for _, j := range jobs {
		switch j.URL {
		case "https://b.example/gone":
			s.Abandon(ctx, j.Lease(), 404, "http 404")
		case "https://b.example/1":
			// A 429 with a long Retry-After: park it durably.
			s.Park(ctx, j.Lease(), now.Add(time.Hour), 429, "retry-after 3600")
		default:
			s.Complete(ctx, j.Lease(), frontier.Result{Status: 200, Bytes: 512})
		}
	}
	c, _ := s.Counts(ctx)
	fmt.Println("done", c.Done, "parked", c.Parked, "abandoned", c.AbandonedByReason)
	r, _ := s.Ready(ctx, now, 0)
	fmt.Println("ready", r.Hosts, "next", r.Next.UTC().Format(time.TimeOnly))
	// Output:
	// added 3
	// done 1 parked 1 abandoned map[http 404:1]
	// ready [] next 13:00:00
}
