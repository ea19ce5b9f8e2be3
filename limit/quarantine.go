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
	l.mustBeNew()
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
	l.mustBeNew()
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

// BannedEverywhere reports whether every exit of the pool is banned from
// host at now (a block page on each of its lanes, or a quarantine), and
// until when the first ban lasts. A caller holding a client for a wait
// budget can say so at once: the wait is a block, not a pace (the gateway
// answered "wait budget spent" with a Retry-After of ten minutes, and
// every other path of the host alike).
func (l *Limiter) BannedEverywhere(host string, now time.Time) (until time.Time, all bool) {
	l.mustBeNew()
	n := sane(now).UnixNano()
	pool := l.pool.Load()
	if pool.Len() == 0 {
		return time.Time{}, false
	}
	sh := l.tab.shard(host)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	h := sh.hosts[host]
	if h == nil {
		return time.Time{}, false
	}
	first := int64(0)
	for _, e := range pool.exits {
		ln := h.lanes[e.ID]
		if ln == nil || ln.ban <= n {
			return time.Time{}, false
		}
		if first == 0 || ln.ban < first {
			first = ln.ban
		}
	}
	return time.Unix(0, first), true
}

// HostFull reports whether host has as many requests in flight as
// Config.HostConcurrency allows, and that cap: a caller that waited its
// budget for a lane can tell a full host from a paced one.
func (l *Limiter) HostFull(host string) (full bool, limit int) {
	l.mustBeNew()
	sh := l.tab.shard(host)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	h := sh.hosts[host]
	return h != nil && h.inFlight >= int32(l.rules.hostConc), l.rules.hostConc
}

// Ramping reports whether host's lanes are still in slow start and may go
// faster: nothing pushed them back yet, their pace doubles as they pass, and
// neither the lanes' most (MaxLaneRate) nor the host's ceiling holds them.
// How fast a queue for it was served lately says little of how fast it
// will be.
func (l *Limiter) Ramping(host string) bool {
	l.mustBeNew()
	sh := l.tab.shard(host)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	h := sh.hosts[host]
	if h == nil || h.exp.phase != expRamp || !h.exploring() || h.rated() {
		return false
	}
	r := l.rules
	if r.ceiling > 0 && h.sendAll(h.last) >= r.settle*r.ceiling {
		return false
	}
	ex := h.lanes[h.exp.exit]
	return ex != nil && ex.pace*rampStep <= r.maxLane // (3% short of it is no ramp)
}
