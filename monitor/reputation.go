package monitor

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/exitgate/exitgate/limit"
)

type laneKey struct{ host, exit string }

// Reputation states of an exit on a host.
const (
	repGood        = 0
	repFlagged     = 1
	repQuarantined = 2
	repBanned      = 3
)

var repNames = [...]string{"good", "flagged", "quarantined", "banned"}

// laneMon is what the monitor keeps about one exit on one host: only for
// lanes that drew a 429 lately or have a reputation other than good.
type laneMon struct {
	// req and thr count its responses and 429s, decaying over the
	// monitor's Window (as of at).
	req, thr float64
	at       time.Time
	// win counts its responses and 429s exactly over the Window, from its
	// first 429 on: what to leave out of the host's budget while the exit
	// is held back (heldLocked).
	win       window
	last429   time.Time
	state     int
	flaggedAt time.Time
	until     time.Time // end of a quarantine or ban
	quars     int       // quarantines so far
	pace      float64   // the lane's pace (or own ceiling) at the last tick
	peers     float64   // its peers' median pace
	why       string
}

// count adds one response at t to the lane's decaying counts.
func (l *laneMon) count(t time.Time, is429 bool, span time.Duration) {
	l.win.add(t, is429)
	l.decay(t, span)
	l.req++
	if is429 {
		l.thr++
		l.last429 = t
	}
}

// decay ages the counts to t: they fall by e over span.
func (l *laneMon) decay(t time.Time, span time.Duration) {
	if !l.at.IsZero() && t.After(l.at) {
		f := math.Exp(-float64(t.Sub(l.at)) / float64(span))
		l.req, l.thr = l.req*f, l.thr*f
	}
	if t.After(l.at) {
		l.at = t
	}
}

func (m *Monitor) laneLocked(host, exit string) *laneMon {
	k := laneKey{host, exit}
	l := m.lanes[k]
	if l == nil {
		l = &laneMon{win: newWindow(m.cfg.Window)}
		m.lanes[k] = l
	}
	return l
}

type quarantineOrder struct {
	host, exit string
	until      time.Time
	why        string
}

// hotRatio is the 429 ratio at which a lane draws 429s rather than the odd
// one: a lane at its peers' pace is flagged from here (with MinThrottled
// 429s), and a peer under it with fewer is not the host limiting everyone.
const hotRatio = 0.1

// reputationLocked runs the reputation rule over every host's lanes and
// returns the quarantines to order.
func (m *Monitor) reputationLocked(now time.Time, snap limit.Snapshot) []quarantineOrder {
	cfg := &m.cfg
	var out []quarantineOrder
	seen := map[laneKey]bool{}
	for _, hs := range snap.Hosts {
		if hs.Scope == limit.ScopeHost || hs.Scope == limit.ScopeCredential {
			continue // one budget for all exits: no exit's own reputation shows
		}
		if !hs.Wall.IsZero() {
			// Every lane's window is spent and one retries for all: its
			// 429s are the host's, not its exit's (a lockout read as a
			// wall flagged the probing exit), then too: once the wall
			// read its window, the probe's 429s in it flagged its exit
			// (flask-limiter's bare minute: 21% of its answers).
			m.forgetWallLocked(hs.Host)
			continue
		}
		// Each lane's pace and 429 ratio over the window as its peers
		// read it (peerRatioLocked), to compare it with its peers' medians.
		var paces, ratios []float64
		for _, ln := range hs.Lanes {
			if ln.Requests == 0 {
				continue
			}
			paces = append(paces, lanePace(ln))
			ratios = append(ratios, m.peerRatioLocked(hs.Host, ln.Exit, now))
		}
		if len(paces) < 3 {
			continue
		}
		slices.Sort(paces)
		slices.Sort(ratios)
		budget := cfg.budget(hs.Host)
		for _, ln := range hs.Lanes {
			if ln.Requests == 0 {
				continue
			}
			k := laneKey{hs.Host, ln.Exit}
			seen[k] = true
			l := m.lanes[k]
			pace := lanePace(ln)
			peers := medianWithout(paces, pace)
			ratio := m.laneRatioLocked(hs.Host, ln.Exit, now)
			low := peers > 0 && pace <= cfg.FlagShare*peers
			limiterBan := ln.BannedUntil.After(now) && (l == nil || l.state != repQuarantined || ln.BannedUntil.After(l.until))
			if l == nil {
				if !limiterBan {
					continue
				}
				l = m.laneLocked(hs.Host, ln.Exit)
			}
			l.pace, l.peers = pace, peers
			recent := !l.last429.IsZero() && now.Sub(l.last429) <= cfg.FlagWindow
			// An exit stands out only while its peers (their median) are
			// within budget: when every lane draws 429s, the host is the
			// problem, not the exit.
			peersOK := medianWithout(ratios, m.peerRatioLocked(hs.Host, ln.Exit, now)) <= 2*budget
			// It draws 429s well under its peers' capacity: paced far
			// under them, or drawing many 429s at a pace they pass.
			hot := l.thr >= float64(cfg.MinThrottled) && ratio >= hotRatio && pace <= 1.05*peers
			// Nor during a spike (most hosts over budget at once: our
			// side changed, and every exit's 429s say so, not its own
			// reputation).
			bad := peersOK && recent && (low || hot) && !m.spike
			ev := Event{At: now, Host: hs.Host, Exit: ln.Exit, Value: pace}
			switch {
			case limiterBan && l.state != repBanned:
				l.state, l.until = repBanned, ln.BannedUntil
				l.why = "banned by the host (block pages or a wave of 403s)"
				ev.Kind, ev.Level, ev.Until = KindExitBanned, "warn", l.until
				ev.Message = fmt.Sprintf("exit %s is banned on %s until %s: %s", ln.Exit, hs.Host, l.until.Format(time.RFC3339), l.why)
				m.emitLocked(ev)
			case l.state == repBanned:
				if !ln.BannedUntil.After(now) {
					l.state, l.why = repGood, ""
					ev.Kind, ev.Level = KindExitCleared, "info"
					ev.Message = fmt.Sprintf("exit %s's ban on %s is over", ln.Exit, hs.Host)
					m.emitLocked(ev)
				}
			case l.state == repBanned && ln.BannedUntil.After(l.until):
				l.until = ln.BannedUntil
			case l.state == repGood && bad:
				l.state, l.flaggedAt = repFlagged, now
				l.why = l.describe(pace, peers, low)
				ev.Kind, ev.Level = KindExitFlagged, "warn"
				ev.Message = fmt.Sprintf("exit %s on %s %s: an early reputation warning", ln.Exit, hs.Host, l.why)
				m.emitLocked(ev)
			case l.state == repFlagged && bad && l.last429.After(l.flaggedAt) && now.Sub(l.flaggedAt) >= cfg.QuarantineAfter:
				d := cfg.QuarantineFor << min(l.quars, 20)
				d = min(d, cfg.QuarantineMax)
				l.quars++
				l.state, l.until = repQuarantined, now.Add(d)
				l.why = fmt.Sprintf("still %s, %v after it was flagged", l.describe(pace, peers, low), now.Sub(l.flaggedAt).Round(time.Second))
				out = append(out, quarantineOrder{host: hs.Host, exit: ln.Exit, until: l.until, why: "monitor: exit reputation: " + l.why})
				ev.Kind, ev.Level, ev.Until = KindExitQuarantined, "warn", l.until
				ev.Message = fmt.Sprintf("exit %s quarantined on %s for %v: it %s", ln.Exit, hs.Host, d, l.why)
				m.emitLocked(ev)
			case l.state == repQuarantined && !now.Before(l.until):
				// Back on probation: flagged again if it still paces low.
				l.state, l.flaggedAt = repFlagged, now
				if !low {
					l.state = repGood
				}
				ev.Kind, ev.Level = KindExitCleared, "info"
				ev.Message = fmt.Sprintf("exit %s's quarantine on %s is over (%s)", ln.Exit, hs.Host, repNames[l.state])
				m.emitLocked(ev)
			case l.state == repFlagged && !low && !hot && !recent:
				l.state, l.why = repGood, ""
				ev.Kind, ev.Level = KindExitCleared, "info"
				ev.Message = fmt.Sprintf("exit %s on %s paces with its peers again (%s, peers %s)", ln.Exit, hs.Host, perSecond(pace), perSecond(peers))
				m.emitLocked(ev)
			}
		}
	}
	for k, l := range m.lanes {
		if l.state == repGood && now.Sub(l.last429) > cfg.FlagWindow || l.state == repBanned && !seen[k] && !now.Before(l.until) {
			delete(m.lanes, k)
		}
	}
	return out
}

// laneRatioLocked is a lane's 429 ratio over the window: 0 for a lane not
// followed (no 429 lately).
func (m *Monitor) laneRatioLocked(host, exit string, now time.Time) float64 {
	l := m.lanes[laneKey{host, exit}]
	if l == nil {
		return 0
	}
	l.decay(now, m.cfg.Window)
	return l.thr / max(l.req, 1)
}

// forgetWallLocked drops the 429s host's lanes drew so far from their
// ratios: at a wall they are the host's.
func (m *Monitor) forgetWallLocked(host string) {
	for k, l := range m.lanes {
		if k.host == host && l.state == repGood {
			l.thr = 0
		}
	}
}

// peerRatioLocked is a lane's 429 ratio over the window as its peers'
// median reads it (a lane that drew no 429 lately has none). A lane that
// drew fewer than MinThrottled 429s, among many more successes (under
// hotRatio), counts as drawing none: one 429 on every lane at once is the
// server's blip (it stalled and answered a queue together), not the host
// limiting every exit, and it hid a bad exit for a whole window (on nginx
// under load, flagged 12.7 s after it turned instead of 5). A host locking
// every lane out draws few 429s a lane too, but nothing else.
func (m *Monitor) peerRatioLocked(host, exit string, now time.Time) float64 {
	r := m.laneRatioLocked(host, exit, now)
	if l := m.lanes[laneKey{host, exit}]; l == nil || l.thr < float64(m.cfg.MinThrottled) && r < hotRatio {
		return 0
	}
	return r
}

// describe says how a lane stands out from its peers.
func (l *laneMon) describe(pace, peers float64, low bool) string {
	if low {
		return fmt.Sprintf("draws 429s at %s, %.0f%% of its peers' %s", perSecond(pace), 100*pace/peers, perSecond(peers))
	}
	return fmt.Sprintf("draws %.0f%% 429s at %s while its peers pass %s", 100*l.thr/max(l.req, 1), perSecond(pace), perSecond(peers))
}

// lanePace is a lane's pace in requests per second, or its own ceiling
// when that is lower (an IP with a smaller budget than its peers').
func lanePace(ln limit.LaneSnapshot) float64 {
	p := ln.Rate.Hz()
	if c := ln.Ceiling.Hz(); c > 0 {
		p = min(p, c)
	}
	return p
}

// medianWithout is the median of sorted without one element equal to v
// (the lane itself): its peers' median.
func medianWithout(sorted []float64, v float64) float64 {
	i, found := slices.BinarySearch(sorted, v)
	if !found || len(sorted) < 2 {
		return 0
	}
	n := len(sorted) - 1
	at := func(k int) float64 {
		if k >= i {
			k++
		}
		return sorted[k]
	}
	if n%2 == 1 {
		return at(n / 2)
	}
	return (at(n/2-1) + at(n/2)) / 2
}

// heldLocked returns, per host, the responses and 429s within the window
// of its exits held back on it (quarantined by the monitor or banned by
// the host). Their 429s are handled, the exit no longer sends there, and
// they are left out of the host's budget: a host whose only trouble was a
// bad exit is not alerted on, nor parked by its breaker, for 429s a
// Window old.
func (m *Monitor) heldLocked(now time.Time) map[string][2]int {
	var out map[string][2]int
	for k, l := range m.lanes {
		if l.state != repQuarantined && l.state != repBanned {
			continue
		}
		req, thr := l.win.sum(now)
		if req == 0 {
			continue
		}
		if out == nil {
			out = map[string][2]int{}
		}
		c := out[k.host]
		out[k.host] = [2]int{c[0] + req, c[1] + thr}
	}
	return out
}
