package memory

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/exitgate/exitgate/frontier"
)

// model is the frontier contract written as plainly as possible: every
// operation scans every job. TestModel checks that the Store's heaps give
// the same answers.
type model struct {
	lease   int64
	jobs    []mjob
	keys    map[[2]string]bool
	hosts   []mhost
	byName  map[string]int
	clock   int64
	reasons map[string]int
}

type mjob struct {
	j    frontier.Job // Due and LeaseUntil unused: see due
	host int
	due  int64 // due time or lease expiry, as enc encodes it
}

type mhost struct {
	name   string
	served int64
}

func newModel(lease time.Duration) *model {
	return &model{lease: int64(lease), keys: map[[2]string]bool{}, byName: map[string]int{}, reasons: map[string]int{}}
}

func (m *model) export(mj *mjob) frontier.Job {
	j := mj.j
	switch j.State {
	case frontier.Queued, frontier.Parked:
		j.Due = dec(mj.due)
	case frontier.Leased:
		j.LeaseUntil = dec(mj.due)
	case frontier.Done:
		j.Result.Status = j.Status
	}
	return j
}

func (m *model) push(jobs []frontier.NewJob) (int, error) {
	var ps []frontier.Job
	for _, nj := range jobs {
		p, err := frontier.Prepare(nj)
		if err != nil {
			return 0, err
		}
		ps = append(ps, p)
	}
	added := 0
	for _, p := range ps {
		k := [2]string{p.Method, p.Key}
		if m.keys[k] {
			continue
		}
		m.keys[k] = true
		h, ok := m.byName[p.Host]
		if !ok {
			h = len(m.hosts)
			m.byName[p.Host] = h
			m.hosts = append(m.hosts, mhost{name: p.Host})
		}
		p.ID = int64(len(m.jobs)) + 1
		due := enc(p.Due)
		p.Due = time.Time{}
		m.jobs = append(m.jobs, mjob{j: p, host: h, due: due})
		added++
	}
	return added, nil
}

// earliest returns the index of host h's earliest unfinished job due at
// now and not in skip, or -1.
func (m *model) earliest(h int, now int64, skip map[int]bool) int {
	best := -1
	for i := range m.jobs {
		mj := &m.jobs[i]
		if mj.host != h || mj.j.State.Final() || mj.due > now || skip[i] {
			continue
		}
		if best < 0 || mj.due < m.jobs[best].due {
			best = i
		}
	}
	return best
}

// dueHosts returns the hosts with work due at now, least recently served
// first.
func (m *model) dueHosts(now int64) []int {
	var hs []int
	for h := range m.hosts {
		if m.earliest(h, now, nil) >= 0 {
			hs = append(hs, h)
		}
	}
	slices.SortStableFunc(hs, func(a, b int) int { return cmp.Compare(m.hosts[a].served, m.hosts[b].served) })
	return hs
}

func (m *model) claim(now time.Time, max int, hostOK func(string) bool) []frontier.Job {
	if max <= 0 {
		return nil
	}
	n := enc(now)
	var chosen []int
	for _, h := range m.dueHosts(n) {
		if len(chosen) == max {
			break
		}
		if hostOK != nil && !hostOK(m.hosts[h].name) {
			m.clock++
			m.hosts[h].served = m.clock
			continue
		}
		chosen = append(chosen, h)
	}
	out := m.take(chosen, n, max)
	for _, h := range chosen {
		m.clock++
		m.hosts[h].served = m.clock
	}
	return out
}

func (m *model) take(hosts []int, n int64, max int) []frontier.Job {
	until := n + m.lease
	if n > 1<<63-1-m.lease {
		until = 1<<63 - 1
	}
	taken := map[int]bool{}
	var out []frontier.Job
	var order []int
	for open := hosts; len(out) < max && len(open) > 0; {
		var more []int
		for _, h := range open {
			if len(out) == max {
				break
			}
			i := m.earliest(h, n, taken)
			if i < 0 {
				continue
			}
			taken[i] = true
			order = append(order, i)
			mj := &m.jobs[i]
			mj.j.State = frontier.Leased
			mj.j.Seq++
			mj.due = until
			out = append(out, m.export(mj))
			more = append(more, h)
		}
		open = more
	}
	return out
}

func (m *model) claimHost(name string, now time.Time, max int) []frontier.Job {
	h, ok := m.byName[name]
	n := enc(now)
	if !ok || max <= 0 || m.earliest(h, n, nil) < 0 {
		return nil
	}
	out := m.take([]int{h}, n, max)
	m.clock++
	m.hosts[h].served = m.clock
	return out
}

func (m *model) ready(now time.Time, max int) frontier.Ready {
	n := enc(now)
	var r frontier.Ready
	due := m.dueHosts(n)
	for _, h := range due {
		if max > 0 && len(r.Hosts) == max {
			break
		}
		r.Hosts = append(r.Hosts, m.hosts[h].name)
	}
	next := int64(0)
	found := false
	for i := range m.jobs {
		mj := &m.jobs[i]
		if mj.j.State.Final() || slices.Contains(due, mj.host) {
			continue
		}
		if !found || mj.due < next {
			next, found = mj.due, true
		}
	}
	if found {
		r.Next = dec(next)
	}
	return r
}

func (m *model) leased(l frontier.Lease) (*mjob, error) {
	if l.ID < 1 || l.ID > int64(len(m.jobs)) {
		return nil, frontier.ErrNotFound
	}
	mj := &m.jobs[l.ID-1]
	if mj.j.State != frontier.Leased || mj.j.Seq != l.Seq {
		return nil, frontier.ErrLeaseLost
	}
	return mj, nil
}

func (m *model) recover(now time.Time) int {
	n := 0
	for i := range m.jobs {
		if mj := &m.jobs[i]; mj.j.State == frontier.Leased {
			mj.j.State, mj.due = frontier.Queued, enc(now)
			n++
		}
	}
	return n
}

func (m *model) counts() frontier.Counts {
	var c frontier.Counts
	for _, mj := range m.jobs {
		switch mj.j.State {
		case frontier.Queued:
			c.Queued++
		case frontier.Leased:
			c.Leased++
		case frontier.Parked:
			c.Parked++
		case frontier.Done:
			c.Done++
		case frontier.Abandoned:
			c.Abandoned++
		}
	}
	c.AbandonedByReason = maps.Clone(m.reasons)
	return c
}

func sameErr(a, b error) bool {
	for _, e := range []error{frontier.ErrNotFound, frontier.ErrLeaseLost, frontier.ErrInvalidURL, frontier.ErrInvalidJob} {
		if errors.Is(a, e) != errors.Is(b, e) {
			return false
		}
	}
	return (a == nil) == (b == nil)
}

// TestModel runs random operations against the Store and the model and
// compares every answer, with the clock mostly moving forward and
// sometimes back.
func TestModel(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 5
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, seed, 1500) })
	}
}

func runModel(t *testing.T, seed uint64, ops int) {
	rng := rand.New(rand.NewPCG(seed, 42))
	const lease = 10 * time.Second
	s := newStore(t, Config{Lease: lease})
	m := newModel(lease)
	hostNames := []string{"a.example", "b.example", "c.example", "d.example", "e.example:8080"}
	now := t0
	at := func() time.Time { // a due time around now
		switch rng.IntN(4) {
		case 0:
			return time.Time{}
		case 1:
			return now.Add(-time.Duration(rng.IntN(5)) * time.Second)
		}
		return now.Add(time.Duration(rng.IntN(30)) * time.Second)
	}
	var leases []frontier.Lease // every lease handed out, current or stale
	for op := range ops {
		if rng.IntN(10) == 0 {
			now = now.Add(-time.Duration(rng.IntN(5)) * time.Second)
		} else {
			now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
		}
		where := fmt.Sprintf("seed %d op %d", seed, op)
		switch k := rng.IntN(100); {
		case k < 15:
			var jobs []frontier.NewJob
			for range 1 + rng.IntN(4) {
				nj := frontier.NewJob{URL: fmt.Sprintf("http://%s/%d", hostNames[rng.IntN(len(hostNames))], rng.IntN(40)), Due: at()}
				if rng.IntN(8) == 0 {
					nj.Method = "HEAD"
				}
				if rng.IntN(50) == 0 {
					nj.URL = "ftp://x/"
				}
				jobs = append(jobs, nj)
			}
			gn, gerr := s.Push(ctx, jobs)
			wn, werr := m.push(jobs)
			if gn != wn || !sameErr(gerr, werr) {
				t.Fatalf("%s: Push(%v) = %d, %v, want %d, %v", where, jobs, gn, gerr, wn, werr)
			}
		case k < 35:
			max := rng.IntN(6)
			var skip string
			if rng.IntN(3) == 0 {
				skip = hostNames[rng.IntN(len(hostNames))]
			}
			var gotAsked, wantAsked []string
			got, err := s.Claim(ctx, now, max, func(h string) bool { gotAsked = append(gotAsked, h); return h != skip })
			want := m.claim(now, max, func(h string) bool { wantAsked = append(wantAsked, h); return h != skip })
			if err != nil || !slices.EqualFunc(got, want, sameJob) {
				t.Fatalf("%s: Claim(%v, %d, not %q) =\n%v, %v\nwant\n%v", where, now, max, skip, got, err, want)
			}
			if !slices.Equal(gotAsked, wantAsked) {
				t.Fatalf("%s: Claim asked hostOK about %v, want %v", where, gotAsked, wantAsked)
			}
			for _, j := range got {
				leases = append(leases, j.Lease())
			}
		case k < 40:
			name, max := hostNames[rng.IntN(len(hostNames))], rng.IntN(4)
			got, err := s.ClaimHost(ctx, name, now, max)
			want := m.claimHost(name, now, max)
			if err != nil || !slices.EqualFunc(got, want, sameJob) {
				t.Fatalf("%s: ClaimHost(%q, %v, %d) =\n%v, %v\nwant\n%v", where, name, now, max, got, err, want)
			}
			for _, j := range got {
				leases = append(leases, j.Lease())
			}
		case k < 50:
			max := rng.IntN(4)
			got, err := s.Ready(ctx, now, max)
			want := m.ready(now, max)
			// Next is exact only when every due host was looked at.
			if max > 0 && len(got.Hosts) == max {
				got.Next, want.Next = time.Time{}, time.Time{}
			}
			if err != nil || !slices.Equal(got.Hosts, want.Hosts) || !got.Next.Equal(want.Next) {
				t.Fatalf("%s: Ready(%v, %d) = %+v, %v, want %+v", where, now, max, got, err, want)
			}
		case k < 88:
			if len(leases) == 0 {
				continue
			}
			i := rng.IntN(len(leases))
			l := leases[i]
			if rng.IntN(20) == 0 {
				l.ID += 1000 // not found
			}
			settle(t, where, rng, s, m, l, now, at)
		case k < 93:
			id := int64(rng.IntN(len(m.jobs)+2)) - 1
			got, err := s.Get(ctx, id)
			var want frontier.Job
			var werr error = frontier.ErrNotFound
			if id >= 1 && id <= int64(len(m.jobs)) {
				want, werr = m.export(&m.jobs[id-1]), nil
			}
			if !sameJob(got, want) || !sameErr(err, werr) {
				t.Fatalf("%s: Get(%d) = %+v, %v, want %+v, %v", where, id, got, err, want, werr)
			}
		case k < 97:
			after, limit := int64(rng.IntN(len(m.jobs)+1)), 1+rng.IntN(5)
			got, err := s.Finished(ctx, after, limit)
			var want []frontier.Job
			for i := after; i < int64(len(m.jobs)) && len(want) < limit; i++ {
				if m.jobs[i].j.State.Final() {
					want = append(want, m.export(&m.jobs[i]))
				}
			}
			if err != nil || !slices.EqualFunc(got, want, sameJob) {
				t.Fatalf("%s: Finished(%d, %d) = %v, %v, want %v", where, after, limit, got, err, want)
			}
		case k < 98:
			got, err := s.Recover(ctx, now)
			if want := m.recover(now); err != nil || got != want {
				t.Fatalf("%s: Recover() = %d, %v, want %d", where, got, err, want)
			}
		default:
			got, err := s.Counts(ctx)
			want := m.counts()
			if err != nil || got.Queued != want.Queued || got.Leased != want.Leased || got.Parked != want.Parked ||
				got.Done != want.Done || got.Abandoned != want.Abandoned || !maps.Equal(got.AbandonedByReason, want.AbandonedByReason) {
				t.Fatalf("%s: Counts() = %+v, %v, want %+v", where, got, err, want)
			}
		}
	}
	// Finally every job, and the counts.
	for i := range m.jobs {
		got, err := s.Get(ctx, int64(i)+1)
		if want := m.export(&m.jobs[i]); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d, end: Get(%d) = %+v, %v, want %+v", seed, i+1, got, err, want)
		}
	}
	if got, want := counts(t, s), m.counts(); got.Total() != want.Total() || got.Queued != want.Queued ||
		got.Leased != want.Leased || got.Parked != want.Parked || got.Done != want.Done {
		t.Fatalf("seed %d, end: Counts() = %+v, want %+v", seed, got, want)
	}
}

// settle applies one random settling operation to both.
func settle(t *testing.T, where string, rng *rand.Rand, s *Store, m *model, l frontier.Lease, now time.Time, at func() time.Time) {
	t.Helper()
	mj, werr := m.leased(l)
	var gerr error
	var name string
	switch rng.IntN(6) {
	case 0:
		name = "Complete"
		r := frontier.Result{Status: 200, Bytes: rng.Int64N(1e6), Exit: "exit-1", Elapsed: time.Duration(rng.IntN(1e9)), Body: "b"}
		gerr = s.Complete(ctx, l, r)
		if werr == nil {
			mj.j.State, mj.due = frontier.Done, 0
			mj.j.Attempts++
			mj.j.Status = r.Status
			mj.j.Result = r
		}
	case 1:
		name = "Retry"
		due, charge, status := at(), rng.IntN(2) == 0, 500+rng.IntN(5)
		reason := fmt.Sprintf("http %d", status)
		gerr = s.Retry(ctx, l, due, charge, status, reason)
		if werr == nil {
			mj.j.State, mj.due, mj.j.Status, mj.j.Reason = frontier.Queued, enc(due), status, reason
			if charge {
				mj.j.Attempts++
			}
		}
	case 2:
		name = "Park"
		due := now.Add(time.Duration(rng.IntN(60)) * time.Second)
		gerr = s.Park(ctx, l, due, 429, "parked")
		if werr == nil {
			mj.j.State, mj.due, mj.j.Status, mj.j.Reason = frontier.Parked, enc(due), 429, "parked"
		}
	case 3:
		name = "Abandon"
		reason := []string{"http 404", "retries exhausted"}[rng.IntN(2)]
		gerr = s.Abandon(ctx, l, 404, reason)
		if werr == nil {
			mj.j.State, mj.due, mj.j.Status, mj.j.Reason = frontier.Abandoned, 0, 404, reason
			mj.j.Attempts++
			m.reasons[reason]++
		}
	case 4:
		name = "Release"
		gerr = s.Release(ctx, l)
		if werr == nil {
			mj.j.State, mj.due = frontier.Queued, immediately
		}
	default:
		name = "Extend"
		until := now.Add(time.Duration(rng.IntN(40)-5) * time.Second)
		gerr = s.Extend(ctx, l, until)
		if werr == nil {
			mj.due = enc(until)
		}
	}
	if !sameErr(gerr, werr) {
		t.Fatalf("%s: %s(%+v) = %v, want %v", where, name, l, gerr, werr)
	}
}

func sameJob(a, b frontier.Job) bool { return reflect.DeepEqual(a, b) }
