package fetch

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/pool"
)

// fakeRT only names itself: Route is what is under test, not sending.
type fakeRT struct{ name string }

func (f *fakeRT) RoundTrip(*http.Request) (*http.Response, error) { return nil, nil }

func TestExitSetKeysOnResolvedIP(t *testing.T) {
	id, err := pool.NewIdentity(pool.IdentityConfig{Header: "X-Exit-IP"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var published [][]string
	onSet := func(es []limit.Exit) {
		mu.Lock()
		defer mu.Unlock()
		var keys []string
		for _, e := range es {
			keys = append(keys, e.ID)
		}
		published = append(published, keys)
	}
	a, b, c := &fakeRT{"a"}, &fakeRT{"b"}, &fakeRT{"c"}
	set := NewExitSet([]Member{{ID: "gw#session-1", Transport: a}, {ID: "gw#session-2", Transport: b}, {ID: "gw#session-3", Transport: c}}, id, onSet)
	if got := set.Keys(); !slices.Equal(got, []string{"gw#session-1", "gw#session-2", "gw#session-3"}) {
		t.Fatalf("keys before any IP is known = %v, want the member IDs", got)
	}

	// Sessions 1 and 2 turn out to share an IP: one lane key, two members.
	set.Observe("gw#session-1", http.Header{"X-Exit-Ip": {"203.0.113.7"}})
	set.Observe("gw#session-2", http.Header{"X-Exit-Ip": {"203.0.113.7"}})
	if got := set.Keys(); !slices.Equal(got, []string{"203.0.113.7", "gw#session-3"}) {
		t.Fatalf("keys = %v, want the shared IP and session 3", got)
	}
	seen := map[string]bool{}
	for range 4 {
		m, ok := set.Route("203.0.113.7")
		if !ok {
			t.Fatal("Route(shared IP) found nothing")
		}
		seen[m.ID] = true
	}
	if !seen["gw#session-1"] || !seen["gw#session-2"] {
		t.Errorf("Route over a shared key used %v, want both members in turn", seen)
	}

	// Session 2's IP changes under it: it moves to its new IP's lanes.
	set.Observe("gw#session-2", http.Header{"X-Exit-Ip": {"198.51.100.9"}})
	if got := set.Keys(); !slices.Equal(got, []string{"198.51.100.9", "203.0.113.7", "gw#session-3"}) {
		t.Errorf("keys after session 2 moved = %v", got)
	}
	if m, _ := set.Route("198.51.100.9"); m.Transport != b {
		t.Errorf("Route(new IP) = %v, want session 2's transport", m.ID)
	}
	// The same IP again, and garbage, change nothing.
	n := len(published)
	set.Observe("gw#session-2", http.Header{"X-Exit-Ip": {"198.51.100.9"}})
	set.Observe("gw#session-3", http.Header{"X-Exit-Ip": {"not an ip"}})
	if len(published) != n {
		t.Errorf("limiter re-told its exits %d times for no change", len(published)-n)
	}
	if _, ok := set.Route("nope"); ok {
		t.Errorf("Route(unknown key) found a member")
	}
}

// TestNilRoundTripperIsNoRoute: a member without a RoundTripper is no
// route: a request through it fails with ErrNoExit; it panicked.
func TestNilRoundTripperIsNoRoute(t *testing.T) {
	set := ExitMap(map[string]http.RoundTripper{"a": nil})
	if _, ok := set.Route("a"); ok {
		t.Fatalf("Route to a member with a nil RoundTripper: ok, want no route")
	}
	lim, err := limit.New(limit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	lim.SetExits([]limit.Exit{{ID: "a"}})
	tr := &Transport{Limiter: lim, Exits: set}
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:9/x", nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, ErrNoExit) {
		t.Errorf("RoundTrip through it: %v, want ErrNoExit", err)
	}
}

// TestTransportUntoldLimiterSaysSo: a Transport whose Limiter was never
// given the ExitSet's exits says how to give them; it said only "limit: no
// exits in the pool", with exits in the set.
func TestTransportUntoldLimiterSaysSo(t *testing.T) {
	lim, err := limit.New(limit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tr := &Transport{Limiter: lim, Exits: ExitMap(map[string]http.RoundTripper{"a": http.DefaultTransport})}
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:9/x", nil)
	_, err = tr.RoundTrip(req)
	if !errors.Is(err, limit.ErrNoExits) || !strings.Contains(err.Error(), "lim.SetExits") {
		t.Errorf("RoundTrip with the Limiter untold: %v, want ErrNoExits saying how to tell it", err)
	}
}
