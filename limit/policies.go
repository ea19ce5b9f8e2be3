package limit

import (
	"slices"
	"time"
)

// A server may hold a client to several limits at once: a second's burst
// under a minute's quota (flask-limiter's "5 per second;30 per minute"),
// IETF policies side by side, vendor groups per minute and per hour. Each
// answer states one of them, the one nearest its end (rlheader picks it
// when an answer lists several), so the limit stated changes from answer to
// answer. Read as one quota, a minute's reset with the second's limit read
// "5 per minute", and ten lanes went at a tenth of the minute's quota
// (flask-limiter's 5 per second and 30 per minute: 1.3% of the limit after
// the first 30 s). So each limit stated is a quota of its own (a policy),
// on each lane and on the host: a lane waits for what remains of every one,
// and the host's declared pace is that of the policy whose rate is lowest.

// policyIdle is how long a policy no answer has stated is kept, at least
// (and three of its windows): one of several limits held at once is stated
// again whenever it is the nearest its end, while a limit the server
// replaced (a limit raised) is never stated again and must not hold the
// lanes back for long.
const policyIdle = time.Minute

// maxPolicies bounds the limits a lane or host keeps at once: real servers
// layer two or three; a server stating a new limit on every answer must
// not grow a list every acquire walks. Past it the one stated longest ago
// goes.
const maxPolicies = 4

// stale reports whether no answer stated q's limit for policyIdle and three
// of its windows.
func (q *quota) stale(now int64) bool {
	return now-q.seen > max(int64(policyIdle), 3*q.span())
}

// switchPolicy makes l's quota the one of limit, which an answer stated in
// place of the one l.q holds: found among the lane's others, or new. The
// current one joins the others; stale ones are dropped.
func (l *lane) switchPolicy(limit float64, now int64) {
	x := l.extra()
	var next *quota
	if i := slices.IndexFunc(x.qo, func(q *quota) bool { return q.limit == limit }); i >= 0 {
		next = x.qo[i]
		x.qo = slices.Delete(x.qo, i, i+1)
	} else {
		next = &quota{}
	}
	x.qo = slices.DeleteFunc(x.qo, func(q *quota) bool { return q.stale(now) })
	if len(x.qo) >= maxPolicies-1 {
		i := oldest(len(x.qo), func(i int) int64 { return x.qo[i].seen })
		x.qo = slices.Delete(x.qo, i, i+1)
	}
	x.qo = append(x.qo, l.q)
	l.q = next
}

// policy returns the host's quota of limit: win (also while no limit is
// known, or none stated), one of the others, or a new other.
func (c *capacity) policy(limit float64) *quota {
	if c.win.limit <= 0 || limit <= 0 || c.win.limit == limit {
		return &c.win
	}
	if i := slices.IndexFunc(c.others, func(q quota) bool { return q.limit == limit }); i >= 0 {
		return &c.others[i]
	}
	if len(c.others) >= maxPolicies-1 {
		i := oldest(len(c.others), func(i int) int64 { return c.others[i].seen })
		c.others = slices.Delete(c.others, i, i+1)
	}
	c.others = append(c.others, quota{})
	return &c.others[len(c.others)-1]
}

// oldest is the index, of n quotas, of the one stated longest ago (seen(i)
// is when quota i last was).
func oldest(n int, seen func(int) int64) int {
	o := 0
	for i := 1; i < n; i++ {
		if seen(i) < seen(o) {
			o = i
		}
	}
	return o
}

// bind drops stale policies and makes win the one whose rate is lowest: the
// one a steady pace meets first. A policy whose window is not known yet
// binds nothing.
func (c *capacity) bind(now int64) {
	c.others = slices.DeleteFunc(c.others, func(q quota) bool { return q.stale(now) })
	for i := range c.others {
		if r := c.others[i].rate(); r > 0 && (c.win.rate() <= 0 || r < c.win.rate() || c.win.stale(now)) {
			c.win, c.others[i] = c.others[i], c.win
		}
	}
	if len(c.others) > 0 && c.win.stale(now) {
		// Every other policy stated since is unknown yet: keep the
		// stale one out of the way.
		c.win, c.others[0] = c.others[0], c.win
	}
}
