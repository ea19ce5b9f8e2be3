package gateway

import (
	"slices"
	"sync"
	"time"
)

// sessions remembers which exit each sticky session leaves through. It is
// bounded: a session unused for idle is forgotten, and past max sessions
// the least recently used are. It is safe for concurrent use.
type sessions struct {
	max  int
	idle time.Duration

	mu sync.Mutex
	m  map[string]*sessionEntry
}

type sessionEntry struct {
	exit string
	used time.Time
}

func newSessions(max int, idle time.Duration) *sessions {
	return &sessions{max: max, idle: idle, m: map[string]*sessionEntry{}}
}

// get returns the session's exit ("" when it has none yet).
func (s *sessions) get(name string, now time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[name]
	if e == nil {
		return ""
	}
	if now.Sub(e.used) > s.idle {
		delete(s.m, name)
		return ""
	}
	e.used = now
	return e.exit
}

// bind gives the session exit unless it has one already; it returns the
// session's exit.
func (s *sessions) bind(name, exit string, now time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.m[name]; e != nil && now.Sub(e.used) <= s.idle {
		e.used = now
		return e.exit
	}
	if len(s.m) >= s.max {
		s.evictLocked(now)
	}
	s.m[name] = &sessionEntry{exit: exit, used: now}
	return exit
}

// drop forgets the session (its exit left the pool).
func (s *sessions) drop(name string) {
	s.mu.Lock()
	delete(s.m, name)
	s.mu.Unlock()
}

// unbind forgets the session if exit is its exit: that exit failed as a
// proxy, and the session's next request goes through another, as a
// provider's session moves when its IP dies (bound to a dead exit, each
// of its requests was refused for the wait budget, for good).
func (s *sessions) unbind(name, exit string) {
	s.mu.Lock()
	if e := s.m[name]; e != nil && e.exit == exit {
		delete(s.m, name)
	}
	s.mu.Unlock()
}

// evictLocked forgets idle sessions, and if none was, the least recently
// used tenth. It sorts, and runs once per max/10 new sessions at most.
func (s *sessions) evictLocked(now time.Time) {
	for k, e := range s.m {
		if now.Sub(e.used) > s.idle {
			delete(s.m, k)
		}
	}
	if len(s.m) < s.max {
		return
	}
	times := make([]time.Time, 0, len(s.m))
	for _, e := range s.m {
		times = append(times, e.used)
	}
	slices.SortFunc(times, time.Time.Compare)
	cut := times[len(times)/10]
	for k, e := range s.m {
		if !e.used.After(cut) {
			delete(s.m, k)
		}
	}
}

// len returns how many sessions are remembered.
func (s *sessions) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
