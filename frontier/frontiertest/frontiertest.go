// Package frontiertest is the conformance suite every frontier.Frontier
// store must pass, in the style of testing/fstest.
package frontiertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/exitgate/exitgate/frontier"
)

// T0 is the instant the suite starts its clock at. Stores see only
// instants at or after it.
var T0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// TestFrontier runs the conformance suite. newFrontier must return an
// empty store with a lease (visibility timeout) of at least one second,
// and arrange its cleanup with t.Cleanup.
func TestFrontier(t *testing.T, newFrontier func(t *testing.T) frontier.Frontier) {
	tests := []struct {
		name string
		fn   func(t *testing.T, f frontier.Frontier)
	}{
		{"PushDedupe", testPushDedupe},
		{"PushInvalid", testPushInvalid},
		{"ClaimFields", testClaimFields},
		{"FairAcrossHosts", testFairAcrossHosts},
		{"RoundRobinOneAtATime", testRoundRobinOneAtATime},
		{"ClaimFillsMax", testClaimFillsMax},
		{"EarliestDueFirstWithinHost", testEarliestDueFirst},
		{"HostFilter", testHostFilter},
		{"ClaimHost", testClaimHost},
		{"DueAtPush", testDueAtPush},
		{"Park", testPark},
		{"LeaseExpiry", testLeaseExpiry},
		{"Extend", testExtend},
		{"RetryCharged", testRetryCharged},
		{"RetryNotCharged", testRetryNotCharged},
		{"SettleKeepsHostDue", testSettleKeepsHostDue},
		{"Complete", testComplete},
		{"AbandonReasons", testAbandonReasons},
		{"Release", testRelease},
		{"Recover", testRecover},
		{"NotFound", testNotFound},
		{"Ready", testReady},
		{"Concurrent", testConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newFrontier(t))
		})
	}
}

var ctx = context.Background()

func push(t *testing.T, f frontier.Frontier, jobs ...frontier.NewJob) {
	t.Helper()
	n, err := f.Push(ctx, jobs)
	if err != nil || n != len(jobs) {
		t.Fatalf("Push(%d jobs) = %d, %v, want %d, nil", len(jobs), n, err, len(jobs))
	}
}

func urls(host string, n int) []frontier.NewJob {
	jobs := make([]frontier.NewJob, n)
	for i := range jobs {
		jobs[i] = frontier.NewJob{URL: fmt.Sprintf("http://%s/p%d", host, i)}
	}
	return jobs
}

func claim(t *testing.T, f frontier.Frontier, now time.Time, max int) []frontier.Job {
	t.Helper()
	js, err := f.Claim(ctx, now, max, nil)
	if err != nil {
		t.Fatalf("Claim(%v, %d) error: %v", now, max, err)
	}
	return js
}

func claimOne(t *testing.T, f frontier.Frontier, now time.Time) frontier.Job {
	t.Helper()
	js := claim(t, f, now, 1)
	if len(js) != 1 {
		t.Fatalf("Claim(%v, 1) = %d jobs, want 1", now, len(js))
	}
	return js[0]
}

func claimNone(t *testing.T, f frontier.Frontier, now time.Time) {
	t.Helper()
	if js := claim(t, f, now, 100); len(js) != 0 {
		t.Fatalf("Claim(%v) = %d jobs (first %+v), want none", now, len(js), js[0])
	}
}

func get(t *testing.T, f frontier.Frontier, id int64) frontier.Job {
	t.Helper()
	j, err := f.Get(ctx, id)
	if err != nil {
		t.Fatalf("Get(%d) error: %v", id, err)
	}
	return j
}

func counts(t *testing.T, f frontier.Frontier) frontier.Counts {
	t.Helper()
	c, err := f.Counts(ctx)
	if err != nil {
		t.Fatalf("Counts() error: %v", err)
	}
	return c
}

func wantCounts(t *testing.T, f frontier.Frontier, q, l, p, d, a int) {
	t.Helper()
	c := counts(t, f)
	if c.Queued != q || c.Leased != l || c.Parked != p || c.Done != d || c.Abandoned != a {
		t.Fatalf("Counts() = queued %d leased %d parked %d done %d abandoned %d, want %d %d %d %d %d",
			c.Queued, c.Leased, c.Parked, c.Done, c.Abandoned, q, l, p, d, a)
	}
}

func hostsOf(js []frontier.Job) map[string]int {
	m := make(map[string]int)
	for _, j := range js {
		m[j.Host]++
	}
	return m
}

func testPushDedupe(t *testing.T, f frontier.Frontier) {
	n, err := f.Push(ctx, []frontier.NewJob{
		{URL: "http://example.com/a?x=1"},
		{URL: "HTTP://EXAMPLE.com:80/a?x=1#top"}, // same key
		{URL: "http://example.com/a?x=1"},        // exact duplicate in one batch
		{URL: "http://example.com/b"},
		{URL: "http://example.com/a?x=1", Method: "HEAD"}, // other method: not a duplicate
	})
	if err != nil || n != 3 {
		t.Fatalf("Push(5 jobs, 2 duplicates) = %d, %v, want 3, nil", n, err)
	}
	n, err = f.Push(ctx, []frontier.NewJob{{URL: "http://example.com/b#again"}, {URL: "http://example.com/c"}})
	if err != nil || n != 1 {
		t.Fatalf("Push(1 old, 1 new) = %d, %v, want 1, nil", n, err)
	}
	wantCounts(t, f, 4, 0, 0, 0, 0)
}

func testPushInvalid(t *testing.T, f frontier.Frontier) {
	n, err := f.Push(ctx, []frontier.NewJob{{URL: "http://example.com/ok"}, {URL: "ftp://example.com/x"}})
	if !errors.Is(err, frontier.ErrInvalidURL) || n != 0 {
		t.Fatalf("Push(valid, ftp) = %d, %v, want 0, ErrInvalidURL", n, err)
	}
	n, err = f.Push(ctx, []frontier.NewJob{{URL: "http://example.com/ok", Method: "B@D"}})
	if !errors.Is(err, frontier.ErrInvalidJob) || n != 0 {
		t.Fatalf("Push(bad method) = %d, %v, want 0, ErrInvalidJob", n, err)
	}
	for _, h := range []http.Header{{"Bad Name": {"x"}}, {"X-Split": {"a\r\nInjected: 1"}}} {
		n, err = f.Push(ctx, []frontier.NewJob{{URL: "http://example.com/ok", Header: h}})
		if !errors.Is(err, frontier.ErrInvalidJob) || n != 0 {
			t.Fatalf("Push(header %q) = %d, %v, want 0, ErrInvalidJob", h, n, err)
		}
	}
	wantCounts(t, f, 0, 0, 0, 0, 0)
	if n, err := f.Push(ctx, nil); err != nil || n != 0 {
		t.Fatalf("Push(nil) = %d, %v, want 0, nil", n, err)
	}
}

func testClaimFields(t *testing.T, f frontier.Frontier) {
	header := http.Header{"Cookie": {"session=1"}, "Referer": {"http://example.com/"}}
	meta := map[string]string{"depth": "2", "parent": "http://example.com/"}
	push(t, f, frontier.NewJob{URL: "http://Example.com:80/a#f", Host: "example", Exit: "exit-7", Header: header, Meta: meta})
	header.Set("Cookie", "changed after push")
	meta["depth"] = "changed after push"
	j := claimOne(t, f, T0)
	want := frontier.Job{
		ID: j.ID, URL: "http://Example.com:80/a#f", Key: "http://example.com/a", Host: "example",
		Method: "GET", Exit: "exit-7", State: frontier.Leased, Seq: j.Seq, LeaseUntil: j.LeaseUntil,
		Header: http.Header{"Cookie": {"session=1"}, "Referer": {"http://example.com/"}},
		Meta:   map[string]string{"depth": "2", "parent": "http://example.com/"},
	}
	if !reflect.DeepEqual(j, want) {
		t.Fatalf("Claim() = %+v, want %+v", j, want)
	}
	if j.Seq < 1 || !j.LeaseUntil.After(T0) {
		t.Fatalf("Claim() = Seq %d LeaseUntil %v, want Seq >= 1 and a lease after %v", j.Seq, j.LeaseUntil, T0)
	}
	if g := get(t, f, j.ID); !reflect.DeepEqual(g, j) {
		t.Fatalf("Get(%d) = %+v, want the claimed job %+v", j.ID, g, j)
	}
	if l := j.Lease(); l.ID != j.ID || l.Seq != j.Seq {
		t.Fatalf("Job.Lease() = %+v, want {%d %d}", l, j.ID, j.Seq)
	}
	wantCounts(t, f, 0, 1, 0, 0, 0)

	// Header and meta stay with the job through a retry and to its end.
	if err := f.Retry(ctx, j.Lease(), T0, true, 500, "http 500"); err != nil {
		t.Fatal(err)
	}
	j = claimOne(t, f, T0)
	if !reflect.DeepEqual(j.Header, want.Header) || !reflect.DeepEqual(j.Meta, want.Meta) {
		t.Fatalf("Claim() after Retry = header %v meta %v, want %v %v", j.Header, j.Meta, want.Header, want.Meta)
	}
	if err := f.Complete(ctx, j.Lease(), frontier.Result{Status: 200}); err != nil {
		t.Fatal(err)
	}
	fin, err := f.Finished(ctx, 0, 10)
	if err != nil || len(fin) != 1 || !reflect.DeepEqual(fin[0].Header, want.Header) || !reflect.DeepEqual(fin[0].Meta, want.Meta) {
		t.Fatalf("Finished() = %+v, %v; want the job with header %v meta %v", fin, err, want.Header, want.Meta)
	}

	push(t, f, frontier.NewJob{URL: "https://other.example:8443/x?b=1&a=2"})
	j = claimOne(t, f, T0)
	if j.Host != "other.example:8443" || j.Key != "https://other.example:8443/x?b=1&a=2" {
		t.Fatalf("Claim() = host %q key %q, want the default host key and the query order kept", j.Host, j.Key)
	}
	if j.Header != nil || j.Meta != nil {
		t.Fatalf("Claim() = header %v meta %v for a job pushed without them, want nil", j.Header, j.Meta)
	}
}

func testFairAcrossHosts(t *testing.T, f frontier.Frontier) {
	push(t, f, urls("big.example", 100)...)
	push(t, f, urls("b.example", 3)...)
	push(t, f, urls("c.example", 3)...)
	js := claim(t, f, T0, 6)
	if got, want := hostsOf(js), map[string]int{"big.example": 2, "b.example": 2, "c.example": 2}; !maps.Equal(got, want) {
		t.Fatalf("Claim(6) over hosts with 100, 3, 3 jobs took %v, want %v", got, want)
	}
	// The small hosts have 1 job each left; the rest of a big claim goes
	// to the big host.
	js = claim(t, f, T0, 10)
	if got, want := hostsOf(js), map[string]int{"big.example": 8, "b.example": 1, "c.example": 1}; !maps.Equal(got, want) {
		t.Fatalf("Claim(10) took %v, want %v", got, want)
	}
	wantCounts(t, f, 90, 16, 0, 0, 0)
}

func testRoundRobinOneAtATime(t *testing.T, f frontier.Frontier) {
	push(t, f, urls("a.example", 10)...)
	push(t, f, urls("b.example", 10)...)
	push(t, f, urls("c.example", 10)...)
	var seq []string
	for range 9 {
		seq = append(seq, claimOne(t, f, T0).Host)
	}
	for i := 3; i < len(seq); i++ {
		if seq[i] != seq[i-3] {
			t.Fatalf("hosts of 9 single claims = %v, want a repeating round over the 3 hosts", seq)
		}
	}
	m := map[string]bool{seq[0]: true, seq[1]: true, seq[2]: true}
	if len(m) != 3 {
		t.Fatalf("hosts of 9 single claims = %v, want each of the 3 hosts in every round", seq)
	}
}

// testClaimFillsMax checks that a claim takes max jobs whenever that many
// are due, however they spread over hosts.
func testClaimFillsMax(t *testing.T, f frontier.Frontier) {
	for i, tt := range []struct {
		perHost []int
		max     int
	}{
		{[]int{2, 2, 9}, 7},
		{[]int{9, 2, 2}, 7},
		{[]int{1, 1, 1, 1, 10}, 8},
		{[]int{10, 1, 1, 1, 1}, 8},
		{[]int{3}, 2},
		{[]int{5, 5}, 3},
		{[]int{1, 2, 3, 4, 5, 6}, 20},
		{[]int{1, 2}, 10},
	} {
		total := 0
		for h, n := range tt.perHost {
			push(t, f, urls(fmt.Sprintf("h%d.c%d.example", h, i), n)...)
			total += n
		}
		js := claim(t, f, T0, tt.max)
		if want := min(total, tt.max); len(js) != want {
			t.Fatalf("Claim(max %d) over hosts with %v jobs = %d jobs (%v), want %d", tt.max, tt.perHost, len(js), hostsOf(js), want)
		}
		claim(t, f, T0, total) // drain
		if r, err := f.Ready(ctx, T0, 0); err != nil || len(r.Hosts) != 0 {
			t.Fatalf("Ready() after draining = %+v, %v, want no hosts", r, err)
		}
	}
}

func testEarliestDueFirst(t *testing.T, f frontier.Frontier) {
	push(t, f,
		frontier.NewJob{URL: "http://h.example/late", Due: T0.Add(2 * time.Second)},
		frontier.NewJob{URL: "http://h.example/early", Due: T0.Add(time.Second)},
		frontier.NewJob{URL: "http://h.example/now"},
		frontier.NewJob{URL: "http://h.example/now2"},
	)
	var got []string
	for _, j := range claim(t, f, T0.Add(time.Hour), 10) {
		got = append(got, j.URL)
	}
	want := []string{"http://h.example/now", "http://h.example/now2", "http://h.example/early", "http://h.example/late"}
	if !slices.Equal(got, want) {
		t.Fatalf("Claim() order = %v, want %v (due, then push order)", got, want)
	}
}

func testHostFilter(t *testing.T, f frontier.Frontier) {
	push(t, f, urls("a.example", 5)...)
	push(t, f, urls("b.example", 5)...)
	var asked []string
	js, err := f.Claim(ctx, T0, 10, func(h string) bool {
		asked = append(asked, h)
		return h != "a.example"
	})
	if err != nil {
		t.Fatalf("Claim(hostOK) error: %v", err)
	}
	if got, want := hostsOf(js), map[string]int{"b.example": 5}; !maps.Equal(got, want) {
		t.Fatalf("Claim(not a.example) took %v, want %v", got, want)
	}
	slices.Sort(asked)
	if !slices.Equal(asked, []string{"a.example", "b.example"}) {
		t.Fatalf("Claim asked hostOK about %v, want each due host once", asked)
	}
	js, err = f.Claim(ctx, T0, 10, func(string) bool { return false })
	if err != nil || len(js) != 0 {
		t.Fatalf("Claim(no host ok) = %d jobs, %v, want none", len(js), err)
	}
}

func testClaimHost(t *testing.T, f frontier.Frontier) {
	push(t, f, urls("a.example", 5)...)
	push(t, f, urls("b.example", 5)...)
	js, err := f.ClaimHost(ctx, "b.example", T0, 3)
	if err != nil || len(js) != 3 {
		t.Fatalf("ClaimHost(b, 3) = %d jobs, %v, want 3", len(js), err)
	}
	if got := hostsOf(js); got["b.example"] != 3 {
		t.Fatalf("ClaimHost(b) took %v, want b.example only", got)
	}
	js, err = f.ClaimHost(ctx, "b.example", T0, 10)
	if err != nil || len(js) != 2 {
		t.Fatalf("ClaimHost(b, 10) = %d jobs, %v, want the 2 left", len(js), err)
	}
	js, err = f.ClaimHost(ctx, "nobody.example", T0, 10)
	if err != nil || len(js) != 0 {
		t.Fatalf("ClaimHost(unknown) = %d jobs, %v, want none", len(js), err)
	}
	wantCounts(t, f, 5, 5, 0, 0, 0)
}

func testDueAtPush(t *testing.T, f frontier.Frontier) {
	due := T0.Add(10 * time.Second)
	push(t, f, frontier.NewJob{URL: "http://a.example/later", Due: due})
	claimNone(t, f, due.Add(-time.Nanosecond))
	r, err := f.Ready(ctx, T0, 10)
	if err != nil || len(r.Hosts) != 0 || !r.Next.Equal(due) {
		t.Fatalf("Ready(T0) = %+v, %v, want no hosts, next %v", r, err, due)
	}
	if j := claimOne(t, f, due); j.URL != "http://a.example/later" {
		t.Fatalf("Claim(due) = %+v", j)
	}
}

func testPark(t *testing.T, f frontier.Frontier) {
	push(t, f, frontier.NewJob{URL: "http://a.example/x"})
	j := claimOne(t, f, T0)
	until := T0.Add(time.Hour)
	if err := f.Park(ctx, j.Lease(), until, 429, "retry-after over cap"); err != nil {
		t.Fatalf("Park() error: %v", err)
	}
	p := get(t, f, j.ID)
	if p.State != frontier.Parked || !p.Due.Equal(until) || p.Status != 429 || p.Reason != "retry-after over cap" || p.Attempts != 0 {
		t.Fatalf("Get(parked) = %+v, want parked until %v, status 429, reason kept, attempts 0", p, until)
	}
	wantCounts(t, f, 0, 0, 1, 0, 0)
	claimNone(t, f, until.Add(-time.Nanosecond))
	r, err := f.Ready(ctx, T0.Add(time.Minute), 10)
	if err != nil || len(r.Hosts) != 0 || !r.Next.Equal(until) {
		t.Fatalf("Ready() = %+v, %v, want no hosts, next %v", r, err, until)
	}
	if err := f.Complete(ctx, j.Lease(), frontier.Result{Status: 200}); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Fatalf("Complete(lease of a parked job) = %v, want ErrLeaseLost", err)
	}
	again := claimOne(t, f, until)
	if again.ID != j.ID || again.Seq != j.Seq+1 || again.Attempts != 0 {
		t.Fatalf("Claim(until) = %+v, want job %d with Seq %d, attempts 0", again, j.ID, j.Seq+1)
	}
	wantCounts(t, f, 0, 1, 0, 0, 0)
}

func testLeaseExpiry(t *testing.T, f frontier.Frontier) {
	push(t, f, frontier.NewJob{URL: "http://a.example/x"})
	j := claimOne(t, f, T0)
	exp := j.LeaseUntil
	claimNone(t, f, exp.Add(-time.Nanosecond))
	r, err := f.Ready(ctx, T0, 10)
	if err != nil || len(r.Hosts) != 0 || !r.Next.Equal(exp) {
		t.Fatalf("Ready() with one leased job = %+v, %v, want no hosts, next %v (the lease expiry)", r, err, exp)
	}
	r, err = f.Ready(ctx, exp, 10)
	if err != nil || !slices.Equal(r.Hosts, []string{"a.example"}) {
		t.Fatalf("Ready(lease expiry) = %+v, %v, want a.example", r, err)
	}
	again := claimOne(t, f, exp)
	if again.ID != j.ID || again.Seq == j.Seq || again.Attempts != 0 {
		t.Fatalf("Claim(after expiry) = %+v, want job %d under a new lease, attempts 0", again, j.ID)
	}
	if err := f.Complete(ctx, j.Lease(), frontier.Result{Status: 200}); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Fatalf("Complete(expired, retaken lease) = %v, want ErrLeaseLost", err)
	}
	if err := f.Complete(ctx, again.Lease(), frontier.Result{Status: 200}); err != nil {
		t.Fatalf("Complete(current lease) = %v", err)
	}
	wantCounts(t, f, 0, 0, 0, 1, 0)

	// A lease that expired but was not retaken can still be settled.
	push(t, f, frontier.NewJob{URL: "http://a.example/y"})
	j = claimOne(t, f, T0)
	if err := f.Retry(ctx, j.Lease(), j.LeaseUntil.Add(time.Hour), true, 500, "http 500"); err != nil {
		t.Fatalf("Retry(expired, not retaken lease) = %v, want nil", err)
	}
}

func testExtend(t *testing.T, f frontier.Frontier) {
	push(t, f, frontier.NewJob{URL: "http://a.example/x"})
	j := claimOne(t, f, T0)
	later := j.LeaseUntil.Add(time.Hour)
	if err := f.Extend(ctx, j.Lease(), later); err != nil {
		t.Fatalf("Extend() error: %v", err)
	}
	if g := get(t, f, j.ID); !g.LeaseUntil.Equal(later) || g.State != frontier.Leased {
		t.Fatalf("Get(extended) = %+v, want leased until %v", g, later)
	}
	claimNone(t, f, j.LeaseUntil)
	if again := claimOne(t, f, later); again.ID != j.ID {
		t.Fatalf("Claim(extended expiry) = %+v, want job %d", again, j.ID)
	}
	if err := f.Extend(ctx, j.Lease(), later.Add(time.Hour)); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Fatalf("Extend(retaken lease) = %v, want ErrLeaseLost", err)
	}
}

func testRetryCharged(t *testing.T, f frontier.Frontier) {
	push(t, f, frontier.NewJob{URL: "http://a.example/x"})
	j := claimOne(t, f, T0)
	at := T0.Add(30 * time.Second)
	if err := f.Retry(ctx, j.Lease(), at, true, 503, "http 503"); err != nil {
		t.Fatalf("Retry() error: %v", err)
	}
	g := get(t, f, j.ID)
	if g.State != frontier.Queued || !g.Due.Equal(at) || g.Attempts != 1 || g.Status != 503 || g.Reason != "http 503" {
		t.Fatalf("Get(retried) = %+v, want queued due %v, attempts 1, status 503, reason kept", g, at)
	}
	wantCounts(t, f, 1, 0, 0, 0, 0)
	claimNone(t, f, at.Add(-time.Nanosecond))
	j = claimOne(t, f, at)
	if err := f.Retry(ctx, j.Lease(), at, true, 0, "timeout"); err != nil {
		t.Fatalf("Retry() error: %v", err)
	}
	if g := get(t, f, j.ID); g.Attempts != 2 {
		t.Fatalf("Get(retried twice) attempts = %d, want 2", g.Attempts)
	}
	if err := f.Retry(ctx, j.Lease(), at, true, 0, "again"); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Fatalf("Retry(settled lease) = %v, want ErrLeaseLost", err)
	}
}

func testRetryNotCharged(t *testing.T, f frontier.Frontier) {
	push(t, f, frontier.NewJob{URL: "http://a.example/x"})
	j := claimOne(t, f, T0)
	if err := f.Retry(ctx, j.Lease(), time.Time{}, false, 407, "proxy auth"); err != nil {
		t.Fatalf("Retry(uncharged) error: %v", err)
	}
	j = claimOne(t, f, T0) // zero time: due immediately
	if j.Attempts != 0 || j.Status != 407 || j.Reason != "proxy auth" {
		t.Fatalf("Claim(after uncharged retry) = %+v, want attempts 0, status 407, reason kept", j)
	}
	if err := f.Complete(ctx, j.Lease(), frontier.Result{Status: 200}); err != nil {
		t.Fatalf("Complete() error: %v", err)
	}
	if g := get(t, f, j.ID); g.Attempts != 1 {
		t.Fatalf("Get(completed after an uncharged retry) attempts = %d, want 1", g.Attempts)
	}
}

// testSettleKeepsHostDue moves one job of a host into the future while
// another is due: the host must stay ready.
func testSettleKeepsHostDue(t *testing.T, f frontier.Frontier) {
	push(t, f, urls("a.example", 4)...)
	js := claim(t, f, T0, 2)
	if err := f.Retry(ctx, js[0].Lease(), T0.Add(time.Hour), true, 500, "http 500"); err != nil {
		t.Fatalf("Retry() error: %v", err)
	}
	r, err := f.Ready(ctx, T0, 0)
	if err != nil || !slices.Equal(r.Hosts, []string{"a.example"}) {
		t.Fatalf("Ready() with 2 jobs due, 1 retried later = %+v, %v, want a.example", r, err)
	}
	if err := f.Park(ctx, js[1].Lease(), T0.Add(2*time.Hour), 429, "retry-after"); err != nil {
		t.Fatalf("Park() error: %v", err)
	}
	r, err = f.Ready(ctx, T0, 0)
	if err != nil || !slices.Equal(r.Hosts, []string{"a.example"}) {
		t.Fatalf("Ready() with 2 jobs due, 1 parked = %+v, %v, want a.example", r, err)
	}
	js = claim(t, f, T0, 10)
	if len(js) != 2 {
		t.Fatalf("Claim() = %d jobs, want the 2 due", len(js))
	}
	want := T0.Add(time.Hour)
	if js[0].LeaseUntil.Before(want) {
		want = js[0].LeaseUntil
	}
	r, err = f.Ready(ctx, T0, 0)
	if err != nil || len(r.Hosts) != 0 || !r.Next.Equal(want) {
		t.Fatalf("Ready() = %+v, %v, want nothing until %v (the retry or a lease expiry)", r, err, want)
	}
}

func testComplete(t *testing.T, f frontier.Frontier) {
	push(t, f, frontier.NewJob{URL: "http://a.example/x"})
	j := claimOne(t, f, T0)
	res := frontier.Result{Status: 200, Bytes: 12345, Exit: "exit-3", Elapsed: 250 * time.Millisecond, Body: "/tmp/bodies/1", Truncated: true}
	if err := f.Complete(ctx, j.Lease(), res); err != nil {
		t.Fatalf("Complete() error: %v", err)
	}
	g := get(t, f, j.ID)
	if g.State != frontier.Done || g.Result != res || g.Status != 200 || g.Attempts != 1 || !g.Due.IsZero() || !g.LeaseUntil.IsZero() {
		t.Fatalf("Get(done) = %+v, want done with result %+v, attempts 1, no due or lease", g, res)
	}
	if err := f.Complete(ctx, j.Lease(), res); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Fatalf("Complete() twice = %v, want ErrLeaseLost", err)
	}
	if n, err := f.Push(ctx, []frontier.NewJob{{URL: "http://A.example/x"}}); err != nil || n != 0 {
		t.Fatalf("Push(done URL) = %d, %v, want 0: finished jobs are not redone", n, err)
	}
	claimNone(t, f, T0.Add(24*time.Hour))
	r, err := f.Ready(ctx, T0, 10)
	if err != nil || len(r.Hosts) != 0 || !r.Next.IsZero() {
		t.Fatalf("Ready(all done) = %+v, %v, want nothing", r, err)
	}
	wantCounts(t, f, 0, 0, 0, 1, 0)
}

func testAbandonReasons(t *testing.T, f frontier.Frontier) {
	push(t, f, urls("a.example", 5)...)
	js := claim(t, f, T0, 5)
	if len(js) != 5 {
		t.Fatalf("Claim(5) = %d jobs", len(js))
	}
	for i, reason := range []string{"http 404", "http 404", "retries exhausted"} {
		if err := f.Abandon(ctx, js[i].Lease(), 404-4*(i/2), reason); err != nil {
			t.Fatalf("Abandon() error: %v", err)
		}
	}
	if err := f.Complete(ctx, js[3].Lease(), frontier.Result{Status: 200}); err != nil {
		t.Fatalf("Complete() error: %v", err)
	}
	c := counts(t, f)
	want := map[string]int{"http 404": 2, "retries exhausted": 1}
	if c.Abandoned != 3 || c.Done != 1 || c.Leased != 1 || !maps.Equal(c.AbandonedByReason, want) {
		t.Fatalf("Counts() = %+v, want 3 abandoned by %v, 1 done, 1 leased", c, want)
	}
	if c.Total() != 5 || c.Unfinished() != 1 {
		t.Fatalf("Counts() total %d unfinished %d, want 5 and 1", c.Total(), c.Unfinished())
	}
	g := get(t, f, js[2].ID)
	if g.State != frontier.Abandoned || g.Reason != "retries exhausted" || g.Status != 400 || g.Attempts != 1 {
		t.Fatalf("Get(abandoned) = %+v, want abandoned, reason and status kept, attempts 1", g)
	}

	var all []frontier.Job
	for after := int64(0); ; {
		page, err := f.Finished(ctx, after, 2)
		if err != nil {
			t.Fatalf("Finished(%d, 2) error: %v", after, err)
		}
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		after = page[len(page)-1].ID
	}
	if len(all) != 4 || !slices.IsSortedFunc(all, func(a, b frontier.Job) int { return int(a.ID - b.ID) }) {
		t.Fatalf("Finished() pages = %d jobs, want the 4 finished ones in ID order", len(all))
	}
	for _, j := range all {
		if !j.State.Final() {
			t.Fatalf("Finished() returned %+v, which is not finished", j)
		}
	}
}

func testRelease(t *testing.T, f frontier.Frontier) {
	push(t, f, frontier.NewJob{URL: "http://a.example/x"})
	j := claimOne(t, f, T0)
	if err := f.Release(ctx, j.Lease()); err != nil {
		t.Fatalf("Release() error: %v", err)
	}
	wantCounts(t, f, 1, 0, 0, 0, 0)
	if err := f.Complete(ctx, j.Lease(), frontier.Result{}); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Fatalf("Complete(released lease) = %v, want ErrLeaseLost", err)
	}
	again := claimOne(t, f, T0)
	if again.ID != j.ID || again.Attempts != 0 || again.Seq != j.Seq+1 {
		t.Fatalf("Claim(after release) = %+v, want job %d, attempts 0, Seq %d", again, j.ID, j.Seq+1)
	}
}

func testRecover(t *testing.T, f frontier.Frontier) {
	push(t, f, urls("a.example", 3)...)
	push(t, f, urls("b.example", 3)...)
	js := claim(t, f, T0, 4)
	if err := f.Complete(ctx, js[0].Lease(), frontier.Result{Status: 200}); err != nil {
		t.Fatalf("Complete() error: %v", err)
	}
	now := T0.Add(time.Second)
	n, err := f.Recover(ctx, now)
	if err != nil || n != 3 {
		t.Fatalf("Recover() = %d, %v, want 3", n, err)
	}
	wantCounts(t, f, 5, 0, 0, 1, 0)
	for _, j := range js[1:] {
		if err := f.Complete(ctx, j.Lease(), frontier.Result{}); !errors.Is(err, frontier.ErrLeaseLost) {
			t.Fatalf("Complete(recovered lease) = %v, want ErrLeaseLost", err)
		}
	}
	got := claim(t, f, now, 100)
	if len(got) != 5 {
		t.Fatalf("Claim(after Recover) = %d jobs, want 5", len(got))
	}
	for _, j := range got {
		if j.ID == js[0].ID {
			t.Fatalf("Claim(after Recover) returned the completed job %d", j.ID)
		}
	}
	if n, err := f.Recover(ctx, now); err != nil || n != 5 {
		t.Fatalf("Recover() again = %d, %v, want 5", n, err)
	}
}

func testNotFound(t *testing.T, f frontier.Frontier) {
	if _, err := f.Get(ctx, 12345); !errors.Is(err, frontier.ErrNotFound) {
		t.Fatalf("Get(unknown) = %v, want ErrNotFound", err)
	}
	l := frontier.Lease{ID: 12345, Seq: 1}
	for name, err := range map[string]error{
		"Complete": f.Complete(ctx, l, frontier.Result{}),
		"Retry":    f.Retry(ctx, l, T0, true, 0, ""),
		"Park":     f.Park(ctx, l, T0, 0, ""),
		"Abandon":  f.Abandon(ctx, l, 0, ""),
		"Release":  f.Release(ctx, l),
		"Extend":   f.Extend(ctx, l, T0),
	} {
		if !errors.Is(err, frontier.ErrNotFound) {
			t.Errorf("%s(unknown job) = %v, want ErrNotFound", name, err)
		}
	}
}

func testReady(t *testing.T, f frontier.Frontier) {
	r, err := f.Ready(ctx, T0, 10)
	if err != nil || len(r.Hosts) != 0 || !r.Next.IsZero() {
		t.Fatalf("Ready(empty) = %+v, %v, want nothing", r, err)
	}
	push(t, f, urls("a.example", 2)...)
	push(t, f, urls("b.example", 2)...)
	push(t, f, urls("c.example", 2)...)
	push(t, f, frontier.NewJob{URL: "http://d.example/", Due: T0.Add(time.Minute)})
	r, err = f.Ready(ctx, T0, 10)
	slices.Sort(r.Hosts)
	if err != nil || !slices.Equal(r.Hosts, []string{"a.example", "b.example", "c.example"}) {
		t.Fatalf("Ready(T0) = %+v, %v, want a, b and c", r, err)
	}
	if r, _ := f.Ready(ctx, T0, 2); len(r.Hosts) != 2 {
		t.Fatalf("Ready(T0, max 2) = %v, want 2 hosts", r.Hosts)
	}
	// The host served last goes to the back.
	served := []frontier.Job{claimOne(t, f, T0)}
	r, _ = f.Ready(ctx, T0, 10)
	if h := served[0].Host; len(r.Hosts) != 3 || r.Hosts[2] != h {
		t.Fatalf("Ready() after claiming from %s = %v, want %s last", h, r.Hosts, h)
	}
	// Finish a, b, c: only d's future job is left.
	for _, j := range append(claim(t, f, T0, 100), served...) {
		if err := f.Complete(ctx, j.Lease(), frontier.Result{Status: 200}); err != nil {
			t.Fatalf("Complete() error: %v", err)
		}
	}
	r, err = f.Ready(ctx, T0, 10)
	if err != nil || len(r.Hosts) != 0 || !r.Next.Equal(T0.Add(time.Minute)) {
		t.Fatalf("Ready(drained) = %+v, %v, want no hosts, next %v", r, err, T0.Add(time.Minute))
	}
	r, err = f.Ready(ctx, T0.Add(time.Minute), 10)
	if err != nil || !slices.Equal(r.Hosts, []string{"d.example"}) {
		t.Fatalf("Ready(T0+1m) = %+v, %v, want d.example", r, err)
	}
}

// testConcurrent has workers claim and settle in parallel; every job must
// end done exactly once.
func testConcurrent(t *testing.T, f frontier.Frontier) {
	const hosts, perHost, workers = 5, 40, 4
	for h := range hosts {
		push(t, f, urls(fmt.Sprintf("h%d.example", h), perHost)...)
	}
	var mu sync.Mutex
	done := make(map[int64]int)
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for round := 0; round < 10*hosts*perHost; round++ {
				js, err := f.Claim(ctx, T0, 3, nil)
				if err != nil {
					errc <- err
					return
				}
				if len(js) == 0 {
					return
				}
				for i, j := range js {
					if (w+i)%4 == 0 && j.Attempts == 0 {
						// Some go round once more.
						if err := f.Retry(ctx, j.Lease(), time.Time{}, true, 500, "http 500"); err != nil {
							errc <- err
							return
						}
						continue
					}
					if err := f.Complete(ctx, j.Lease(), frontier.Result{Status: 200}); err != nil {
						errc <- err
						return
					}
					mu.Lock()
					done[j.ID]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatalf("worker error: %v", err)
	}
	if len(done) != hosts*perHost {
		t.Fatalf("%d distinct jobs completed, want %d", len(done), hosts*perHost)
	}
	for id, n := range done {
		if n != 1 {
			t.Fatalf("job %d completed %d times, want once", id, n)
		}
	}
	wantCounts(t, f, 0, 0, 0, hosts*perHost, 0)
}
