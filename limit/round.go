package limit

import (
	"fmt"
	"math"
)

// Limits are written in round numbers: 30 per minute, 1 per second, 20 per
// 10 seconds. The search puts its paces Settle under such numbers on purpose
// (the ramp doubles Settle times the first guess; a window's reading is a
// quota over a common window), so a pace that passed there and a step above
// it that was pushed back, or a step that would likely be, reads the limit
// as that round number. Stepping on costs a 429 at likely odds for a few
// percent at best: on a slow limit that 429 is a large share of what the
// host sends (6 per minute on 10 exits: 120 requests in two minutes), and
// under a fixed Retry-After of a minute it idles a lane for 30 requests.

// roundMantissas are the leading figures limits are written with, per
// second, per 10 seconds, per minute or per hour: 1, 1.2, 1.5, 2, 2.5, 3,
// 4, 5, 6 times a power of ten (10, 12, 15, 20, 25, 30, 40, 50, 60, 100,
// 120, ...), whole counts only.
var roundMantissas = [...]float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6}

// roundPer are the periods limits are written per, in seconds.
var roundPer = [...]float64{1, 10, 60, 3600}

// roundSlack is how near a count per period must come to a round one: the
// search puts its paces there as products of Settle and the round figure,
// exact but for float rounding. Any looser, and a pace the bisection
// happened to reach would read as round by chance (nine figures over four
// periods within half a percent cover a third of all paces).
const roundSlack = 1e-6

// roundLimit returns the round limit x (req/s) is, in words, or "".
func roundLimit(x float64) string {
	if x <= 0 {
		return ""
	}
	for _, per := range roundPer {
		n := x * per
		if n < 1-roundSlack {
			continue
		}
		mag := math.Pow(10, math.Floor(math.Log10(n*(1+roundSlack))))
		for _, m := range roundMantissas {
			// A limit counts whole requests: 1.5 per 10 s is not written,
			// 15 per minute is (nginx's 12r/m held at 0.146/s, Settle
			// under "1.5 per 10 s", for most of a run).
			if v := m * mag; math.Abs(n-v) <= roundSlack*n && whole(v) {
				return fmt.Sprintf("%.3g per %s", m*mag, perName(per))
			}
		}
	}
	return ""
}

// whole reports whether a round figure n is a whole count of requests, as
// limits count them (roundLimit, pairRung).
func whole(n float64) bool { return math.Abs(n-math.Round(n)) <= roundSlack*n }

func perName(per float64) string {
	switch per {
	case 1:
		return "second"
	case 60:
		return "minute"
	case 3600:
		return "hour"
	}
	return fmt.Sprintf("%.0fs", per)
}

// settleRound settles host h's search at explorer l's pace, Settle under
// the round limit lim, where a 429 above it idles a lane long (costly);
// soon: the search's own hold, whose first re-probe comes sooner
// (reprobeDue), not one a re-probe's climb came to.
func (r *rules) settleRound(h *host, l *lane, lim string, soon bool, now int64) {
	h.exp.roundHeld, h.exp.roundSoon = true, soon
	r.settleHere(h, l, now, fmt.Sprintf("%.3g/s is just under %s, and a 429 above it idles a lane: settled, a re-probe tries above it later", l.pace, lim))
}

// roundUnder returns the round limit the pace sits Settle under, or "".
func (r *rules) roundUnder(pace float64) string { return roundLimit(pace / r.settle) }

// affords reports whether the host can spend a 429 and keep its ratio at
// one in earnEvery: the first 429 finds the limit and is spent regardless;
// a step that will likely be pushed back waits until the host has sent
// enough to pay for it.
func (h *host) affords() bool { return h.spare429s(0) >= 1 }

// atRoundLimit reports the round limit the search has found, if any: what
// passed was sent Settle under a round limit and the explorer was pushed
// back within a refine step above it. Between the two, only a limit that
// is not round remains, and a step into that gap costs a 429 for a few
// percent. The search settles; the re-probe tries above it later, as it
// does above any settled pace.
func (r *rules) atRoundLimit(h *host) string {
	c := &h.cap
	base := max(c.pass, c.lo)
	if c.hi == 0 || base == 0 || c.hi > max(base, c.sent)*refineStep*(1+tolerance) {
		return ""
	}
	return r.roundUnder(c.sent)
}

// holdRound keeps the explorer l at the pace it just proved when that pace
// sits Settle under a round limit and the host cannot afford the 429 a step
// above would likely draw; the step is taken on a later proof, once it can.
// Where a 429 idles its lane for a long Retry-After (costly: nginx's 30r/m
// with its fixed Retry-After: 60 idles a lane for 30 requests, a tenth of
// what the pool sends in that minute), the search settles there instead,
// and a re-probe tries above it after the usual quiet.
func (r *rules) holdRound(h *host, l *lane, now int64) bool {
	e := &h.exp
	lim := r.roundUnder(l.pace)
	if lim == "" || e.phase == expRamp || h.cap.hi == 0 || h.cap.pair {
		// (A pace limit with no burst steps from one round limit to the
		// next and settles at its first failed step: pairRung.)
		e.held = false
		return false
	}
	if h.cap.costly {
		e.held = false
		r.settleRound(h, l, lim, true, now)
		return true
	}
	if h.affords() {
		e.held = false
		return false
	}
	if !e.held {
		e.held = true
		h.note(r, now, phaseNames[e.phase], l.exit, "hold", 0, l.pace,
			fmt.Sprintf("%.3g/s is just under %s: a step above waits until the host has %d successes a 429", l.pace, lim, earnEvery))
	}
	return true
}
