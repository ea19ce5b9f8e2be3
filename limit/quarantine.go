package limit

import "time"

// Quarantine holds exit back from host until until: the lane (host, exit)
// takes no request before then, while the exit goes on serving other hosts
// and the host's other lanes go on. It is the lane quarantine a ban applies
// (Snapshot shows it as the lane's BannedUntil), decided from outside the
// learning rules: a monitor that judges the exit's reputation on the host
// (package monitor). The lane keeps what it learned, and no ban is counted.
// An earlier until never shortens a quarantine or ban in force. The change
// is recorded as a Change with Rule "reputation" and why. It reports whether
// the lane exists (a lane is made by the first request through it).
func (l *Limiter) Quarantine(host, exit string, until time.Time, why string, now time.Time) bool {
	now = sane(now)
	r := l.rules
	n, u := now.UnixNano(), until.UnixNano()
	sh := l.tab.shard(host)
	sh.mu.Lock()
	h := sh.hosts[host]
	var ln *lane
	if h != nil {
		ln = h.lanes[exit]
	}
	if ln == nil {
		sh.mu.Unlock()
		return false
	}
	if u > ln.ban {
		h.note(r, n, "reputation", exit, "ban", secs(max(ln.ban-n, 0)), secs(max(u-n, 0)), why)
		ln.ban = u
		r.rekey(h, ln)
	}
	changes := h.log.takeOp()
	sh.mu.Unlock()
	l.logChanges(host, changes)
	return true
}

// ExitsDown reports how many of the pool's exits are held back at now for
// failing as proxies (quarantined, or their recovery probe still out), and
// how many exits the pool has. When all are down, nothing waits its way to
// an exit: a caller holding a client for a wait budget can say so at once.
func (l *Limiter) ExitsDown(now time.Time) (down, total int) {
	now = sane(now)
	n := now.UnixNano()
	pool := l.pool.Load()
	l.tab.exMu.RLock()
	defer l.tab.exMu.RUnlock()
	for _, e := range pool.exits {
		if s := l.tab.exits[e.ID]; s != nil && s.failing(n) {
			down++
		}
	}
	return down, pool.Len()
}
