package strategy

import (
	"math/rand/v2"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/limit/memstore"
)

// exitgateSpec is the production limiter with its defaults: one learned lane
// per (host, exit), even pacing, bracketing of the limit, scope inference.
func exitgateSpec() Spec {
	return Spec{
		Name:       Exitgate,
		Summary:    "exitgate's limiter: a learned lane per (host, exit), paced evenly, scope inferred",
		Source:     "github.com/exitgate/exitgate/limit (Policy Adaptive, default Config)",
		Sessions:   true,
		ResolveIPs: true,
		New: func(env Env) (fetch.Limiter, error) {
			return newLimit(env, limit.Adaptive)
		},
	}
}

// articlePerExitSpec is the per-exit token bucket of "429s Belong to the
// Exit, Not the Worker" (reference/article-per-exit-token-buckets.txt) as
// the limit package implements its published rules: a bucket of 30/min per
// exit, halved on each 429 with a floor of 2/min, +25% toward the default
// after 100 consecutive successes, Retry-After honoured as a cooldown. The
// exit selection is exitgate's (a dry lane costs a reroute): the article's
// own code waits on a cooling exit and crashes as published, so only its
// rules are kept.
func articlePerExitSpec() Spec {
	return Spec{
		Name:     ArticlePerExit,
		Summary:  "the article's per-exit bucket: 30/min, halve on 429 (floor 2/min), +25% after 100 successes",
		Source:   "reference/article-per-exit-token-buckets.txt, via limit.Config{Policy: limit.ArticlePerExit}",
		Sessions: true,
		New: func(env Env) (fetch.Limiter, error) {
			return newLimit(env, limit.ArticlePerExit)
		},
	}
}

func newLimit(env Env, p limit.Policy) (fetch.Limiter, error) {
	env, err := env.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg := limit.Config{Policy: p, Rand: rand.New(rand.NewPCG(env.Rand.Uint64(), env.Rand.Uint64()))}
	if env.InFlight > 0 {
		cfg.MaxInFlight = max(256, 2*env.InFlight)
		cfg.HostConcurrency = max(32, env.InFlight)
	}
	l, err := limit.New(cfg, memstore.New())
	if err != nil {
		return nil, err
	}
	l.SetExits(limiterExits(env.Exits))
	return l, nil
}
