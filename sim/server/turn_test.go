package server

import (
	"testing"
	"time"
)

// TestKeyTurns: every second key gets a smaller budget, then block pages,
// each for a while; the other keys keep the site's policy throughout.
func TestKeyTurns(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	s, err := New(Config{
		Policy: Policy{Quota: 1, Window: time.Second, Burst: 1},
		Start:  t0,
		Turns: []KeyTurn{
			{At: 10 * time.Second, For: 10 * time.Second, Every: 2, Policy: Policy{Quota: 1, Window: 4 * time.Second, Burst: 1}},
			{At: 30 * time.Second, For: 5 * time.Second, Every: 2, Block: true},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Keys a (the first seen) and c are turned, b is not.
	counts := map[string]map[int]int{}
	for sec := range 40 {
		for _, ip := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"} {
			r := s.Handle(SimRequest{IP: ip, Now: t0.Add(time.Duration(sec) * time.Second)})
			phase := sec / 10
			if counts[ip] == nil {
				counts[ip] = map[int]int{}
			}
			counts[ip][phase*1000+r.Status]++
		}
	}
	for _, c := range []struct {
		ip          string
		phase, code int
		want        int
	}{
		{"10.0.0.2", 1, 200, 10}, {"10.0.0.2", 3, 200, 10}, // b: 1/s throughout
		{"10.0.0.1", 0, 200, 10}, {"10.0.0.1", 1, 200, 3}, {"10.0.0.1", 1, 429, 7}, // a: 1 per 4 s
		{"10.0.0.3", 1, 200, 3}, {"10.0.0.1", 2, 200, 10},
		{"10.0.0.1", 3, 403, 5}, {"10.0.0.1", 3, 200, 5}, {"10.0.0.3", 3, 403, 5},
	} {
		if got := counts[c.ip][c.phase*1000+c.code]; got != c.want {
			t.Errorf("%s in seconds %d-%d: %d answers %d, want %d", c.ip, 10*c.phase, 10*c.phase+9, got, c.code, c.want)
		}
	}
	if _, err := New(Config{Turns: []KeyTurn{{At: -1}}}); err == nil {
		t.Errorf("a turn at a negative time was accepted")
	}
	if _, err := New(Config{Tiers: []Policy{{}}, Turns: []KeyTurn{{}}}); err == nil {
		t.Errorf("tiers and turns together were accepted")
	}
}
