package server

import (
	"errors"
	"fmt"
	"time"
)

// KeyTurn turns a site against some of its keys for a while, from At
// since the start of the run (Config.Start) for For (0: for good): every
// Every-th distinct key the site has seen or will see (the 1st, the
// Every+1-th, ...; Every 1 or 0: all of them) is held to Policy, with
// limiter state of its own (a reputation drop: those IPs get a smaller
// budget than their peers), or, when Block is set, answered with block
// pages (403, a ban wave). A key under several turns follows the last one
// in force.
type KeyTurn struct {
	At, For time.Duration
	Every   int
	Policy  Policy
	Block   bool
}

// turn is a KeyTurn with its own algorithm instance.
type turn struct {
	KeyTurn
	alg Algorithm
}

func newTurns(c Config) ([]turn, error) {
	var out []turn
	for i, kt := range c.Turns {
		switch {
		case kt.At < 0 || kt.For < 0 || kt.Every < 0:
			return nil, fmt.Errorf("turns[%d] %+v has a negative field", i, kt)
		case len(c.Tiers) > 0:
			return nil, errors.New("tiers and turns cannot be combined")
		}
		t := turn{KeyTurn: kt}
		if !kt.Block {
			a, err := NewAlgorithm(c.Algorithm, kt.Policy)
			if err != nil {
				return nil, fmt.Errorf("turns[%d]: %w", i, err)
			}
			t.alg = a
		}
		out = append(out, t)
	}
	return out, nil
}

// turnLocked returns the turn in force at t for the idx-th key (0-based),
// or nil.
func (s *Site) turnLocked(idx int, t int64) *turn {
	var in *turn
	for i := range s.turns {
		tr := &s.turns[i]
		every := max(tr.Every, 1)
		if el := t - s.start; el < int64(tr.At) || tr.For > 0 && el >= int64(tr.At+tr.For) || idx%every != 0 {
			continue
		}
		in = tr
	}
	return in
}
