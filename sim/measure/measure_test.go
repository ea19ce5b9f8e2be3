package measure

import (
	"fmt"
	"math"
	"testing"
	"time"
)

var t0 = time.Unix(1_800_000_000, 0)

// paced returns hits of key at rate per second from from to to (offsets),
// all with status.
func paced(key string, rate float64, from, to time.Duration, status int) []Hit {
	var hs []Hit
	iv := time.Duration(float64(time.Second) / rate)
	for t := from; t < to; t += iv {
		hs = append(hs, Hit{At: t0.Add(t), Key: key, Status: status})
	}
	return hs
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestSteadyAtLimit(t *testing.T) {
	var hits []Hit
	for i := range 4 {
		hits = append(hits, paced(fmt.Sprintf("k%d", i), 0.97, 0, 120*time.Second, 200)...)
	}
	f, err := Compute(hits, Config{Start: t0, End: t0.Add(120 * time.Second), Rate: 1, Keys: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !near(f.Utilization, 0.97, 0.01) || !near(f.UtilizationAfter30, 0.97, 0.01) || !near(f.UtilizationAfter60, 0.97, 0.02) {
		t.Errorf("utilization = %.3f / %.3f / %.3f, want 0.97 each", f.Utilization, f.UtilizationAfter30, f.UtilizationAfter60)
	}
	if f.Ratio429 != 0 || f.SettleSeconds != 0 || f.LearningLimited != 0 {
		t.Errorf("ratio %v settle %v learning %v, want 0, 0, 0", f.Ratio429, f.SettleSeconds, f.LearningLimited)
	}
	if f.Window != 10 {
		t.Errorf("Window = %v, want 10 (10 requests at 1/s)", f.Window)
	}
}

// A key that ramps up for 40 s (at half its limit, drawing 429s) settles
// when its window first holds the full rate.
func TestSettleAfterRamp(t *testing.T) {
	var hits []Hit
	for i := range 3 {
		k := fmt.Sprintf("k%d", i)
		hits = append(hits, paced(k, 0.5, 0, 40*time.Second, 200)...)
		hits = append(hits, Hit{At: t0.Add(20 * time.Second), Key: k, Status: 429})
		hits = append(hits, paced(k, 0.97, 40*time.Second, 120*time.Second, 200)...)
	}
	// One 429 after settling is not a learning 429.
	hits = append(hits, Hit{At: t0.Add(100 * time.Second), Key: "k0", Status: 429})
	f, err := Compute(hits, Config{Start: t0, End: t0.Add(120 * time.Second), Rate: 1})
	if err != nil {
		t.Fatal(err)
	}
	if f.SettleSeconds < 35 || f.SettleSeconds > 41 {
		t.Errorf("SettleSeconds = %v, want about 40", f.SettleSeconds)
	}
	if f.LearningLimited != 3 || f.Limited != 4 {
		t.Errorf("LearningLimited, Limited = %d, %d; want 3, 4", f.LearningLimited, f.Limited)
	}
	if f.Keys != 3 {
		t.Errorf("Keys = %d, want the 3 seen", f.Keys)
	}
}

// A key that never reached the server keeps the run unsettled and counts in
// what was allowed.
func TestMissingKey(t *testing.T) {
	hits := paced("k0", 1, 0, 60*time.Second, 200)
	f, err := Compute(hits, Config{Start: t0, End: t0.Add(60 * time.Second), Rate: 1, Keys: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !near(f.Utilization, 0.5, 0.01) || f.SettleSeconds != -1 {
		t.Errorf("Utilization %.3f settle %v, want 0.5 and -1", f.Utilization, f.SettleSeconds)
	}
}

// Hits outside the run are ignored; a limit that changes is honoured.
func TestAllowedAndBounds(t *testing.T) {
	hits := paced("k", 2, 0, 100*time.Second, 200)
	hits = append(hits, Hit{At: t0.Add(-time.Second), Key: "k", Status: 429}, Hit{At: t0.Add(200 * time.Second), Key: "k", Status: 429})
	allowed := func(from, to time.Duration) float64 {
		// 1/s for the first 50 s, 2/s after.
		cut := 50 * time.Second
		a := func(d time.Duration) float64 {
			if d <= cut {
				return d.Seconds()
			}
			return cut.Seconds() + 2*(d-cut).Seconds()
		}
		return a(to) - a(from)
	}
	f, err := Compute(hits, Config{Start: t0, End: t0.Add(100 * time.Second), Allowed: allowed})
	if err != nil {
		t.Fatal(err)
	}
	if f.Limited != 0 || f.Requests != 200 {
		t.Errorf("Requests, Limited = %d, %d; want 200, 0", f.Requests, f.Limited)
	}
	if !near(f.Utilization, 200.0/150, 0.01) || !near(f.UtilizationAfter60, 1, 0.01) {
		t.Errorf("utilization %.3f / after 60 s %.3f, want 1.333 and 1", f.Utilization, f.UtilizationAfter60)
	}
}

func TestErrors(t *testing.T) {
	if _, err := Compute(nil, Config{Start: t0, End: t0, Rate: 1}); err != ErrSpan {
		t.Errorf("empty span: err = %v, want ErrSpan", err)
	}
	if _, err := Compute(nil, Config{Start: t0, End: t0.Add(time.Second)}); err != ErrRate {
		t.Errorf("no rate: err = %v, want ErrRate", err)
	}
}
