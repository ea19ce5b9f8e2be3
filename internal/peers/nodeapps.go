package peers

// The Node targets: express-rate-limit, @fastify/rate-limit and
// rate-limiter-flexible, each an embedded app run by startNode (node.go).

import (
	"cmp"
	"fmt"
	"strconv"
	"time"
)

// ExpressConfig configures a Node express-rate-limit target.
type ExpressConfig struct {
	// Limit requests are allowed per Window per client address. Required.
	Limit  int
	Window time.Duration
	// Headers is express-rate-limit's standardHeaders: "draft-6",
	// "draft-7" or "draft-8" (RateLimit and RateLimit-Policy structured
	// fields). Default "draft-8".
	Headers string
	// Modules is the npm prefix holding node_modules with NodeModules.
	// Default <user cache dir>/exitgate/node-peer. When they are missing
	// they are installed there once with npm.
	Modules string
	// Listen is the address to listen on. Empty means 127.0.0.1 on a free
	// port.
	Listen string
	// Dir holds the app and its logs. Empty: a temporary directory that
	// Close removes.
	Dir string
}

// Express is a running express-rate-limit app (a fixed window per client,
// opened by its first request).
type Express = NodeApp

// StartExpress starts the app with cfg and returns once it accepts
// connections, installing its npm modules first if they are missing.
func StartExpress(cfg ExpressConfig) (*Express, error) {
	if cfg.Headers == "" {
		cfg.Headers = "draft-8"
	}
	return startWindowApp("express-rate-limit", "express_app.js", expressApp,
		WindowConfig{Limit: cfg.Limit, Window: cfg.Window, Modules: cfg.Modules, Listen: cfg.Listen, Dir: cfg.Dir}, "--headers", cfg.Headers)
}

// FastifyConfig configures a Node fastify target behind @fastify/rate-limit.
type FastifyConfig struct {
	// Max requests are allowed per Window per client address. Required.
	Max    int
	Window time.Duration
	// ContinueExceeding is the plugin's continueExceeding: a request over
	// the limit starts the client's window again, so one sent before the
	// window is out keeps the client limited.
	ContinueExceeding bool
	// Modules, Listen and Dir as in ExpressConfig.
	Modules, Listen, Dir string
}

// StartFastify starts a fastify 5 app limited by @fastify/rate-limit's
// LocalStore (a fixed window per client, opened by its first request),
// with its default headers: x-ratelimit-limit, -remaining and -reset
// (seconds to the window's end, rounded up) on every response and
// retry-after (the same seconds) on 429s.
func StartFastify(cfg FastifyConfig) (*NodeApp, error) {
	if cfg.Max <= 0 || cfg.Window < time.Millisecond {
		return nil, fmt.Errorf("fastify-rate-limit: Max %d per %v, want a limit and a window", cfg.Max, cfg.Window)
	}
	return startNode(nodeSpec{name: "fastify-rate-limit", file: "fastify_app.js", source: fastifyApp,
		modules: cfg.Modules, listen: cfg.Listen, dir: cfg.Dir,
		args: []string{"--max", strconv.Itoa(cfg.Max), "--window", windowMillis(cfg.Window),
			"--continue-exceeding", strconv.FormatBool(cfg.ContinueExceeding)}})
}

// FlexibleConfig configures a Node express target limited by
// rate-limiter-flexible's RateLimiterMemory.
type FlexibleConfig struct {
	// Points requests are allowed per Duration per client address.
	// Required; Duration in whole seconds, as the library takes it.
	Points   int
	Duration time.Duration
	// Block is the library's blockDuration: a client that goes over the
	// limit is refused for this long. Zero: only until the window's end.
	Block time.Duration
	// Headers is what the app tells: "" (its README's: X-RateLimit-* on
	// every response and Retry-After in fractional seconds on 429s),
	// "retry-after" (Retry-After alone, whole seconds rounded up, as apps
	// that set no other header write it) or "none" (bare 429s).
	Headers string
	// Modules, Listen and Dir as in ExpressConfig.
	Modules, Listen, Dir string
}

// StartFlexible starts an express app limited by rate-limiter-flexible's
// RateLimiterMemory (points per duration per client, a window opened by the
// client's first request; refused requests consume points too), answering
// with the headers its README's express example sets: Retry-After (seconds,
// on 429s), X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset
// as a JavaScript Date's string ("Thu Dec 03 2026 07:30:00 GMT+0000
// (Coordinated Universal Time)"), which no parser of HTTP dates reads.
func StartFlexible(cfg FlexibleConfig) (*NodeApp, error) {
	if cfg.Points <= 0 || cfg.Duration < time.Second || cfg.Duration%time.Second != 0 || cfg.Block%time.Second != 0 {
		return nil, fmt.Errorf("rate-limiter-flexible: %d points per %v, block %v: want points and whole seconds", cfg.Points, cfg.Duration, cfg.Block)
	}
	if cfg.Headers != "" && cfg.Headers != "retry-after" && cfg.Headers != "none" {
		return nil, fmt.Errorf("rate-limiter-flexible: headers %q: want \"\", retry-after or none", cfg.Headers)
	}
	return startNode(nodeSpec{name: "rate-limiter-flexible", file: "flexible_app.js", source: flexibleApp,
		modules: cfg.Modules, listen: cfg.Listen, dir: cfg.Dir,
		args: []string{"--points", strconv.Itoa(cfg.Points), "--duration", strconv.Itoa(int(cfg.Duration / time.Second)),
			"--block", strconv.Itoa(int(cfg.Block / time.Second)), "--headers", cmp.Or(cfg.Headers, "readme")}})
}
