package rlheader

import (
	"fmt"
	"net/http"
	"reflect"
	"runtime"
	"testing"
	"time"
)

// TestScratchReuse: a parse's arrays are reused by the next (scratchPool);
// whatever was parsed before, a head parses as it did the first time.
func TestScratchReuse(t *testing.T) {
	hostile := http.Header{}
	for i := range 100 {
		hostile.Set(fmt.Sprintf("X-RateLimit-Limit-P%d", i), "10")
		hostile.Set(fmt.Sprintf("X-RateLimit-Remaining-P%d", i), "0")
	}
	heads := []http.Header{
		head429(),
		headPlain200(),
		{"X-Ratelimit-Limit": {"100, 100;w=10, 1000;w=3600"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"7"}},
		{"X-Ratelimit-Userlimit": {"30"}, "X-Ratelimit-Userremaining": {"-1"}, "X-Ratelimit-Userreset": {"1774540830000"}},
		{"X-Ratelimit-Limit-Short": {"3"}, "X-Ratelimit-Remaining-Short": {"0"}, "X-Ratelimit-Reset-Short": {"1"},
			"X-Ratelimit-Limit-Long": {"100"}, "X-Ratelimit-Remaining-Long": {"97"}, "X-Ratelimit-Reset-Long": {"60"}, "Retry-After-Short": {"1"}},
		{"Ratelimit-Policy": {`"a";q=10;w=1, "b";q=100;w=60`}, "Ratelimit": {`"a";r=0;t=1, "b";r=50;t=30`}},
		{"X-Shopify-Shop-Api-Call-Limit": {"39/40"}},
		hostile,
		{"X-Ratelimit-Limit": {"ten"}, "Retry-After": {"soon"}},
	}
	at := time.Date(2026, 3, 26, 15, 59, 30, 0, time.UTC)
	first := make([]Signal, len(heads))
	for i, h := range heads {
		first[i] = Parse(h, at, Profile{})
	}
	for round := range 3 {
		for k := range heads {
			i := (len(heads) - 1 - k + round) % len(heads) // another order each round
			if got := Parse(heads[i], at, Profile{}); !reflect.DeepEqual(got, first[i]) {
				t.Fatalf("round %d: head %d parsed after others:\n%+v\nfirst:\n%+v", round, i, got, first[i])
			}
		}
	}
}

// TestHostileFieldsLinear: a head of 20,000 bad RateLimit items, or of
// 20,000 policies, parses in linear time and memory: each bad item joined
// the whole field again (3.5 GB and 5.7 s for a 400-KB head), each policy
// was matched against all before it, and every one was listed.
func TestHostileFieldsLinear(t *testing.T) {
	var bad, many []string
	for i := range 20000 {
		bad = append(bad, `"p";t=1`) // no r: each item is ignored
		many = append(many, fmt.Sprintf(`"p%d";r=1`, i))
	}
	for name, h := range map[string]http.Header{
		"bad items": {"Ratelimit": bad},
		"policies":  {"Ratelimit": many},
		"declared":  {"Ratelimit-Policy": many},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		s := Parse(h, time.Now(), Profile{})
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 200<<20 || took > 2*time.Second {
			t.Errorf("%s: %v and %d MB to parse, want linear (a few MB)", name, took, alloc>>20)
		}
		if len(s.Ignored) > maxIgnored+1 || len(s.Policies) > maxGroups {
			t.Errorf("%s: %d ignored listed, %d policies; want at most %d and %d", name, len(s.Ignored), len(s.Policies), maxIgnored+1, maxGroups)
		}
	}
}
