package peers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// RedisConfig configures a redis-server. The zero value is ready.
type RedisConfig struct {
	// Dir is its working directory. Empty: a temporary directory that Close
	// removes.
	Dir string
	// AppendOnly turns on the append-only file, so that a redis-server
	// killed with SIGKILL and restarted (Kill, Restart) comes back with
	// every write it acknowledged: redis-server writes the file before it
	// replies, and the kernel keeps what was written when the process dies.
	// It is not fsynced (appendfsync no): that guards against the machine
	// going down, which no test does, and appendfsync always stalled the
	// server for seconds at a time on this VM's disk (three fleet workers
	// timed out on it five times in half a minute, and the crawl did not
	// end within its minute).
	AppendOnly bool
	// Cluster starts it with cluster mode on (StartRedisCluster joins such
	// nodes into a cluster).
	Cluster bool
}

// Redis is a running redis-server on 127.0.0.1. It is safe for concurrent
// use.
type Redis struct {
	mu   sync.Mutex
	proc *process
	spec procSpec
	dir  workDir
	addr string
}

// redisPort is a free port for redis-server; a cluster node also binds
// its cluster bus 10000 above it (so the port must be 55535 or less), and
// that one must be free too.
func redisPort(cluster bool) (int, error) {
	for range 16 {
		port, err := FreePort()
		if err != nil || !cluster {
			return port, err
		}
		if port > 65535-clusterBusOffset {
			continue
		}
		if l, err := net.Listen("tcp", hostPort("127.0.0.1", port+clusterBusOffset)); err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, errors.New("no free port with a free cluster bus port 10000 above it")
}

// clusterBusOffset is how far above its port a Redis Cluster node listens
// for its peers.
const clusterBusOffset = 10000

// StartRedis starts redis-server on a free port, without RDB snapshots (and
// without an append-only file unless cfg.AppendOnly), and returns once it
// accepts connections.
func StartRedis(cfg RedisConfig) (*Redis, error) {
	bin, err := LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	port, err := redisPort(cfg.Cluster)
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	dir, err := newWorkDir(cfg.Dir, "redis")
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	addr := hostPort("127.0.0.1", port)
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--dir", dir.path, "--daemonize", "no"}
	if cfg.AppendOnly {
		args = append(args, "--appendonly", "yes", "--appendfsync", "no")
	} else {
		args = append(args, "--appendonly", "no")
	}
	if cfg.Cluster {
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "2000")
	}
	spec := procSpec{name: "redis-server " + addr, dir: dir, addr: addr, bin: bin, args: args}
	p, err := startProcess(spec)
	if err != nil {
		return nil, err
	}
	spec.dir = workDir{path: dir.path} // a restart must not remove it on failure
	return &Redis{proc: p, spec: spec, dir: dir, addr: addr}, nil
}

// Addr returns the host:port redis-server listens on.
func (r *Redis) Addr() string { return r.addr }

// URL returns redis://Addr.
func (r *Redis) URL() string { return "redis://" + r.addr }

// Tail returns the tail of redis-server's output.
func (r *Redis) Tail() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.proc.Tail()
}

// Kill stops redis-server with SIGKILL and keeps its directory, so that
// Restart brings it back with what it persisted.
func (r *Redis) Kill() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.proc.kill()
}

// Restart starts redis-server again on the same port and directory after
// Kill (it kills a running one first).
func (r *Redis) Restart() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.proc.kill(); err != nil {
		return err
	}
	p, err := startProcess(r.spec)
	if err != nil {
		return err
	}
	r.proc = p
	return nil
}

// Close kills redis-server (SIGKILL) and removes a temporary directory.
func (r *Redis) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.proc.kill()
	r.dir.remove()
	return err
}

// kill sends SIGKILL to the process group and waits for the leader, leaving
// the directory in place. It is safe to call more than once.
func (p *process) kill() error {
	if !p.Running() {
		return nil
	}
	pid := p.cmd.Process.Pid
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		_ = p.cmd.Process.Kill()
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("%s (pid %d) still running 5s after SIGKILL", p.name, pid)
	}
}

// RedisCluster is a Redis Cluster of masters without replicas, each a
// redis-server on 127.0.0.1. It is safe for concurrent use.
type RedisCluster struct {
	Nodes []*Redis
}

// StartRedisCluster starts n redis-servers in cluster mode and joins them
// with redis-cli --cluster create (the 16384 slots spread over n masters),
// returning once every node reports the cluster ok.
func StartRedisCluster(n int) (*RedisCluster, error) {
	if n < 3 {
		return nil, fmt.Errorf("redis cluster: want at least 3 masters, got %d", n)
	}
	cli, err := LookPath("redis-cli")
	if err != nil {
		return nil, err
	}
	c := &RedisCluster{}
	args := []string{"--cluster", "create"}
	for range n {
		r, err := StartRedis(RedisConfig{Cluster: true})
		if err != nil {
			c.Close()
			return nil, err
		}
		c.Nodes = append(c.Nodes, r)
		args = append(args, r.Addr())
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, r := range c.Nodes {
		host, port := splitAddr(r.Addr())
		for {
			out, _ := exec.CommandContext(ctx, cli, "-h", host, "-p", port, "cluster", "info").Output()
			if containsLine(string(out), "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				return nil, fmt.Errorf("redis cluster: %s not ok after 20s:\n%s", r.Addr(), out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c, nil
}

// Addrs returns every node's host:port.
func (c *RedisCluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, r := range c.Nodes {
		out[i] = r.Addr()
	}
	return out
}

// Close kills every node.
func (c *RedisCluster) Close() error {
	var first error
	for _, r := range c.Nodes {
		if err := r.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func splitAddr(addr string) (string, string) {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			return addr[:i], addr[i+1:]
		}
	}
	return addr, ""
}

func containsLine(s, line string) bool {
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		l := s[:i]
		if len(l) > 0 && l[len(l)-1] == '\r' {
			l = l[:len(l)-1]
		}
		if l == line {
			return true
		}
		if i == len(s) {
			break
		}
		s = s[i+1:]
	}
	return false
}
