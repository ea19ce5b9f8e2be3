// Package peertest wraps package peers for tests: each Start function fails
// the test on error and kills the peer in t.Cleanup, so a test never leaves
// a process behind.
//
// A missing program skips the test, unless EXITGATE_REQUIRE_PEERS=1 is set
// (the project test script sets it), in which case the test fails: CI never
// silently skips.
//
// All helpers must be called from the test goroutine (they call t.Fatal).
// The returned peers are safe for concurrent use once started.
package peertest

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/exitgate/exitgate/internal/peers"
)

// RequireEnv is the environment variable that turns a missing peer program
// from a skip into a failure.
const RequireEnv = "EXITGATE_REQUIRE_PEERS"

// StartTimeout bounds how long a peer may take to start listening.
const StartTimeout = peers.StartTimeout

// The peers' types, so that tests need import only this package.
type (
	NginxConfig         = peers.NginxConfig
	TinyproxyConfig     = peers.TinyproxyConfig
	HAProxyConfig       = peers.HAProxyConfig
	FlaskConfig         = peers.FlaskConfig
	ExpressConfig       = peers.ExpressConfig
	FastifyConfig       = peers.FastifyConfig
	FlexibleConfig      = peers.FlexibleConfig
	RestifyConfig       = peers.RestifyConfig
	HonoConfig          = peers.HonoConfig
	WindowConfig        = peers.WindowConfig
	NestConfig          = peers.NestConfig
	NpmLimiterConfig    = peers.NpmLimiterConfig
	ThrottleConfig      = peers.ThrottleConfig
	ApacheQoSConfig     = peers.ApacheQoSConfig
	ApacheQoS           = peers.ApacheQoS
	ApacheEvasiveConfig = peers.ApacheEvasiveConfig
	ApacheEvasive       = peers.ApacheEvasive
	RackAttackConfig    = peers.RackAttackConfig
	RackAttack          = peers.RackAttack
	VarnishConfig       = peers.VarnishConfig
	Varnish             = peers.Varnish
	NodeApp             = peers.NodeApp
	GoServerConfig      = peers.GoServerConfig
	AccessEntry         = peers.AccessEntry
	Proxy               = peers.Proxy
	Redis               = peers.Redis
	HAProxy             = peers.HAProxy
	Flask               = peers.Flask
	Express             = peers.Express
	GoServer            = peers.GoServer
)

// Check ends the test for err: a missing peer program (peers.ErrNotInstalled)
// skips it, or fails it when EXITGATE_REQUIRE_PEERS=1; any other error fails
// it. A nil err does nothing.
func Check(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	switch {
	case !errors.Is(err, peers.ErrNotInstalled):
		t.Fatal(err)
	case os.Getenv(RequireEnv) == "1":
		t.Fatalf("%v; %s=1 forbids skipping", err, RequireEnv)
	default:
		t.Skip(err)
	}
}

// Require returns the path of bin (peers.LookPath); when it is missing the
// test is skipped, or failed under EXITGATE_REQUIRE_PEERS=1.
func Require(t testing.TB, bin string) string {
	t.Helper()
	path, err := peers.LookPath(bin)
	Check(t, err)
	return path
}

// start starts a peer with cfg (again on a new port when another process
// took the one it was given: peers.StartRetry), ends the test if that fails
// (Check), and closes the peer in t.Cleanup.
func start[C any, P interface{ Close() error }](t testing.TB, startPeer func(C) (P, error), cfg C) P {
	t.Helper()
	p, err := peers.StartRetry(func() (P, error) { return startPeer(cfg) })
	Check(t, err)
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

// Nginx is a running peers.Nginx with a test-friendly AccessLog.
type Nginx struct{ *peers.Nginx }

// StartNginx starts nginx with cfg (peers.StartNginx).
func StartNginx(t testing.TB, cfg NginxConfig) *Nginx {
	t.Helper()
	return &Nginx{start(t, peers.StartNginx, cfg)}
}

// AccessLog returns the access log once it holds at least want lines,
// polling for up to StartTimeout. nginx writes a line just after the
// response is sent, so a client that has read its response may be a moment
// ahead of the log; pass the number of requests made. want 0 returns what
// is there now.
func (n *Nginx) AccessLog(t testing.TB, want int) []AccessEntry {
	t.Helper()
	deadline := time.Now().Add(StartTimeout)
	for {
		out, err := n.Nginx.AccessLog()
		if err != nil {
			t.Fatalf("AccessLog: %v", err)
		}
		if len(out) >= want {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("AccessLog: %d lines after %v, want %d\n%s", len(out), StartTimeout, want, n.Tail())
		}
		time.Sleep(5 * time.Millisecond) // polling a file nginx appends to; bounded above
	}
}

// StartTinyproxy starts one tinyproxy exit (peers.StartTinyproxy).
func StartTinyproxy(t testing.TB, cfg TinyproxyConfig) *Proxy {
	t.Helper()
	return start(t, peers.StartTinyproxy, cfg)
}

// StartRedis starts redis-server without persistence (peers.StartRedis).
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	return start(t, peers.StartRedis, peers.RedisConfig{})
}

// StartHAProxy starts an haproxy stick-table target (peers.StartHAProxy).
func StartHAProxy(t testing.TB, cfg HAProxyConfig) *HAProxy {
	t.Helper()
	return start(t, peers.StartHAProxy, cfg)
}

// StartFlask starts a flask-limiter target (peers.StartFlask).
func StartFlask(t testing.TB, cfg FlaskConfig) *Flask {
	t.Helper()
	return start(t, peers.StartFlask, cfg)
}

// StartGoServer serves a Go limiter in-process (peers.StartGoServer).
func StartGoServer(t testing.TB, cfg GoServerConfig) *GoServer {
	t.Helper()
	return start(t, peers.StartGoServer, cfg)
}

// StartExpress starts an express-rate-limit target (peers.StartExpress).
func StartExpress(t testing.TB, cfg ExpressConfig) *Express {
	t.Helper()
	return start(t, peers.StartExpress, cfg)
}

// StartFastify starts a fastify @fastify/rate-limit target
// (peers.StartFastify).
func StartFastify(t testing.TB, cfg FastifyConfig) *NodeApp {
	t.Helper()
	return start(t, peers.StartFastify, cfg)
}

// StartFlexible starts a rate-limiter-flexible target (peers.StartFlexible).
func StartFlexible(t testing.TB, cfg FlexibleConfig) *NodeApp {
	t.Helper()
	return start(t, peers.StartFlexible, cfg)
}

// StartRestify starts a restify target throttled by its own plugin
// (peers.StartRestify).
func StartRestify(t testing.TB, cfg RestifyConfig) *NodeApp {
	t.Helper()
	return start(t, peers.StartRestify, cfg)
}

// StartHono starts a hono-rate-limiter target (peers.StartHono).
func StartHono(t testing.TB, cfg HonoConfig) *NodeApp {
	t.Helper()
	return start(t, peers.StartHono, cfg)
}

// StartKoa starts a koa-ratelimit target (peers.StartKoa).
func StartKoa(t testing.TB, cfg WindowConfig) *NodeApp {
	t.Helper()
	return start(t, peers.StartKoa, cfg)
}

// StartHapi starts a hapi-rate-limit target (peers.StartHapi).
func StartHapi(t testing.TB, cfg WindowConfig) *NodeApp {
	t.Helper()
	return start(t, peers.StartHapi, cfg)
}

// StartNpmLimiter starts an express target limited by the npm package
// limiter (peers.StartNpmLimiter).
func StartNpmLimiter(t testing.TB, cfg NpmLimiterConfig) *NodeApp {
	t.Helper()
	return start(t, peers.StartNpmLimiter, cfg)
}

// StartExpressThrottle starts an express-throttle target
// (peers.StartExpressThrottle).
func StartExpressThrottle(t testing.TB, cfg ThrottleConfig) *NodeApp {
	t.Helper()
	return start(t, peers.StartExpressThrottle, cfg)
}

// StartNest starts a NestJS @nestjs/throttler target (peers.StartNest).
func StartNest(t testing.TB, cfg NestConfig) *NodeApp {
	t.Helper()
	return start(t, peers.StartNest, cfg)
}

// StartApacheQoS starts an Apache httpd target limited by mod_qos
// (peers.StartApacheQoS).
func StartApacheQoS(t testing.TB, cfg ApacheQoSConfig) *ApacheQoS {
	t.Helper()
	return start(t, peers.StartApacheQoS, cfg)
}

// StartApacheEvasive starts an Apache httpd target guarded by mod_evasive
// (peers.StartApacheEvasive).
func StartApacheEvasive(t testing.TB, cfg ApacheEvasiveConfig) *ApacheEvasive {
	t.Helper()
	return start(t, peers.StartApacheEvasive, cfg)
}

// StartRackAttack starts a Ruby Rack::Attack target (peers.StartRackAttack).
func StartRackAttack(t testing.TB, cfg RackAttackConfig) *RackAttack {
	t.Helper()
	return start(t, peers.StartRackAttack, cfg)
}

// StartVarnish starts a Varnish target limited by vsthrottle
// (peers.StartVarnish).
func StartVarnish(t testing.TB, cfg VarnishConfig) *Varnish {
	t.Helper()
	return start(t, peers.StartVarnish, cfg)
}

// StartRedisWith starts a redis-server with cfg (peers.StartRedis).
func StartRedisWith(t testing.TB, cfg peers.RedisConfig) *Redis {
	t.Helper()
	return start(t, peers.StartRedis, cfg)
}

// StartRedisCluster starts a Redis Cluster of n masters
// (peers.StartRedisCluster).
func StartRedisCluster(t testing.TB, n int) *peers.RedisCluster {
	t.Helper()
	return start(t, peers.StartRedisCluster, n)
}
