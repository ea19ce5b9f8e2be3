package monitor_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/monitor"
	"github.com/exitgate/exitgate/sim/run"
	"github.com/exitgate/exitgate/sim/server"
	"github.com/exitgate/exitgate/sim/strategy"
)

// simWatch drives a Monitor from a virtual run, as crawl drives it live.
type simWatch struct {
	m     *monitor.Monitor
	start time.Time
	// parkedAt is when Status first listed each host parked; maxParked
	// the most URLs the frontier held parked at a tick.
	parkedAt  map[string]time.Duration
	maxParked int
}

func (w *simWatch) Wrap(l fetch.Limiter) fetch.Limiter { return w.m.Gate(l) }

func (w *simWatch) Start(x run.Watched) {
	w.start = x.Start
	lim := x.Limiter.(*limit.Limiter)
	w.m.Attach(monitor.Sources{
		Limiter: lim, Tally: x.Tally, Counts: x.Frontier.Counts, Waiting: x.Core.Waiting,
		Park: x.Core.ParkHost, Quarantine: lim.Quarantine,
	})
}

func (w *simWatch) Tick(ctx context.Context, now time.Time) {
	w.m.Tick(ctx, now)
	st := w.m.Status(false)
	for _, p := range st.Parked {
		if w.parkedAt == nil {
			w.parkedAt = map[string]time.Duration{}
		}
		if _, ok := w.parkedAt[p.Host]; !ok {
			w.parkedAt[p.Host] = now.Sub(w.start)
		}
	}
	if st.Totals.Parked > w.maxParked {
		w.maxParked = st.Totals.Parked
	}
}

func scenario(t *testing.T, name string) server.Scenario {
	t.Helper()
	for _, sc := range server.HostileScenarios() {
		if sc.Name == name {
			return sc
		}
	}
	t.Fatalf("no scenario %q", name)
	return server.Scenario{}
}

// simulate runs the exitgate strategy on a hostile scenario in virtual
// time (for at most d) with a monitor ticked every 5 virtual seconds, and
// returns the run and the monitor.
func simulate(t *testing.T, name string, cfg monitor.Config, d time.Duration) (run.Result, *monitor.Monitor, *simWatch) {
	t.Helper()
	m, err := monitor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := &simWatch{m: m}
	spec, _ := strategy.ByName(strategy.Exitgate)
	res, err := run.Virtual(context.Background(), run.Config{Scenario: scenario(t, name), Strategy: spec, Watch: w, WatchEvery: 5 * time.Second, Duration: d})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res, m, w
}

func describe(w *simWatch, evs []monitor.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "  %8v %-20s %-8s %-16s %s\n", e.At.Sub(w.start), e.Kind, e.Host, e.Exit, e.Message)
	}
	return b.String()
}

// when is the time since the run's start of each event of kind, by host
// (or exit, for the reputation kinds).
func (w *simWatch) when(kind string) map[string][]time.Duration {
	out := map[string][]time.Duration{}
	for _, e := range w.m.Events() {
		if e.Kind != kind {
			continue
		}
		k := e.Host
		if e.Exit != "" {
			k = e.Exit
		}
		out[k] = append(out[k], e.At.Sub(w.start))
	}
	return out
}

// within fails t unless every one of keys had a first event of kind in
// [from, to] after the start, and nothing else had one at all.
func within(t *testing.T, w *simWatch, kind string, keys []string, from, to time.Duration) {
	t.Helper()
	got := w.when(kind)
	for _, k := range keys {
		if len(got[k]) == 0 || got[k][0] < from || got[k][0] > to {
			t.Errorf("%s on %s at %v, want one between %v and %v", kind, k, got[k], from, to)
		}
		delete(got, k)
	}
	if len(got) > 0 {
		t.Errorf("%s also on %v, want only %v", kind, got, keys)
	}
}

func none(t *testing.T, w *simWatch, kinds ...string) {
	t.Helper()
	for _, k := range kinds {
		if got := w.when(k); len(got) > 0 {
			t.Errorf("%s events %v, want none", k, got)
		}
	}
}

const at = server.HostileAt

// TestHostileLockout: one host of three allows one request an hour per IP
// for 15 minutes. The monitor alerts at 3 minutes over budget, opens its
// breaker at 5 (its URLs parked, none abandoned), probes after the 5-minute
// cool-down (still locked: open again for 10), and closes once the site
// has recovered; the other hosts never notice.
func TestHostileLockout(t *testing.T) {
	res, m, w := simulate(t, "hostile-lockout", monitor.Config{}, 35*time.Minute)
	t.Logf("events:\n%s", describe(w, m.Events()))
	within(t, w, monitor.KindOverBudget, []string{"h2.test"}, at+3*time.Minute, at+4*time.Minute)
	within(t, w, monitor.KindBreakerOpen, []string{"h2.test"}, at+5*time.Minute, at+6*time.Minute)
	within(t, w, monitor.KindFalling, []string{"h2.test"}, at, at+time.Minute)
	if p, ok := w.parkedAt["h2.test"]; !ok || p > at+6*time.Minute || w.maxParked == 0 {
		t.Errorf("h2.test listed parked at %v (parked URLs at most %d), want by %v with URLs parked", p, w.maxParked, at+6*time.Minute)
	}
	// The site recovers at 20 minutes; the breaker's next probe closes it.
	within(t, w, monitor.KindBreakerClosed, []string{"h2.test"}, at+server.HostileFor, at+server.HostileFor+10*time.Minute)
	if opens := w.when(monitor.KindBreakerOpen)["h2.test"]; len(opens) != 2 {
		t.Errorf("breaker opened at %v, want twice (the first probe meets the lockout)", opens)
	}
	none(t, w, monitor.KindSpike, monitor.KindExitFlagged, monitor.KindExitQuarantined)
	if res.Abandoned != 0 {
		t.Errorf("%d URLs abandoned (%v): the breaker parks, never abandons", res.Abandoned, res.Reasons)
	}
	for _, h := range res.Hosts {
		t.Logf("%s: %d requests, %d ok, %d 429s", h.Host, h.Requests, h.OK, h.Limited)
		if h.Host != "h2.test" && h.OK < 12000 {
			t.Errorf("%s had %d successes for 12000 URLs: the rest of the crawl must go on", h.Host, h.OK)
		}
	}
	for _, h := range m.Status(false).Hosts {
		if h.Breaker != "closed" || h.Alert {
			t.Errorf("at the end %s: breaker %s, alert %v; want closed, none", h.Host, h.Breaker, h.Alert)
		}
	}
}

// TestHostileLimitHalved: the per-IP limit halves for good. The learner
// follows it down with few 429s; the monitor warns of the falling
// equilibrium at once, and needs neither alert nor breaker.
func TestHostileLimitHalved(t *testing.T) {
	res, m, w := simulate(t, "hostile-limit-halved", monitor.Config{}, 0)
	t.Logf("events:\n%s", describe(w, m.Events()))
	within(t, w, monitor.KindFalling, []string{run.SiteHost}, at, at+time.Minute)
	none(t, w, monitor.KindOverBudget, monitor.KindBreakerOpen, monitor.KindExitFlagged)
	if !res.Finished || res.Abandoned != 0 {
		t.Errorf("finished %v, %d abandoned; want every URL done", res.Finished, res.Abandoned)
	}
}

var everyFourth = []string{"exit-01", "exit-05", "exit-09", "exit-13", "exit-17"}

// TestHostileReputation: every fourth IP gets a quarter of its peers'
// budget for 10 minutes. Its exits are flagged within a minute and
// quarantined for that host 2 minutes later, before their 429s open the
// host's breaker; when the quarantine is over (10 minutes here) and the
// IPs have their budget back, they are cleared. No other exit is flagged.
func TestHostileReputation(t *testing.T) {
	res, m, w := simulate(t, "hostile-reputation", monitor.Config{QuarantineFor: 10 * time.Minute}, 0)
	t.Logf("events:\n%s", describe(w, m.Events()))
	within(t, w, monitor.KindExitFlagged, everyFourth, at, at+time.Minute)
	within(t, w, monitor.KindExitQuarantined, everyFourth, at+2*time.Minute, at+3*time.Minute)
	none(t, w, monitor.KindBreakerOpen)
	within(t, w, monitor.KindExitCleared, everyFourth, at+12*time.Minute, at+20*time.Minute)
	for _, x := range m.Status(false).Exits {
		if x.Reputation != "good" {
			t.Errorf("exit %s at the end: %s %+v, want good", x.ID, x.Reputation, x.Hosts)
		}
	}
	if !res.Finished || res.Abandoned != 0 {
		t.Errorf("finished %v, %d abandoned; want every URL done", res.Finished, res.Abandoned)
	}
}

// TestHostileBanWave: every fourth IP gets block pages for 8 minutes. The
// limiter bans those lanes (10 minutes); the monitor shows each exit
// banned on the host within a minute and cleared when its ban is over,
// with no alert and no breaker.
func TestHostileBanWave(t *testing.T) {
	res, m, w := simulate(t, "hostile-ban-wave", monitor.Config{}, 0)
	t.Logf("events:\n%s", describe(w, m.Events()))
	within(t, w, monitor.KindExitBanned, everyFourth, at, at+time.Minute)
	within(t, w, monitor.KindExitCleared, everyFourth, at+10*time.Minute, at+12*time.Minute)
	none(t, w, monitor.KindOverBudget, monitor.KindBreakerOpen, monitor.KindExitFlagged)
	if !res.Finished || res.Abandoned != 0 {
		t.Errorf("finished %v, %d abandoned (%v); want every URL done", res.Finished, res.Abandoned, res.Reasons)
	}
}

// TestHostileAllHosts: four hosts lock out at once. The monitor reports a
// spike (our change, not the sites') within a minute, alerts and opens the
// breaker on each, and everything recovers after the lockout.
func TestHostileAllHosts(t *testing.T) {
	res, m, w := simulate(t, "hostile-all-hosts", monitor.Config{}, 35*time.Minute)
	t.Logf("events:\n%s", describe(w, m.Events()))
	hosts := []string{"h1.test", "h2.test", "h3.test", "h4.test"}
	within(t, w, monitor.KindSpike, []string{""}, at, at+time.Minute)
	within(t, w, monitor.KindOverBudget, hosts, at+3*time.Minute, at+4*time.Minute)
	within(t, w, monitor.KindBreakerOpen, hosts, at+5*time.Minute, at+6*time.Minute)
	within(t, w, monitor.KindBreakerClosed, hosts, at+server.HostileFor, at+server.HostileFor+10*time.Minute)
	within(t, w, monitor.KindSpikeOver, []string{""}, at+server.HostileFor, at+server.HostileFor+10*time.Minute)
	none(t, w, monitor.KindExitQuarantined)
	if res.Abandoned != 0 {
		t.Errorf("%d URLs abandoned (%v)", res.Abandoned, res.Reasons)
	}
	if st := m.Status(false); st.Spike {
		t.Errorf("still a spike at the end")
	}
}
