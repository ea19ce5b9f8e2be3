package limit

import "github.com/exitgate/exitgate/verdict"

// Rule remaining: X-RateLimit-Remaining alone (no limit, no reset:
// Varnish's vsthrottle.remaining sent as its README writes it) says how many
// more requests the lane's budget lets through now, never when it refills,
// so it sets no pace (declared.go needs a reset or a limit). But its fall to
// 0 is the run's end told one request early: the next request on the lane
// would draw the 429 that ends the run. The learner reads that 429 there
// (the run's successes, this one with them, then the push-back), and the
// lane rests as after one, without the 429 being paid. A 0 after a 0 (a
// refill's token taken as soon as it came, as a bucket's steady rate gives
// them) or after a 429 reads nothing: only the fall ends a run. Read as a
// pace instead, whole tokens mislead: vsthrottle drops the fraction of a
// token a request lets through, so a lane faster than the refill counts
// none of it.
//
// Before this rule, vsthrottle's bucket of 30 refilled once per 2 s drew 20
// 429s in 120 s, one per lane that spent its bucket at the followers' pace.

// remainingAlone reports whether o carries X-RateLimit-Remaining with
// nothing that says when it refills.
func remainingAlone(o *Outcome) bool {
	return o.HasRemaining && o.Quota <= 0 && o.ResetIn <= 0
}

// remainingSpent records the lane's Remaining reading from o and reports
// whether it told the lane's budget spent: a success whose Remaining alone
// fell to 0 from more (or from no reading yet). A 429 spends it too, with
// the header or without (servers that send it on requests let through
// only).
func (l *lane) remainingSpent(o *Outcome) bool {
	if o.Verdict == verdict.Throttled {
		if l.x != nil && l.x.rem != remUnread {
			l.x.rem = remSpent
		}
		return false
	}
	if !remainingAlone(o) || o.Verdict != verdict.OK {
		return false
	}
	x := l.extra()
	if o.Remaining >= 1 {
		x.rem = remLeft
		return false
	}
	fell := x.rem != remSpent
	x.rem = remSpent
	return fell
}

// remState is what a lane's last Remaining alone said.
type remState uint8

const (
	remUnread remState = iota // nothing yet
	remLeft                   // 1 or more
	remSpent                  // 0, or a 429 since
)

// remainingRun reads lane l's budget told spent by the answer to rec as
// the 429 its next request would have drawn: the throttled rules run as
// for one, and nothing counts it as a 429 (the server sent none).
func (r *rules) remainingRun(h *host, l *lane, rec ticketRec, sent, now int64, u float64) {
	h.note(r, now, "remaining", l.exit, "remaining", 1, 0,
		"X-RateLimit-Remaining fell to 0: the next request would be pushed back; read as its 429, which is not sent")
	r.throttled(h, l, rec, &Outcome{Verdict: verdict.Throttled}, sent, now, u)
}
