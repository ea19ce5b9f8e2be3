package fetch

import (
	"context"
	"maps"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/pool"
)

// Member is one configured exit: its ID (never credentials) and the
// RoundTripper that sends through it.
type Member struct {
	ID        string
	Transport http.RoundTripper
	// ForwardProxy: the member is an HTTP(S) proxy (pool.Exit.ForwardsHTTP),
	// so a 407 answering a plain-http request through it is the proxy's
	// refusal; through any other member a 407 is the server's own answer.
	ForwardProxy bool
}

// ViaProxy reports whether a request for a URL of scheme goes through m to
// an HTTP proxy whole, where the proxy itself may answer it (Response.ViaProxy).
func (m Member) ViaProxy(scheme string) bool { return m.ForwardProxy && scheme == "http" }

// ExitSet routes the limiter's exit keys to transports. A key is the exit's
// resolved IP when Identity knows it, else the exit's ID, so that two
// configured exits behind one IP share one lane per host (the server sees one
// client), and a sticky session whose IP changes moves to the lane of its new
// IP. It is safe for concurrent use.
type ExitSet struct {
	id    *pool.Identity // nil: keys are IDs
	onSet func([]limit.Exit)

	mu      sync.Mutex
	members map[string]Member // by member ID
	keyOf   map[string]string // member ID -> key
	// keys is a copy of keyOf as last published, read without mu (KeyOf):
	// onSet's callers ask it from within onSet, which runs under mu.
	keys  atomic.Pointer[map[string]string]
	byKey map[string][]string // key -> member IDs, sorted
	next  map[string]int      // round-robin cursor per key
}

// NewExitSet builds the set. onSet receives the limiter's exit list now and
// after every re-key (typically (*limit.Limiter).SetExits). id may be nil.
func NewExitSet(members []Member, id *pool.Identity, onSet func([]limit.Exit)) *ExitSet {
	s := &ExitSet{id: id, onSet: onSet, members: map[string]Member{}, keyOf: map[string]string{}, next: map[string]int{}}
	for _, m := range members {
		s.members[m.ID] = m
		s.keyOf[m.ID] = s.keyFor(m.ID)
	}
	s.publish()
	return s
}

// ExitMap is the simple form: one member per key, keys are IDs.
func ExitMap(m map[string]http.RoundTripper) *ExitSet {
	members := make([]Member, 0, len(m))
	for id, rt := range m {
		members = append(members, Member{ID: id, Transport: rt})
	}
	return NewExitSet(members, nil, nil)
}

// KeyOf returns the key member memberID is under now (its IP, once
// known, with an Identity; else its ID), and whether it is a member.
func (s *ExitSet) KeyOf(memberID string) (string, bool) {
	keys := s.keys.Load()
	if keys == nil {
		return "", false
	}
	key, ok := (*keys)[memberID]
	return key, ok
}

func (s *ExitSet) keyFor(memberID string) string {
	if s.id == nil {
		return memberID
	}
	return s.id.Key(memberID)
}

// Resolve asks the echo URL (through each exit) for every member's IP,
// concurrently, and re-keys the set. Failures leave a member keyed by ID and
// are returned by member ID.
func (s *ExitSet) Resolve(ctx context.Context, concurrency int) map[string]error {
	if s.id == nil {
		return nil
	}
	s.mu.Lock()
	members := make([]Member, 0, len(s.members))
	for _, m := range s.members {
		members = append(members, m)
	}
	s.mu.Unlock()
	errs := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, concurrency))
	for _, m := range members {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if _, err := s.id.Resolve(ctx, m.ID, m.Transport); err != nil {
				mu.Lock()
				errs[m.ID] = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	s.mu.Lock()
	for id := range s.members {
		s.keyOf[id] = s.keyFor(id)
	}
	s.publish()
	s.mu.Unlock()
	return errs
}

// Route returns a member behind key, round-robin among members that share
// it.
func (s *ExitSet) Route(key string) (Member, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.byKey[key]
	if len(ids) == 0 {
		return Member{}, false
	}
	i := s.next[key] % len(ids)
	s.next[key] = i + 1
	m := s.members[ids[i]]
	// A member without a RoundTripper (ExitMap of a nil one) is no route:
	// ErrNoExit, where the request panicked.
	return m, m.Transport != nil
}

// Observe reads the identity header of a response that came through member
// and re-keys the member when its IP changed.
func (s *ExitSet) Observe(memberID string, h http.Header) {
	if s.id == nil || h == nil {
		return
	}
	if _, changed := s.id.ObserveResponse(memberID, h); !changed {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.members[memberID]; !ok {
		return
	}
	s.keyOf[memberID] = s.keyFor(memberID)
	s.publish()
}

// Keys returns the current exit keys, sorted.
func (s *ExitSet) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.byKey))
	for k := range s.byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// publish rebuilds byKey and hands the key list to onSet. Callers hold mu
// (or own s exclusively, in NewExitSet).
func (s *ExitSet) publish() {
	s.byKey = map[string][]string{}
	for id, key := range s.keyOf {
		s.byKey[key] = append(s.byKey[key], id)
	}
	exits := make([]limit.Exit, 0, len(s.byKey))
	for key, ids := range s.byKey {
		sort.Strings(ids)
		exits = append(exits, limit.Exit{ID: key})
	}
	sort.Slice(exits, func(i, j int) bool { return exits[i].ID < exits[j].ID })
	keys := maps.Clone(s.keyOf)
	s.keys.Store(&keys)
	if s.onSet != nil {
		s.onSet(exits)
	}
}

// CloseIdleConnections closes the idle connections of every member's
// transport that has the method.
func (s *ExitSet) CloseIdleConnections() {
	s.mu.Lock()
	rts := make([]http.RoundTripper, 0, len(s.members))
	for _, m := range s.members {
		rts = append(rts, m.Transport)
	}
	s.mu.Unlock()
	for _, rt := range rts {
		if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	}
}
