package peers

import (
	"fmt"
	"net"
	"os"
)

// blockPage is what a blocked address gets (TurnBan): a Cloudflare-style
// block page, which classify reads as a ban. No single quote: it sits in a
// quoted nginx string.
const blockPage = `<!DOCTYPE html><html><head><title>Attention Required! | Cloudflare</title></head>` +
	`<body><div id="cf-error-details"><h1>Sorry, you have been blocked</h1></div></body></html>`

// Turns of an nginx target against its clients (NginxConfig).
const (
	TurnLockout = "lockout" // every request 429
	TurnHalf    = "half"    // every address held to HalfRate as well
	TurnSlow    = "slow"    // the SlowAddrs held to SlowRate as well
	TurnBan     = "ban"     // the Block addresses get block pages
)

// checkHostile checks the hostile parts of cfg: addresses nginx's geo and
// map blocks take as they are, and rates.
func checkHostile(cfg NginxConfig) error {
	for _, a := range append(append([]string(nil), cfg.Block...), cfg.SlowAddrs...) {
		if net.ParseIP(a) == nil {
			return fmt.Errorf("nginx: %q is not an address", a)
		}
	}
	for name, r := range map[string]string{"SlowRate": cfg.SlowRate, "HalfRate": cfg.HalfRate} {
		if r != "" {
			if err := checkConf("nginx", name, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// Turn turns the running nginx against its clients (on) or back (off),
// mid-run and without a reload: each turn is a file the configuration
// tests on every request (`if (-f ...)`), so it applies from the next
// request on. turn is TurnLockout, TurnHalf, TurnSlow or TurnBan.
func (n *Nginx) Turn(turn string, on bool) error {
	switch turn {
	case TurnLockout, TurnHalf, TurnSlow, TurnBan:
	default:
		return fmt.Errorf("nginx: unknown turn %q", turn)
	}
	path := n.dir.join("turn-" + turn)
	if !on {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("nginx: turn %s off: %w", turn, err)
		}
		return nil
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		return fmt.Errorf("nginx: turn %s on: %w", turn, err)
	}
	return nil
}
