package peertest

import (
	"strconv"
	"testing"
)

// Redis is a running redis-server on 127.0.0.1 with persistence off. It is safe for
// concurrent use.
type Redis struct {
	addr string
}

// StartRedis starts redis-server in a temporary directory on a free port, without RDB
// snapshots or an append-only file, and returns once it accepts connections.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	bin := Require(t, "redis-server")
	dir := t.TempDir()
	port := FreePort(t)
	addr := hostPort("127.0.0.1", port)
	start(t, "redis", dir, addr, nil, bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no")
	return &Redis{addr: addr}
}

// Addr returns the host:port redis-server listens on.
func (r *Redis) Addr() string { return r.addr }
