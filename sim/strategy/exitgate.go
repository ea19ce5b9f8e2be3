package strategy

import (
	"math/rand/v2"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
)

// exitgateSpec is the production limiter with its defaults: one learned lane
// per (host, exit), even pacing, bracketing of the limit, scope inference.
func exitgateSpec() Spec {
	return Spec{
		Name:       Exitgate,
		Summary:    "exitgate's limiter: a learned lane per (host, exit), paced evenly, scope inferred",
		Source:     "github.com/exitgate/exitgate/limit (default Config)",
		Sessions:   true,
		ResolveIPs: true,
		New: func(env Env) (fetch.Limiter, error) {
			return newLimit(env)
		},
	}
}

func newLimit(env Env) (fetch.Limiter, error) {
	env, err := env.withDefaults()
	if err != nil {
		return nil, err
	}
	l, err := exitgateLimiter(env, env.Exits, nil)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// exitgateLimiter is exitgate's limiter on its defaults over exits, sharing
// host state through shared (nil: alone); env has its defaults.
func exitgateLimiter(env Env, exits []string, shared limit.HostShare) (*limit.Limiter, error) {
	cfg := limit.Config{Rand: rand.New(rand.NewPCG(env.Rand.Uint64(), env.Rand.Uint64())), Logger: env.Logger, Shared: shared}
	if env.InFlight > 0 {
		cfg.MaxInFlight = max(256, 2*env.InFlight)
		cfg.HostConcurrency = max(32, env.InFlight)
	}
	l, err := limit.New(cfg)
	if err != nil {
		return nil, err
	}
	l.SetExits(limiterExits(exits))
	return l, nil
}
