package peers

import (
	"fmt"
	"strconv"
)

// RedisConfig configures a redis-server. The zero value is ready.
type RedisConfig struct {
	// Dir is its working directory. Empty: a temporary directory that Close
	// removes.
	Dir string
}

// Redis is a running redis-server on 127.0.0.1 with persistence off. It is
// safe for concurrent use.
type Redis struct {
	proc *process
	addr string
}

// StartRedis starts redis-server on a free port, without RDB snapshots or
// an append-only file, and returns once it accepts connections.
func StartRedis(cfg RedisConfig) (*Redis, error) {
	bin, err := LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	dir, err := newWorkDir(cfg.Dir, "redis")
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	addr := hostPort("127.0.0.1", port)
	p, err := startProcess(procSpec{name: "redis-server " + addr, dir: dir, addr: addr, bin: bin, args: []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir.path, "--daemonize", "no"}})
	if err != nil {
		return nil, err
	}
	return &Redis{proc: p, addr: addr}, nil
}

// Addr returns the host:port redis-server listens on.
func (r *Redis) Addr() string { return r.addr }

// Tail returns the tail of redis-server's output.
func (r *Redis) Tail() string { return r.proc.Tail() }

// Close kills redis-server (SIGKILL) and removes a temporary directory.
func (r *Redis) Close() error { return r.proc.Close() }
