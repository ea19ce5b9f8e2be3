package peerbench

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/exitgate/exitgate/internal/peers"
	"github.com/exitgate/exitgate/pool"
)

// Exits is a pool of running tinyproxy exits, each binding its outgoing
// connections to its own loopback address.
type Exits struct {
	proxies []*peers.Proxy
	// File is the proxies file, one proxy URL a line, as `exitgate crawl
	// --proxies` reads it.
	File string
	// Pool is File parsed by the production parser.
	Pool []pool.Exit
	// Bind maps an exit's ID (pool.Exit.ID, as the crawl names it) to the
	// address a target sees.
	Bind map[string]string
}

// ExitAddrs returns n loopback addresses from first on, skipping any that
// end in .0 or .255, so that slot k of a parallel matrix can take
// ExitAddrs(first, n*(k+1))[n*k:].
func ExitAddrs(first netip.Addr, n int) ([]netip.Addr, error) {
	var out []netip.Addr
	for a := first; len(out) < n; a = a.Next() {
		if !a.Is4() || !netip.MustParsePrefix("127.0.0.0/8").Contains(a) {
			return nil, fmt.Errorf("exit addresses from %v: %d do not fit in 127.0.0.0/8", first, n)
		}
		if b := a.As4(); b[3] == 0 || b[3] == 255 {
			continue
		}
		out = append(out, a)
	}
	return out, nil
}

// StartExits starts one tinyproxy per address and writes the proxies file
// into dir. Close stops them all.
func StartExits(addrs []netip.Addr, dir string) (*Exits, error) {
	e := &Exits{Bind: map[string]string{}}
	var lines []string
	for _, a := range addrs {
		// Each in a temporary directory: tinyproxy runs as nobody, which
		// may not be able to enter dir.
		p, err := peers.StartRetry(func() (*peers.Proxy, error) {
			return peers.StartTinyproxy(peers.TinyproxyConfig{Bind: a.String()})
		})
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("exit %v: %w", a, err)
		}
		e.proxies = append(e.proxies, p)
		lines = append(lines, p.URL())
	}
	e.File = filepath.Join(dir, "proxies.txt")
	if err := os.WriteFile(e.File, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		e.Close()
		return nil, err
	}
	parsed, err := pool.ParseFile(e.File)
	if err != nil {
		e.Close()
		return nil, err
	}
	if len(parsed) != len(e.proxies) {
		e.Close()
		return nil, fmt.Errorf("%s: %d exits parsed from %d proxies", e.File, len(parsed), len(e.proxies))
	}
	e.Pool = parsed
	for i, x := range parsed {
		e.Bind[x.ID()] = e.proxies[i].Bind()
	}
	return e, nil
}

// Tail returns the tails of every exit's logs.
func (e *Exits) Tail() string {
	var b strings.Builder
	for _, p := range e.proxies {
		b.WriteString(p.Tail())
	}
	return b.String()
}

// Close stops every exit.
func (e *Exits) Close() error {
	var errs []error
	for _, p := range e.proxies {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}
