package pool

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exitgate/exitgate/classify"
	"github.com/exitgate/exitgate/internal/peertest"
	"github.com/exitgate/exitgate/verdict"
)

// getOver sends one HTTP/1.1 request for /ip over an open tunnel and
// returns the body.
func getOver(t *testing.T, c net.Conn, host string) string {
	t.Helper()
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET /ip HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading through the tunnel: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return string(b)
}

// TestDialThroughEachKind: a tunnel through a real tinyproxy (CONNECT), a
// SOCKS5 proxy and a bind exit reaches the target from the exit's address.
func TestDialThroughEachKind(t *testing.T) {
	ng := peertest.StartNginx(t, peertest.NginxConfig{Rate: "100r/s", Burst: 50})
	tp := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: "127.0.0.14", User: "ann", Password: "TunnelPw7"})
	socks := startSocks(t, "sam", "SockPw9")
	for _, tc := range []struct {
		line, want string
	}{
		{tp.URL(), "127.0.0.14"},
		{"socks5://sam:SockPw9@" + socks.ln.Addr().String(), "127.0.0.1"},
		{"bind:127.0.0.15", "127.0.0.15"},
		{"direct", "127.0.0.1"},
	} {
		e := mustExit(t, tc.line)
		c, err := e.Dial(context.Background(), ng.Addr(), DialConfig{})
		if err != nil {
			t.Errorf("Dial via %v: %v", e, err)
			continue
		}
		if got := getOver(t, c, ng.Addr()); got != tc.want {
			t.Errorf("via %v the target saw %q, want %q", e, got, tc.want)
		}
	}
}

// TestDialProxyFailures: refusals by the proxy are proxy failures for
// classify, and no error carries the password.
func TestDialProxyFailures(t *testing.T) {
	tp := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: "127.0.0.14", User: "ann", Password: "TunnelPw7"})
	socks := startSocks(t, "sam", "SockPw9")
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	for _, line := range []string{
		strings.Replace(tp.URL(), "TunnelPw7", "WrongPw1", 1),
		"socks5://sam:WrongPw2@" + socks.ln.Addr().String(),
		"http://u:WrongPw3@" + deadAddr,
		"http://u:WrongPw4@" + peertest.BrokenProxy(t, peertest.Garbage),
	} {
		e := mustExit(t, line)
		c, err := e.Dial(context.Background(), "127.0.0.1:9", DialConfig{Timeout: 5 * time.Second})
		if err == nil {
			c.Close()
			t.Errorf("Dial via %v succeeded, want a proxy failure", e)
			continue
		}
		if v := classify.Error(err); v != verdict.ProxyFailure {
			t.Errorf("Dial via %v: %v is %v, want proxy_failure", e, err, v)
		}
		if strings.Contains(err.Error(), "WrongPw") {
			t.Errorf("Dial via %v: error %q shows the password", e, err)
		}
	}
}

// TestDialControlGuardsDirectOnly: Control sees the target address of a
// direct exit and may refuse it; a proxy exit's connection to its proxy is
// not subject to it.
func TestDialControlGuardsDirectOnly(t *testing.T) {
	ng := peertest.StartNginx(t, peertest.NginxConfig{Rate: "100r/s", Burst: 50})
	tp := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: "127.0.0.14"})
	refuse := errors.New("refused by guard")
	var seen []string
	cfg := DialConfig{Control: func(_, address string, _ syscall.RawConn) error {
		seen = append(seen, address)
		return refuse
	}}
	if _, err := mustExit(t, "direct").Dial(context.Background(), ng.Addr(), cfg); !errors.Is(err, refuse) {
		t.Errorf("direct Dial with a refusing Control = %v, want the refusal", err)
	}
	if len(seen) != 1 || seen[0] != ng.Addr() {
		t.Errorf("Control saw %v, want [%s]", seen, ng.Addr())
	}
	c, err := mustExit(t, tp.URL()).Dial(context.Background(), ng.Addr(), cfg)
	if err != nil {
		t.Fatalf("proxy Dial with a refusing Control: %v, want it to ignore Control", err)
	}
	c.Close()
}
