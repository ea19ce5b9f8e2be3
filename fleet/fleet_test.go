package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/exitgate/exitgate/internal/peertest"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/rendezvous"
)

func exits(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("exit-%02d", i))
	}
	return out
}

// redisClient starts a redis-server for the test and connects to it.
func redisClient(t *testing.T) *goredis.Client {
	r := peertest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// covered checks that the workers' owned sets are disjoint and cover all.
func covered(fs []*Fleet, all []string) error {
	seen := map[string]string{}
	for _, f := range fs {
		for _, e := range f.Owned() {
			if w, ok := seen[e]; ok {
				return fmt.Errorf("exit %s owned by %s and %s", e, w, f.ID())
			}
			seen[e] = f.ID()
		}
	}
	if len(seen) != len(all) {
		return fmt.Errorf("%d of %d exits owned", len(seen), len(all))
	}
	return nil
}

// TestFleet: three workers split ten exits; one dies and its exits move to
// the others within the lease TTL and a heartbeat.
func TestFleet(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	all := exits(10)
	ttl := 600 * time.Millisecond
	var fs []*Fleet
	var cancels []context.CancelFunc
	var dones []chan struct{}
	var wg sync.WaitGroup
	for i := range 3 {
		f, err := Join(ctx, rdb, Config{Crawl: "fleet", ID: fmt.Sprintf("w%d", i), Exits: all, TTL: ttl, Handover: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
		c, cancel := context.WithCancel(ctx)
		cancels = append(cancels, cancel)
		done := make(chan struct{})
		dones = append(dones, done)
		wg.Go(func() { defer close(done); f.Run(c) })
	}
	t.Cleanup(func() {
		for _, c := range cancels {
			c()
		}
		wg.Wait()
	})
	waitFor(t, 5*time.Second, func() error { return covered(fs, all) })
	// Kill w0: stop its heartbeats (its Run leaves on the way out, which
	// is undone below once it has returned).
	killed := time.Now()
	cancels[0]()
	<-dones[0]
	// Leave would release at once; undo it to model a kill -9: reassign its
	// exits' leases to it as if it still held them until they expire.
	for _, e := range rendezvous.Share(all, []string{"w0", "w1", "w2"}, "w0") {
		rdb.HSet(ctx, "eg:{fleet}:owners", e, "w0")
		rdb.HSet(ctx, "eg:{fleet}:until", e, killed.Add(ttl).UnixMilli())
	}
	rdb.ZAdd(ctx, "eg:{fleet}:members", goredis.Z{Score: float64(killed.Add(ttl).UnixMilli()), Member: "w0"})
	waitFor(t, 5*time.Second, func() error { return covered(fs[1:], all) })
	if d := time.Since(killed); d > 2*ttl+ttl/2 {
		t.Fatalf("exits of a dead worker moved after %v, want within the TTL %v and a heartbeat", d, ttl)
	}
	members, err := Status(ctx, rdb, "fleet")
	if err != nil || len(members) != 2 {
		t.Fatalf("Status = %d members, %v, want 2", len(members), err)
	}
}

// TestLeaderStays: the first worker leads every host; workers that join
// later do not take the lead (the search is not handed over at each join),
// and when the leader leaves the one longest present after it leads.
func TestLeaderStays(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	all := exits(10)
	var fs []*Fleet
	beat := func() {
		t.Helper()
		// Three rounds: an exit handed over is released at its giver's
		// beat and taken at its taker's next, which comes a round later
		// when the taker beats first (the leader, whose share is above the
		// others', rendezvous.Share, takes one from a later worker at a
		// join).
		for range 3 {
			for _, f := range fs {
				if err := f.Beat(ctx, time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	leaders := func() (ids []string) {
		for _, f := range fs {
			for _, h := range []string{"a.example", "b.example", "c.example", "d.example"} {
				if f.Leads(h) {
					ids = append(ids, f.ID()+":"+h)
				}
			}
		}
		return ids
	}
	for i := range 3 {
		f, err := Join(ctx, rdb, Config{Crawl: "lead", ID: fmt.Sprintf("w%d", 2-i), Exits: all, TTL: time.Minute, Handover: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
		time.Sleep(2 * time.Millisecond) // joined one after another
		beat()
		want := []string{"w2:a.example", "w2:b.example", "w2:c.example", "w2:d.example"}
		if got := leaders(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after %d joined: leaders %v, want the first to join, w2, on every host", i+1, got)
		}
	}
	if err := covered(fs, all); err != nil {
		t.Fatal(err)
	}
	fs[0].Leave(ctx)
	fs = fs[1:]
	beat()
	if got := leaders(); len(got) != 4 || got[0] != "w1:a.example" {
		t.Errorf("the leader left: leaders %v, want w1, the next to have joined, on every host", got)
	}
}

// TestDifferentExitsRefused: a worker whose exit list differs from the one
// the crawl's live workers split is refused (each splits by its own list,
// and exits only one side knew stayed unused); with no live worker, a new
// list becomes the crawl's.
func TestDifferentExitsRefused(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	a, err := Join(ctx, rdb, Config{Crawl: "pool", ID: "a", Exits: exits(4), TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Join(ctx, rdb, Config{Crawl: "pool", ID: "b", Exits: exits(4)[1:], TTL: time.Minute}); !errors.Is(err, ErrExitsDiffer) ||
		!strings.Contains(err.Error(), "3 exits here, 4 exits there") {
		t.Fatalf("a worker with 3 of the 4 exits: %v, want ErrExitsDiffer naming both sizes", err)
	}
	shuffled := exits(4)
	shuffled[0], shuffled[3] = shuffled[3], shuffled[0]
	c, err := Join(ctx, rdb, Config{Crawl: "pool", ID: "c", Exits: shuffled, TTL: time.Minute})
	if err != nil {
		t.Fatalf("the same exits in another order: %v", err)
	}
	a.Leave(ctx)
	c.Leave(ctx)
	if _, err := Join(ctx, rdb, Config{Crawl: "pool", ID: "d", Exits: exits(2), TTL: time.Minute}); err != nil {
		t.Fatalf("a new list once no worker is live: %v", err)
	}
}

// TestDifferentSettingsRefused: a worker whose shared settings differ from
// those of the crawl's live workers is refused, naming the setting and both
// values; the same values join; with no live worker, new ones are the
// crawl's.
func TestDifferentSettingsRefused(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	set := func(rate string) map[string]string {
		return map[string]string{"--host-rate": rate, "--ignore-robots": "false"}
	}
	a, err := Join(ctx, rdb, Config{Crawl: "settings", ID: "a", Exits: exits(4), TTL: time.Minute, Settings: set("3/s")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Join(ctx, rdb, Config{Crawl: "settings", ID: "b", Exits: exits(4), TTL: time.Minute, Settings: set("0")})
	if !errors.Is(err, ErrSettingsDiffer) || !strings.Contains(err.Error(), "--host-rate is 0 here, 3/s on the live workers") {
		t.Fatalf("a worker without the ceiling: %v, want ErrSettingsDiffer naming --host-rate and both values", err)
	}
	c, err := Join(ctx, rdb, Config{Crawl: "settings", ID: "c", Exits: exits(4), TTL: time.Minute, Settings: set("3/s")})
	if err != nil {
		t.Fatalf("the same settings: %v", err)
	}
	a.Leave(ctx)
	c.Leave(ctx)
	if _, err := Join(ctx, rdb, Config{Crawl: "settings", ID: "d", Exits: exits(4), TTL: time.Minute, Settings: set("5/s")}); err != nil {
		t.Fatalf("new settings once no worker is live: %v", err)
	}
}

// TestIDInUse: a worker given the ID of a live worker that heartbeats is
// refused; one given the ID of a worker that stopped heartbeating (killed,
// its lease not run out yet) takes it over.
func TestIDInUse(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	const ttl = 600 * time.Millisecond
	a, err := Join(ctx, rdb, Config{Crawl: "ids", ID: "same", Exits: exits(4), TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { a.Run(runCtx); close(done) }()
	if _, err := Join(ctx, rdb, Config{Crawl: "ids", ID: "same", Exits: exits(4), TTL: ttl}); !errors.Is(err, ErrIDInUse) {
		t.Fatalf("a second worker with a live worker's ID: %v, want ErrIDInUse", err)
	}
	// Check says so too, before the worker writes anything (refused at
	// Join only, it had written its results and journal in --out).
	if err := Check(ctx, rdb, Config{Crawl: "ids", ID: "same", Exits: exits(4), TTL: ttl}); !errors.Is(err, ErrIDInUse) {
		t.Fatalf("Check of a live worker's ID: %v, want ErrIDInUse", err)
	}
	// The first one dies without leaving: its entry stays until its
	// lease runs out, but no longer moves.
	stop()
	<-done
	if err := a.Beat(ctx, time.Now()); err != nil { // a last heartbeat: its entry live again, then silent
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := Join(ctx, rdb, Config{Crawl: "ids", ID: "same", Exits: exits(4), TTL: ttl}); err != nil {
		t.Fatalf("a worker restarted with a dead worker's ID: %v", err)
	}
	if d := time.Since(start); d > ttl {
		t.Errorf("taking over the dead worker's ID took %v, want under the TTL %v", d, ttl)
	}
}

// TestLeaderSameMillisecond: workers that join within one millisecond rank
// in the order they joined, not by name: the first keeps the lead.
func TestLeaderSameMillisecond(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	all := exits(8)
	now := time.Now()
	var fs []*Fleet
	for _, id := range []string{"w6", "w1", "w0"} {
		f, err := join(ctx, rdb, Config{Crawl: "tie", ID: id, Exits: all, TTL: time.Minute, Handover: time.Millisecond}, now)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	for _, f := range fs {
		if err := f.Beat(ctx, now); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range fs {
		if got, want := f.Leads("a.example"), f.ID() == "w6"; got != want {
			t.Errorf("%s leads: %v, want %v (w6 joined first, in the same millisecond as the others)", f.ID(), got, want)
		}
	}
}

// TestMoreWorkersThanExits: the extra workers own nothing and stand by.
func TestMoreWorkersThanExits(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	all := exits(2)
	var fs []*Fleet
	for i := range 4 {
		f, err := Join(ctx, rdb, Config{Crawl: "many", ID: fmt.Sprintf("w%d", i), Exits: all, TTL: time.Second, Handover: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	waitFor(t, 3*time.Second, func() error {
		for _, f := range fs {
			if err := f.Beat(ctx, time.Now()); err != nil {
				return err
			}
		}
		return covered(fs, all)
	})
	idle := 0
	for _, f := range fs {
		if len(f.Owned()) == 0 {
			idle++
		}
	}
	if idle < 2 {
		t.Fatalf("%d of 4 workers own no exit of 2, want at least 2", idle)
	}
}

func waitFor(t *testing.T, d time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %v", d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNextBeat: a worker beats every TTL/3, but as soon as a handover of
// its own ends, and often while exits of its share are still held by their
// previous owner: a moving exit is idle from its old owner's drop to its
// new owner's take.
func TestNextBeat(t *testing.T) {
	now := time.Now()
	f := &Fleet{cfg: Config{TTL: 6 * time.Second}, leaving: map[string]time.Time{}}
	if d := f.nextBeat(now); d != 2*time.Second {
		t.Fatalf("nothing moving: next beat in %v, want TTL/3", d)
	}
	f.leaving["e1"] = now.Add(700 * time.Millisecond)
	if d := f.nextBeat(now); d != 700*time.Millisecond {
		t.Fatalf("a handover ending in 700ms: next beat in %v, want 700ms", d)
	}
	f.waiting = true
	if d := f.nextBeat(now); d != moveBeat {
		t.Fatalf("waiting for exits: next beat in %v, want %v", d, moveBeat)
	}
}

// TestOutageNoTakeover: Redis away for longer than a lease (every
// membership and exit lease runs out meanwhile, while each worker keeps
// sending through its exits). The first worker back keeps only its own
// exits until the others are back too (a lease), rather than taking theirs
// while they still use them, and does not take the lead; a worker that
// does not come back has its exits taken after that, and the lead stays
// with the worker that had it.
func TestOutageNoTakeover(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	all := exits(6)
	ttl := time.Second
	var fs []*Fleet
	for _, id := range []string{"a", "b", "c"} {
		f, err := Join(ctx, rdb, Config{Crawl: "outage", ID: id, Exits: all, TTL: ttl, Handover: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	a, b, c := fs[0], fs[1], fs[2]
	t0 := time.Now()
	for i := range 4 { // the handovers of the joins done
		for _, f := range fs {
			if err := f.Beat(ctx, t0.Add(time.Duration(i)*200*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
		}
	}
	t0 = t0.Add(600 * time.Millisecond)
	if err := covered(fs, all); err != nil {
		t.Fatalf("before the outage: %v", err)
	}
	if !a.Leads("h") || b.Leads("h") {
		t.Fatalf("before the outage: a leads %v, b leads %v; want a, the first to join", a.Leads("h"), b.Leads("h"))
	}
	before := map[string][]string{"a": a.Owned(), "b": b.Owned(), "c": c.Owned()}

	back := t0.Add(5 * ttl) // Redis back after five leases; c died meanwhile
	if err := b.Beat(ctx, back); err != nil {
		t.Fatal(err)
	}
	for _, e := range b.Owned() {
		if !slices.Contains(before["b"], e) {
			t.Fatalf("the first worker back took %s, which it did not hold (owned %v, held %v before): a and c may still send through it", e, b.Owned(), before["b"])
		}
	}
	if b.Leads("h") {
		t.Fatal("the first worker back took the lead: every host's search starts again on its exits")
	}
	if err := a.Beat(ctx, back.Add(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if got := a.Owned(); !slices.Equal(got, before["a"]) {
		t.Fatalf("the second worker back owns %v, want its own %v", got, before["a"])
	}
	// A lease later, c has not come back: a and b share its exits, and a
	// leads as before. (They beat every third of a lease, as Run does.)
	for at := back.Add(600 * time.Millisecond); at.Before(back.Add(2 * ttl)); at = at.Add(ttl / 3) {
		for _, f := range []*Fleet{b, a} {
			if err := f.Beat(ctx, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := covered([]*Fleet{a, b}, all); err != nil {
		t.Fatalf("a lease after the outage, c gone: %v (a %v, b %v)", err, a.Owned(), b.Owned())
	}
	if !a.Leads("h") || b.Leads("h") {
		t.Fatalf("a lease after the outage: a leads %v, b leads %v; want a, as before it", a.Leads("h"), b.Leads("h"))
	}
}

// TestSaveLearnedKeepsTheLeadersRecord: a worker whose lanes only wait on a
// host (no rate learned: another worker leads it) stores nothing under the
// host's name, where its entry overwrote the record the leader keeps.
func TestSaveLearnedKeepsTheLeadersRecord(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	now := time.Now()
	leader := limit.LearnedHost{Host: "h", Phase: "settled", LaneRate: 2}
	raw, _ := json.Marshal(leader)
	key := "eg:{fleet}:learned"
	if err := rdb.HSet(ctx, key, "h", string(raw)).Err(); err != nil {
		t.Fatal(err)
	}
	waits := limit.Learned{Saved: now, Hosts: []limit.LearnedHost{{Host: "h", Phase: "waiting",
		Waits: []limit.LearnedWait{{Exit: "exit-00", Until: now.Add(time.Minute)}}}}}
	if !waits.Hosts[0].OnlyWaits() {
		t.Fatal(`a "waiting" entry is not OnlyWaits`)
	}
	f, err := Join(ctx, rdb, Config{Crawl: "fleet", ID: "w1", Exits: exits(2), TTL: time.Second,
		Learned: func(time.Time) limit.Learned { return waits }})
	if err != nil {
		t.Fatal(err)
	}
	f.saveLearned(ctx, now)
	got, err := rdb.HGet(ctx, key, "h").Result()
	if err != nil || got != string(raw) {
		t.Errorf("the leader's record after a follower saved its waits = %q, %v; want it as the leader wrote it", got, err)
	}
}

// TestLapsedWorkerRechecked: a worker whose membership lapsed (stopped past
// its TTL) comes back to live workers that joined meanwhile with other
// settings or another exit list: it is refused as Join refuses, gives up
// its exits and says so (OnRefused); it rejoined without a word, one
// worker sending with no ceiling beside another held to --host-rate 5/s.
func TestLapsedWorkerRechecked(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	t0 := time.Now()
	for _, tc := range []struct {
		name   string
		exitsB []string
		rateB  string
		want   error
	}{{"settings", exits(4), "5/s", ErrSettingsDiffer}, {"exits", exits(3), "0", ErrExitsDiffer}} {
		crawl := "lapsed-" + tc.name
		var refused error
		var lastOwned []string
		a, err := join(ctx, rdb, Config{Crawl: crawl, ID: "a", Exits: exits(4), TTL: 6 * time.Second,
			Settings:  map[string]string{"--host-rate": "0"},
			OnExits:   func(owned []string, _ int) { lastOwned = owned },
			OnRefused: func(err error) { refused = err }}, t0)
		if err != nil {
			t.Fatal(err)
		}
		// a stops for 10 s; b joins meanwhile, alone, and sets the crawl's.
		b, err := join(ctx, rdb, Config{Crawl: crawl, ID: "b", Exits: tc.exitsB, TTL: 6 * time.Second,
			Settings: map[string]string{"--host-rate": tc.rateB}}, t0.Add(10*time.Second))
		if err != nil {
			t.Fatalf("%s: b joining while a is lapsed: %v", tc.name, err)
		}
		err = a.Beat(ctx, t0.Add(11*time.Second))
		if !errors.Is(err, tc.want) || !errors.Is(refused, tc.want) {
			t.Errorf("%s: a back after its lapse: Beat %v, OnRefused %v; want %v", tc.name, err, refused, tc.want)
		}
		if len(a.Owned()) != 0 || lastOwned != nil {
			t.Errorf("%s: a refused still owns %v (OnExits said %v)", tc.name, a.Owned(), lastOwned)
		}
		if err := a.Beat(ctx, t0.Add(12*time.Second)); !errors.Is(err, tc.want) {
			t.Errorf("%s: a's next Beat = %v, want the refusal again", tc.name, err)
		}
		if err := b.Beat(ctx, t0.Add(12*time.Second)); err != nil || len(b.Owned()) != len(tc.exitsB) || b.Workers() != 1 {
			t.Errorf("%s: b after a gave up: %v, owns %v of %d exits, %d workers; want all, alone", tc.name, err, b.Owned(), len(tc.exitsB), b.Workers())
		}
	}
}

// TestRecordRestoredAfterLoss: when Redis loses the crawl's record of its
// exit list and settings (restarted empty, flushed) while a worker lives,
// the worker's next beat writes it again, and a joiner with other
// settings or another list is refused as before the loss (it was let in,
// its --host-rate and list becoming the crawl's). A worker that finds
// another's record at its beat (a joiner came in first) stops.
func TestRecordRestoredAfterLoss(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	t0 := time.Now()
	set := func(rate string) map[string]string { return map[string]string{"--host-rate": rate} }
	a, err := join(ctx, rdb, Config{Crawl: "lost", ID: "a", Exits: exits(4), TTL: 6 * time.Second, Settings: set("8/s")}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.FlushAll(ctx).Err(); err != nil { // Redis restarted without persistence
		t.Fatal(err)
	}
	if err := a.Beat(ctx, t0.Add(2*time.Second)); err != nil {
		t.Fatalf("a's beat after the loss: %v", err)
	}
	if _, err := join(ctx, rdb, Config{Crawl: "lost", ID: "b", Exits: exits(4), TTL: 6 * time.Second, Settings: set("1/s")}, t0.Add(3*time.Second)); !errors.Is(err, ErrSettingsDiffer) {
		t.Errorf("a joiner with another --host-rate after the loss: %v, want ErrSettingsDiffer", err)
	}
	if _, err := join(ctx, rdb, Config{Crawl: "lost", ID: "c", Exits: exits(5), TTL: 6 * time.Second, Settings: set("8/s")}, t0.Add(3*time.Second)); !errors.Is(err, ErrExitsDiffer) {
		t.Errorf("a joiner with another list after the loss: %v, want ErrExitsDiffer", err)
	}

	// Lost again, and a joiner comes in before a's beat: a stops.
	var refused error
	a.cfg.OnRefused = func(err error) { refused = err }
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := join(ctx, rdb, Config{Crawl: "lost", ID: "d", Exits: exits(4), TTL: 6 * time.Second, Settings: set("1/s")}, t0.Add(4*time.Second)); err != nil {
		t.Fatalf("the first joiner after the loss: %v", err)
	}
	if err := a.Beat(ctx, t0.Add(5*time.Second)); !errors.Is(err, ErrSettingsDiffer) || !errors.Is(refused, ErrSettingsDiffer) || len(a.Owned()) != 0 {
		t.Errorf("a's beat beside d's record: %v (OnRefused %v), owns %v; want ErrSettingsDiffer and nothing", err, refused, a.Owned())
	}
}

// TestExpectingWhileRejoining: a worker back from a lapse whose exits
// another took meanwhile expects them (Expecting) until it has its share
// again, not only at its first beat: its second beat, holding nothing,
// said it expected none, and a gateway answered 503 for a whole TTL.
func TestExpectingWhileRejoining(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	t0 := time.Now()
	const ttl = 6 * time.Second
	cfg := func(id string) Config { return Config{Crawl: "rejoin", ID: id, Exits: exits(4), TTL: ttl, Even: true} }
	a, err := join(ctx, rdb, cfg("a"), t0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := join(ctx, rdb, cfg("b"), t0.Add(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{time.Second, 2 * time.Second} { // the handover done
		a.Beat(ctx, t0.Add(at))
		b.Beat(ctx, t0.Add(at))
	}
	if len(a.Owned()) != 2 || len(b.Owned()) != 2 {
		t.Fatalf("shares %v and %v, want two each", a.Owned(), b.Owned())
	}
	// a stops for 8 s: b takes its exits once a's lease ran out.
	for at := 3 * time.Second; at <= 9*time.Second; at += time.Second {
		b.Beat(ctx, t0.Add(at))
	}
	b.Beat(ctx, t0.Add(9500*time.Millisecond))
	if len(b.Owned()) != 4 {
		t.Fatalf("b owns %v while a is away, want all four", b.Owned())
	}
	// a is back: it holds nothing it held, yet its share comes its way.
	for _, at := range []time.Duration{10 * time.Second, 10200 * time.Millisecond, 10400 * time.Millisecond} {
		if err := a.Beat(ctx, t0.Add(at)); err != nil {
			t.Fatal(err)
		}
		if !a.Expecting() {
			t.Errorf("a back from its lapse, beat at %v: owns %v and expects nothing, want its share expected", at, a.Owned())
		}
	}
}
