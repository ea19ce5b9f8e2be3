package peers

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// TinyproxyConfig configures one tinyproxy exit. The zero value binds
// outgoing connections to 127.0.0.11 and needs no credentials.
type TinyproxyConfig struct {
	// Bind is the local source address of outgoing connections: what a
	// target sees as the exit IP. Empty means 127.0.0.11.
	Bind string
	// User and Password, when User is set, make tinyproxy demand Basic proxy
	// authentication and answer 407 otherwise.
	User, Password string
	// MaxClients caps concurrent connections. Default 50.
	MaxClients int
	// ConnectPorts, when set, are the only ports CONNECT may reach
	// (tinyproxy answers 403 to others); empty allows every port.
	ConnectPorts []int
	// Port is where it listens on 127.0.0.1; 0 picks a free one.
	Port int
	// Allow is the client address tinyproxy serves (it answers 403 to
	// every other). Empty means 127.0.0.1, where the tests connect from.
	Allow string
	// Dir holds the configuration and log. Empty: a temporary directory
	// that Close removes. When started as root tinyproxy runs as nobody,
	// which must be able to enter Dir.
	Dir string
}

// Proxy is a running tinyproxy on 127.0.0.1. It is safe for concurrent use.
type Proxy struct {
	proc           *process
	addr, bind     string
	user, password string
}

// StartTinyproxy starts tinyproxy in the foreground with cfg and returns
// once it accepts connections.
func StartTinyproxy(cfg TinyproxyConfig) (*Proxy, error) {
	bin, err := LookPath("tinyproxy")
	if err != nil {
		return nil, err
	}
	if cfg.Bind == "" {
		cfg.Bind = "127.0.0.11"
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = 50
	}
	name := "tinyproxy " + cfg.Bind
	if err := checkConf(name, "Bind", cfg.Bind); err != nil {
		return nil, err
	}
	if strings.ContainsAny(cfg.User+cfg.Password, " \t\r\n\"") {
		return nil, fmt.Errorf("%s: credentials with spaces or quotes are not supported", name)
	}
	port := cfg.Port
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	dir, err := newWorkDir(cfg.Dir, "tinyproxy")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	logPath := dir.join("tinyproxy.log")
	var conf strings.Builder
	if os.Geteuid() == 0 {
		conf.WriteString("User nobody\nGroup nogroup\n")
	}
	conf.WriteString("Listen 127.0.0.1\nPort " + strconv.Itoa(port) + "\n")
	conf.WriteString("Bind " + cfg.Bind + "\n")
	conf.WriteString("Timeout 30\nMaxClients " + strconv.Itoa(cfg.MaxClients) + "\nLogLevel Info\n")
	conf.WriteString(`LogFile "` + logPath + `"` + "\n")
	allow := cfg.Allow
	if allow == "" {
		allow = "127.0.0.1"
	}
	conf.WriteString("Allow " + allow + "\nDisableViaHeader Yes\n")
	for _, p := range cfg.ConnectPorts {
		conf.WriteString("ConnectPort " + strconv.Itoa(p) + "\n")
	}
	if cfg.User != "" {
		conf.WriteString("BasicAuth " + cfg.User + " " + cfg.Password + "\n")
	}
	confPath := dir.join("tinyproxy.conf")
	// tinyproxy drops to nobody when started as root and must still write
	// its log.
	err = writeFile(logPath, "", 0o666)
	if err == nil {
		err = writeFile(confPath, conf.String(), 0o644)
	}
	if err != nil {
		dir.remove()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	addr := hostPort("127.0.0.1", port)
	p, err := startProcess(procSpec{name: name, dir: dir, addr: addr, logs: []string{logPath},
		bin: bin, args: []string{"-d", "-c", confPath}})
	if err != nil {
		return nil, err
	}
	return &Proxy{proc: p, addr: addr, bind: cfg.Bind, user: cfg.User, password: cfg.Password}, nil
}

// Kill stops tinyproxy with SIGKILL, as a proxy that dies under the
// requests through it (Close still removes its directory).
func (p *Proxy) Kill() error { return p.proc.kill() }

// Addr returns the proxy's host:port.
func (p *Proxy) Addr() string { return p.addr }

// Bind returns the outgoing address, the exit IP a target sees.
func (p *Proxy) Bind() string { return p.bind }

// URL returns the proxy URL, with the configured credentials if any,
// e.g. "http://user:pass@127.0.0.1:40123".
func (p *Proxy) URL() string {
	u := url.URL{Scheme: "http", Host: p.addr}
	if p.user != "" {
		u.User = url.UserPassword(p.user, p.password)
	}
	return u.String()
}

// Tail returns the tail of tinyproxy's output and log.
func (p *Proxy) Tail() string { return p.proc.Tail() }

// Close kills tinyproxy (SIGKILL) and removes a temporary directory.
func (p *Proxy) Close() error { return p.proc.Close() }
