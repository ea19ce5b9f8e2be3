// Package measure turns what a rate-limited server logged (one line per
// request: when, which client key, which status) into the figures the bench
// reports, so that a real server's access log and a simulated server's
// record are judged by one definition:
//
//   - utilization: successes over what the server allows the keys in the
//     same span (whole run, and after the first 30 s and 60 s);
//   - the 429 ratio: 429s over all requests the server saw;
//   - time to settle: the first moment after which every key's success rate,
//     over a window holding 10 allowed requests (at least 10 s), stays within
//     90-100% of its limit until the end (in whole requests: at least 9 and at
//     most 11 of 10 allowed, since even pacing at the limit fits 10 or 11 in a
//     window depending on phase);
//   - 429s while learning: the 429s before that moment (all of them when the
//     run never settles).
//
// It is pure: no clock, no I/O. Safe for concurrent use (it holds no state).
package measure

import (
	"errors"
	"math"
	"slices"
	"time"
)

// Hit is one request as the server saw it.
type Hit struct {
	At     time.Time
	Key    string // what the server's limit is keyed on: the client IP for a per-IP limit
	Status int
}

// Config says what the hits are measured against.
type Config struct {
	// Start and End bound the run; hits outside are ignored. Required.
	Start, End time.Time
	// Keys is how many keys the client had (exits): keys that never reached
	// the server still count in what was allowed. Default: the keys seen.
	Keys int
	// Rate is one key's sustained allowed rate in requests per second (30
	// per 10 s is 3). Required unless Allowed is set.
	Rate float64
	// Allowed, when set, is how many successes one key may have between two
	// offsets from Start (for limits that change during the run). Default
	// Rate times the span.
	Allowed func(from, to time.Duration) float64
	// Bucket is the timeline resolution. Default 1 s.
	Bucket time.Duration
}

// Figures are one run's measures. Ratios are fractions (0.95, not 95).
type Figures struct {
	Seconds  float64 `json:"seconds"`
	Keys     int     `json:"keys"`
	Requests int     `json:"requests"`
	OK       int     `json:"ok"`
	Limited  int     `json:"responses_429"`
	Other    int     `json:"responses_other"`
	// Utilization is successes over what Keys keys were allowed, over the
	// whole run; UtilizationAfter30 and UtilizationAfter60 leave out the
	// first 30 and 60 seconds (0 when the run is not longer).
	Utilization        float64 `json:"utilization_whole_run"`
	UtilizationAfter30 float64 `json:"utilization_after_30s"`
	UtilizationAfter60 float64 `json:"utilization_after_60s"`
	// Ratio429 is 429s over all requests; Ratio429After60 leaves out the
	// first 60 seconds.
	Ratio429        float64 `json:"ratio_429"`
	Ratio429After60 float64 `json:"ratio_429_after_60s"`
	// SettleSeconds is the time to settle, -1 when the run never settled.
	SettleSeconds float64 `json:"settle_seconds"`
	// LearningLimited is the number of 429s before the run settled.
	LearningLimited int `json:"learning_429s"`
	// Window is the span, in seconds, over which a key's rate is judged
	// for settling.
	Window float64 `json:"settle_window_seconds"`
	// Timeline counts successes and 429s per Bucket from Start.
	Timeline []Sample     `json:"timeline,omitempty"`
	Bucket   float64      `json:"bucket_seconds"`
	PerKey   []KeyFigures `json:"per_key,omitempty"`
}

// Sample is one timeline bucket.
type Sample struct {
	OK      int `json:"ok"`
	Limited int `json:"limited"`
}

// KeyFigures are one key's counts.
type KeyFigures struct {
	Key         string  `json:"key"`
	OK          int     `json:"ok"`
	Limited     int     `json:"responses_429"`
	Utilization float64 `json:"utilization_whole_run"`
}

// Errors Compute returns.
var (
	ErrSpan = errors.New("measure: End must be after Start")
	ErrRate = errors.New("measure: a positive Rate or an Allowed func is required")
)

// settleLow is the share of a key's limit a settled key reaches at least;
// settleRequests is how many allowed requests the judging window holds (a
// longer window would not fit a per-minute limit into a two-minute run).
const (
	settleLow      = 0.90
	settleRequests = 10
	minWindow      = 10 * time.Second
)

// Compute measures hits against cfg. The hits need not be sorted.
func Compute(hits []Hit, cfg Config) (Figures, error) {
	if !cfg.End.After(cfg.Start) {
		return Figures{}, ErrSpan
	}
	allowed := cfg.Allowed
	if allowed == nil {
		if !(cfg.Rate > 0) {
			return Figures{}, ErrRate
		}
		rate := cfg.Rate
		allowed = func(from, to time.Duration) float64 { return rate * (to - from).Seconds() }
	}
	bucket := cfg.Bucket
	if bucket <= 0 {
		bucket = time.Second
	}
	span := cfg.End.Sub(cfg.Start)
	f := Figures{Seconds: span.Seconds(), Bucket: bucket.Seconds(), SettleSeconds: -1}

	in := make([]Hit, 0, len(hits))
	for _, h := range hits {
		if h.At.Before(cfg.Start) || !h.At.Before(cfg.End) {
			continue
		}
		in = append(in, h)
	}
	slices.SortStableFunc(in, func(a, b Hit) int { return a.At.Compare(b.At) })

	keyIdx := map[string]int{}
	var per []KeyFigures
	f.Timeline = make([]Sample, int((span+bucket-1)/bucket))
	var ok30, ok60, req60, lim60 int
	for _, h := range in {
		off := h.At.Sub(cfg.Start)
		i, seen := keyIdx[h.Key]
		if !seen {
			i = len(per)
			keyIdx[h.Key] = i
			per = append(per, KeyFigures{Key: h.Key})
		}
		f.Requests++
		after60 := off >= 60*time.Second
		if after60 {
			req60++
		}
		b := &f.Timeline[min(int(off/bucket), len(f.Timeline)-1)]
		switch {
		case success(h.Status):
			f.OK++
			per[i].OK++
			b.OK++
			if off >= 30*time.Second {
				ok30++
			}
			if after60 {
				ok60++
			}
		case h.Status == 429:
			f.Limited++
			per[i].Limited++
			b.Limited++
			if after60 {
				lim60++
			}
		default:
			f.Other++
		}
	}
	f.Keys = max(cfg.Keys, len(per))
	keys := float64(f.Keys)
	f.Utilization = ratio(float64(f.OK), keys*allowed(0, span))
	if span > 30*time.Second {
		f.UtilizationAfter30 = ratio(float64(ok30), keys*allowed(30*time.Second, span))
	}
	if span > 60*time.Second {
		f.UtilizationAfter60 = ratio(float64(ok60), keys*allowed(60*time.Second, span))
	}
	f.Ratio429 = ratio(float64(f.Limited), float64(f.Requests))
	f.Ratio429After60 = ratio(float64(lim60), float64(req60))
	whole := allowed(0, span)
	for i := range per {
		per[i].Utilization = ratio(float64(per[i].OK), whole)
	}
	slices.SortFunc(per, func(a, b KeyFigures) int {
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	f.PerKey = per

	w := window(allowed, span)
	f.Window = w.Seconds()
	settle := settleAt(in, cfg.Start, span, f.Keys, w, allowed)
	if settle >= 0 {
		f.SettleSeconds = settle.Seconds()
		for _, h := range in {
			if h.Status == 429 && h.At.Sub(cfg.Start) < settle {
				f.LearningLimited++
			}
		}
	} else {
		f.LearningLimited = f.Limited
	}
	return f, nil
}

// window is the judging span for settling: long enough to hold
// settleRequests allowed requests of one key at the run's mean allowed
// rate, at least minWindow.
func window(allowed func(from, to time.Duration) float64, span time.Duration) time.Duration {
	rate := allowed(0, span) / span.Seconds()
	w := minWindow
	if rate > 0 {
		w = max(w, time.Duration(settleRequests/rate*float64(time.Second)))
	}
	return w
}

// settleAt returns the offset from start after which every key's successes
// over the trailing window w stay within settleLow and 100% of what it was
// allowed, in whole requests (at least floor(0.9*allowed), at most
// floor(allowed)+1), judged each second until the end; -1 when that never
// holds. The offset is the start of the first window of the good run: from
// then on every key was sent at its limit. A run shorter than one window
// never settles. Keys that never sent count as zero and so keep the run
// unsettled.
func settleAt(hits []Hit, start time.Time, span time.Duration, keys int, w time.Duration, allowed func(from, to time.Duration) float64) time.Duration {
	if span < w {
		return -1
	}
	// Successes per key, as offsets in time order.
	byKey := map[string][]time.Duration{}
	for _, h := range hits {
		if success(h.Status) {
			byKey[h.Key] = append(byKey[h.Key], h.At.Sub(start))
		}
	}
	if len(byKey) < keys {
		return -1
	}
	step := time.Second
	last := time.Duration(-1) // the last judged instant at which some key was outside
	for t := w; t <= span; t += step {
		lim := allowed(t-w, t)
		lo, hi := math.Floor(settleLow*lim+1e-9), math.Floor(lim+1e-9)+1
		for _, offs := range byKey {
			n := float64(countIn(offs, t-w, t))
			if n < lo || n > hi {
				last = t
				break
			}
		}
	}
	switch {
	case last < 0:
		return 0 // every judged window was fine
	case last+step > span:
		return -1
	}
	// The first window of the good run ends at last+step.
	return last + step - w
}

// countIn counts offsets in (from, to]; offs is sorted.
func countIn(offs []time.Duration, from, to time.Duration) int {
	i, _ := slices.BinarySearch(offs, from+1)
	j, _ := slices.BinarySearch(offs, to+1)
	return j - i
}

func success(status int) bool { return status >= 200 && status < 400 }

func ratio(a, b float64) float64 {
	if b <= 0 || math.IsNaN(a) || math.IsNaN(b) {
		return 0
	}
	return a / b
}
