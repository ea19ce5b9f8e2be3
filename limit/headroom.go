package limit

import "fmt"

// The headroom check (rule "headroom"). A declared quota of unknown kind is
// paced with a sliding-window counter's headroom (declaredRate): 1-0.6/N of
// its rate. For a small N that is a large cut taken on faith: tollbooth
// declares its token rate, 4 per second, with Remaining 0 after every
// request (its one token spent), which looks like a sliding counter and sat
// at 85% of a limit it never enforced below 4/s; throttled's 1 per 2 s sat
// at 40-80%. Nothing but a request sent without the headroom tells the two
// apart, so one lane sends one: once the host has held the declared pace
// for roomWait windows without a 429, the lane that answers goes at Settle
// under the declared rate for roomWindows windows. A sliding counter pushes
// it back at its first window boundary (one 429: the headroom stands, for
// good); if it is not pushed back, the headroom is dropped for every lane.
// Where the headroom is small (the headroom's rate, before Settle, at least
// roomWorth of the declared rate: a limit of 6 and more per window at the
// default Settle, httprate's 10 per minute) a 429 costs more than the check
// gains, and there is none. A limit of 5 is checked: flask-limiter's moving
// 5 per second, whose resets in whole seconds do not tell its kind, sat at
// 88%; httprate's 5 per 10 s pays one 429 for it. A check whose quota changes meanwhile (a new
// limit or window) starts over on the new one (roomRestart). A server seen
// to count stricter than it declares (declared429) has no headroom to
// spare: no check (gofiber's sliding window paid a 429 and a 10-s
// Retry-After for one).

const (
	roomWorth   = 0.92 // a headroom factor below this is worth a check
	roomWait    = 2    // windows held at the declared pace before the check
	roomWindows = 10   // windows the check lasts
	roomFull    = 0.9  // of the requests the check's pace allows, sent: it proves
)

// roomCheck is a host's headroom check.
type roomCheck struct {
	exit string // the lane sent without the headroom; "" = none
	at   int64  // when its check began, or when the declared pace last changed
	n    int32  // requests it sent since at
	// done: the check ended (the headroom stands, or quota.free).
	done bool
}

// roomDue reports whether host h's declared quota keeps a headroom worth a
// check: paced with it, of unknown kind, not checked yet.
func (r *rules) roomDue(h *host) bool {
	c := &h.cap
	q := &c.win
	if c.declared <= 0 || c.exact || c.bucket || c.room.done || q.free || q.fixed || q.strict > 0 || q.check.overFull || h.scope.shared() || h.led {
		return false
	}
	raw := q.rate()
	return raw > 0 && r.declaredRate(q, false) < roomWorth*raw
}

// roomOK runs the headroom check on a success of lane l at now.
func (r *rules) roomOK(h *host, l *lane, now int64) {
	c := &h.cap
	k := &c.room
	if !r.roomDue(h) {
		k.exit = "" // the quota turned out fixed, a rate or a bucket: nothing to check
		return
	}
	q := &c.win
	w := q.span()
	if k.exit == "" {
		since := max(k.at, h.exp.quietAt)
		if l.own() > 0 || !l.hot || now-since < roomWait*w {
			return
		}
		k.exit, k.at, k.n = l.exit, now, 0
		p := r.settle * q.rate()
		h.note(r, now, "headroom", l.exit, "pace", l.pace, p, fmt.Sprintf(
			"%.0fs at the declared pace without a 429: try the declared rate without a sliding counter's headroom on this lane", secs(now-since)))
		r.setPace(h, l, p)
		return
	}
	if l.exit != k.exit {
		return
	}
	k.n++
	el := now - k.at
	if el < roomWindows*w {
		return
	}
	if float64(k.n) < roomFull*l.pace*secs(el) || !atLeast(l.pace, r.settle*q.rate()) {
		// Not sent at its pace all along (the crawl had less to send): the
		// check proves nothing yet; it starts over.
		k.at, k.n = now, 0
		return
	}
	q.free, k.done, k.exit = true, true, ""
	d := r.declaredRate(q, false)
	h.note(r, now, "headroom", l.exit, "ceiling", c.declared, d, fmt.Sprintf(
		"%d requests in %.0fs at the declared rate, no 429: no sliding counter's headroom", k.n, secs(el)))
	c.declared = d
	r.updateFollow(h, now, "headroom", "the declared rate without headroom")
}

// room429 ends a headroom check on a 429 on host h's lane l at now: on the
// checked lane, the headroom stands; on another, the check waits for
// another quiet. It reports whether l was the checked lane.
func (r *rules) room429(h *host, l *lane, now int64) bool {
	k := &h.cap.room
	if k.exit == "" {
		return false
	}
	if !r.roomDue(h) {
		k.exit = "" // the lane's pace is another rule's now (a declared bucket's search)
		return false
	}
	checked := l.exit == k.exit
	if checked {
		k.done = true
		h.note(r, now, "headroom", l.exit, "pace", l.pace, h.followPace(r), fmt.Sprintf(
			"pushed back without the headroom after %.0fs: a sliding counter's headroom stands", secs(now-k.at)))
	} else {
		h.note(r, now, "headroom", k.exit, "pace", 0, h.followPace(r), "another lane was pushed back: the check waits")
		k.at = now
	}
	ex := h.lanes[k.exit]
	k.exit = ""
	if ex != nil {
		r.setPace(h, ex, min(ex.pace, h.followPace(r)))
	}
	return checked
}

// roomRestart ends a check running on host h at now because its quota
// changed: its lane takes the host's pace, and the check waits on the new
// one.
func (r *rules) roomRestart(h *host, now int64) {
	k := &h.cap.room
	k.at = now
	if k.exit == "" {
		return
	}
	ex := h.lanes[k.exit]
	k.exit = ""
	if ex != nil {
		r.setPace(h, ex, h.followPace(r))
	}
}

// roomHeld reports whether lane l of host h is under a headroom check: its
// pace is the check's, not the host's.
func (r *rules) roomHeld(h *host, l *lane) bool {
	return l.exit != "" && h.cap.room.exit == l.exit && r.roomDue(h)
}
