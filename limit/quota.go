package limit

import (
	"math"
	"time"
)

// A quota is what a server declared: a limit per window and what remains
// of it. Rare, so lanes and hosts keep it behind a pointer.

// quota is what the server declared: limit per window, and what remains of
// the current window. Rare, so it lives behind a pointer.
type quota struct {
	limit  float64 // declared requests per window; 0 = unknown
	window int64
	rem    float64 // remaining before reset; valid while now < reset
	reset  int64
	nextAt int64 // even pacing of rem over the rest of the window
}

func (q *quota) readyAt(now int64) int64 {
	if q == nil || q.reset == 0 || now >= q.reset {
		return 0
	}
	if q.rem < 1 {
		return q.reset
	}
	return q.nextAt
}

func (q *quota) take(now int64) {
	if q == nil || q.reset == 0 {
		return
	}
	if now >= q.reset {
		if q.limit <= 0 || q.window <= 0 {
			// The window ended and its size is unknown: the next response
			// says what the new one holds (and, from how far its reset
			// moved, how long windows are).
			return
		}
		// A new window of the declared size began; the next response
		// corrects it.
		for q.reset <= now {
			q.reset += q.window
		}
		q.rem = q.limit
	}
	q.rem--
	if q.rem >= 1 {
		q.nextAt = now + (q.reset-now)/int64(q.rem+1)
	} else {
		q.nextAt = q.reset
	}
}

// update applies a response's quota fields. inFlight is the number of this
// scope's requests still out: they may not be counted in Remaining yet.
func (q *quota) update(o *Outcome, now int64, inFlight int32) {
	if o.Quota > 0 {
		q.limit = o.Quota
		if o.Window > 0 {
			q.window = int64(o.Window)
		}
	}
	if o.HasRemaining && o.ResetIn > 0 {
		reset := now + int64(o.ResetIn)
		if o.Window <= 0 && q.reset != 0 && now >= q.reset && reset-q.reset >= int64(time.Second) {
			// X-RateLimit-Limit says how many but not per what: the step
			// from one window's reset to the next is the window. Keep the
			// smallest step seen (a skipped window shows a multiple).
			if d := reset - q.reset; q.window == 0 || d < q.window {
				q.window = d
			}
		}
		q.rem = math.Max(0, math.Floor(o.Remaining)-float64(inFlight))
		q.reset = reset
		q.nextAt = now
		if q.rem >= 1 {
			q.nextAt = now + (q.reset-now)/int64(q.rem+1)
		}
	}
}
