package monitor

import (
	"fmt"
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
	last429   time.Time
	state     int
	flaggedAt time.Time
	until     time.Time // end of a quarantine or ban
	quars     int       // quarantines so far
	pace      float64   // the lane's pace (or own ceiling) at the last tick
	peers     float64   // its peers' median pace
	why       string
}

func (m *Monitor) laneLocked(host, exit string) *laneMon {
	k := laneKey{host, exit}
	l := m.lanes[k]
	if l == nil {
		l = &laneMon{}
		m.lanes[k] = l
	}
	return l
}

type quarantineOrder struct {
	host, exit string
	until      time.Time
	why        string
}

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
		paces := make([]float64, 0, len(hs.Lanes))
		for _, ln := range hs.Lanes {
			if ln.Requests > 0 {
				paces = append(paces, lanePace(ln))
			}
		}
		if len(paces) < 3 {
			continue
		}
		sorted := slices.Clone(paces)
		slices.Sort(sorted)
		for _, ln := range hs.Lanes {
			if ln.Requests == 0 {
				continue
			}
			k := laneKey{hs.Host, ln.Exit}
			seen[k] = true
			l := m.lanes[k]
			pace := lanePace(ln)
			peers := medianWithout(sorted, pace)
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
			case l.state == repGood && low && recent:
				l.state, l.flaggedAt = repFlagged, now
				l.why = fmt.Sprintf("draws 429s at %s, %.0f%% of its peers' %s", perSecond(pace), 100*pace/peers, perSecond(peers))
				ev.Kind, ev.Level = KindExitFlagged, "warn"
				ev.Message = fmt.Sprintf("exit %s on %s %s: an early reputation warning", ln.Exit, hs.Host, l.why)
				m.emitLocked(ev)
			case l.state == repFlagged && low && l.last429.After(l.flaggedAt) && now.Sub(l.flaggedAt) >= cfg.QuarantineAfter:
				d := cfg.QuarantineFor << min(l.quars, 20)
				d = min(d, cfg.QuarantineMax)
				l.quars++
				l.state, l.until = repQuarantined, now.Add(d)
				l.why = fmt.Sprintf("still draws 429s at %s, %.0f%% of its peers' %s, %v after it was flagged", perSecond(pace), 100*pace/peers, perSecond(peers), now.Sub(l.flaggedAt).Round(time.Second))
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
			case l.state == repFlagged && !low && !recent:
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
