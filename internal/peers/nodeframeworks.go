package peers

// Four more Node targets, each a web framework with the limiter its own
// ecosystem offers: restify's throttle plugin, hono-rate-limiter on hono,
// koa-ratelimit on koa and hapi-rate-limit on hapi, each an embedded app run
// by startNode (node.go) like the express, fastify and flexible ones.

import (
	"fmt"
	"strconv"
	"time"
)

// RestifyConfig configures a restify server throttled by its own plugin.
type RestifyConfig struct {
	// Rate tokens a second refill a bucket of Burst per client address.
	// Both required.
	Rate  float64
	Burst int
	// Headers is the plugin's setHeaders: X-RateLimit-Limit (the burst),
	// X-RateLimit-Remaining (whole tokens left) and X-RateLimit-Rate on
	// every response. Off, its 429s are bare.
	Headers bool
	// Modules, Listen and Dir as in ExpressConfig.
	Modules, Listen, Dir string
}

// StartRestify starts a restify 12 server limited by restify's throttle
// plugin keyed on the client address (a token bucket with fractional
// tokens; 429 without Retry-After).
func StartRestify(cfg RestifyConfig) (*NodeApp, error) {
	if cfg.Rate <= 0 || cfg.Burst <= 0 {
		return nil, fmt.Errorf("restify throttle: rate %v, burst %d: want both above 0", cfg.Rate, cfg.Burst)
	}
	return startNode(nodeSpec{name: "restify-throttle", file: "restify_app.js", source: restifyApp,
		modules: cfg.Modules, listen: cfg.Listen, dir: cfg.Dir,
		args: []string{"--rate", strconv.FormatFloat(cfg.Rate, 'g', -1, 64), "--burst", strconv.Itoa(cfg.Burst),
			"--headers", strconv.FormatBool(cfg.Headers)}})
}

// HonoConfig configures a hono app behind hono-rate-limiter: Limit per
// Window per client address (WindowConfig, required), with the header
// draft Headers names.
type HonoConfig struct {
	WindowConfig
	// Headers is the limiter's standardHeaders: "draft-6" (RateLimit-Limit,
	// -Remaining, -Reset and RateLimit-Policy, the default) or "draft-7"
	// (one RateLimit field and RateLimit-Policy).
	Headers string
}

// StartHono starts a hono 4 app on @hono/node-server limited by
// hono-rate-limiter's MemoryStore (a fixed window per client, opened by its
// first request; refused requests count), with Retry-After on its 429s.
func StartHono(cfg HonoConfig) (*NodeApp, error) {
	if cfg.Headers == "" {
		cfg.Headers = "draft-6"
	}
	if cfg.Headers != "draft-6" && cfg.Headers != "draft-7" {
		return nil, fmt.Errorf("hono-rate-limiter: %q headers: want draft-6 or draft-7", cfg.Headers)
	}
	return startWindowApp("hono-rate-limiter", "hono_app.js", honoApp, cfg.WindowConfig, "--headers", cfg.Headers)
}

// WindowConfig configures a target that allows Limit requests per Window per
// client address in a fixed window opened by the client's first request
// (koa-ratelimit, hapi-rate-limit, and hono-rate-limiter through
// HonoConfig; the express app starts from it too).
type WindowConfig struct {
	// Limit and Window are required.
	Limit  int
	Window time.Duration
	// Modules, Listen and Dir as in ExpressConfig.
	Modules, Listen, Dir string
}

// StartKoa starts a koa 3 app limited by koa-ratelimit's memory driver
// (refused requests do not count), with its default headers:
// X-RateLimit-Limit, -Remaining and -Reset (the window's end in Unix seconds
// with a fraction: 1796594209.110893) on every response and Retry-After (the
// whole seconds to that end, rounded down) on 429s.
func StartKoa(cfg WindowConfig) (*NodeApp, error) {
	return startWindowApp("koa-ratelimit", "koa_app.js", koaApp, cfg)
}

// StartHapi starts a hapi 21 server limited by hapi-rate-limit's userLimit
// (with no authentication, per client address; refused requests count),
// its path limits off: bare 429s, and on every response the plugin's own
// X-RateLimit-UserLimit, -UserRemaining and -UserReset (Unix milliseconds).
func StartHapi(cfg WindowConfig) (*NodeApp, error) {
	return startWindowApp("hapi-rate-limit", "hapi_app.js", hapiApp, cfg)
}

// NestConfig configures a NestJS app guarded by @nestjs/throttler with two
// named throttlers, "short" and "long", per client address.
type NestConfig struct {
	// Short allows its Limit per Window; required.
	Short WindowConfig
	// Long is a second, longer limit; its Limit 0 leaves it out.
	Long WindowConfig
	// Modules, Listen and Dir as in ExpressConfig.
	Modules, Listen, Dir string
}

// StartNest starts a NestJS 11 app (on Express) guarded by @nestjs/throttler
// 6: each named throttler counts a sliding log of the hits it let through
// (each expires its window after it came), and names its headers after
// itself: X-RateLimit-Limit-short, -Remaining-short and -Reset-short (whole
// seconds to a window the storage keeps beside the log) on what passes,
// Retry-After-short (whole seconds until its oldest hit expires) on its 429s.
func StartNest(cfg NestConfig) (*NodeApp, error) {
	if cfg.Short.Limit <= 0 || cfg.Short.Window < time.Millisecond || cfg.Long.Limit < 0 || cfg.Long.Limit > 0 && cfg.Long.Window < time.Millisecond {
		return nil, fmt.Errorf("nestjs throttler: short %d per %v, long %d per %v: want a short limit and window, and a window for a long limit", cfg.Short.Limit, cfg.Short.Window, cfg.Long.Limit, cfg.Long.Window)
	}
	args := []string{"--short-limit", strconv.Itoa(cfg.Short.Limit), "--short-ttl", windowMillis(cfg.Short.Window)}
	if cfg.Long.Limit > 0 {
		args = append(args, "--long-limit", strconv.Itoa(cfg.Long.Limit), "--long-ttl", windowMillis(cfg.Long.Window))
	}
	return startNode(nodeSpec{name: "nestjs-throttler", file: "nest_app.js", source: nestApp,
		modules: cfg.Modules, listen: cfg.Listen, dir: cfg.Dir, args: args})
}

// startWindowApp starts the embedded app file (source), which takes --limit
// and --window in milliseconds, as cfg sets them, and the flags of its own
// in more.
func startWindowApp(name, file, source string, cfg WindowConfig, more ...string) (*NodeApp, error) {
	if cfg.Limit <= 0 || cfg.Window < time.Millisecond {
		return nil, fmt.Errorf("%s: %d per %v, want a limit and a window", name, cfg.Limit, cfg.Window)
	}
	return startNode(nodeSpec{name: name, file: file, source: source,
		modules: cfg.Modules, listen: cfg.Listen, dir: cfg.Dir,
		args: append([]string{"--limit", strconv.Itoa(cfg.Limit), "--window", windowMillis(cfg.Window)}, more...)})
}

// NpmLimiterConfig configures an express app limited by the npm package
// limiter's RateLimiter per client address.
type NpmLimiterConfig struct {
	// WindowConfig: a bucket of Limit tokens refilled at Limit per Window,
	// and at most Limit removals in a window opened by the first request
	// after the last window ended. Required.
	WindowConfig
	// RetryAfter, when above 0, is sent as Retry-After (whole seconds) on
	// every 429; 0 leaves the 429s bare, as the package's README does.
	RetryAfter time.Duration
}

// StartNpmLimiter starts an express 5 app limited by limiter 4.1's
// RateLimiter (fireImmediately: a removal below zero is refused with a 429).
func StartNpmLimiter(cfg NpmLimiterConfig) (*NodeApp, error) {
	if cfg.RetryAfter < 0 || cfg.RetryAfter%time.Second != 0 {
		return nil, fmt.Errorf("npm limiter: Retry-After %v: want whole seconds, 0 for none", cfg.RetryAfter)
	}
	return startWindowApp("npm-limiter", "limiter_app.js", limiterApp, cfg.WindowConfig,
		"--retry-after", strconv.Itoa(int(cfg.RetryAfter/time.Second)))
}

// ThrottleConfig configures an express app limited by express-throttle.
type ThrottleConfig struct {
	// Rate is express-throttle's rate, "N/unit" or "N/Munit" ("6/min",
	// "5/s", "10/2min"): a token bucket refilled continuously at it.
	// Required.
	Rate string
	// Burst is the bucket's size; 0 is the package's default, the rate's N.
	Burst int
	// Modules, Listen and Dir as in ExpressConfig.
	Modules, Listen, Dir string
}

// StartExpressThrottle starts an express 5 app limited by express-throttle
// 2.0 per client address (fractional tokens, refusals take none), its 429s
// bare.
func StartExpressThrottle(cfg ThrottleConfig) (*NodeApp, error) {
	if cfg.Rate == "" || cfg.Burst < 0 {
		return nil, fmt.Errorf("express-throttle: rate %q, burst %d: want a rate and a burst of 0 (the default) or more", cfg.Rate, cfg.Burst)
	}
	return startNode(nodeSpec{name: "express-throttle", file: "throttle_app.js", source: throttleApp,
		modules: cfg.Modules, listen: cfg.Listen, dir: cfg.Dir,
		args: []string{"--rate", cfg.Rate, "--burst", strconv.Itoa(cfg.Burst)}})
}
