package pool

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// socksServer is a minimal RFC 1928/1929 SOCKS5 server for tests: username/password
// auth against user/pass, CONNECT only. It records the user names offered.
type socksServer struct {
	ln         net.Listener
	user, pass string
	mu         sync.Mutex
	users      []string
	wg         sync.WaitGroup
}

func startSocks(t *testing.T, user, pass string) *socksServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &socksServer{ln: ln, user: user, pass: pass}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() { s.serve(c) })
		}
	})
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *socksServer) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	hdr := make([]byte, 2)
	if _, err := io.ReadFull(r, hdr); err != nil || hdr[0] != 5 {
		return
	}
	if _, err := io.ReadFull(r, make([]byte, hdr[1])); err != nil {
		return
	}
	c.Write([]byte{5, 2}) // username/password
	readField := func() string {
		n, err := r.ReadByte()
		if err != nil {
			return ""
		}
		b := make([]byte, n)
		io.ReadFull(r, b)
		return string(b)
	}
	if v, err := r.ReadByte(); err != nil || v != 1 {
		return
	}
	u, p := readField(), readField()
	s.mu.Lock()
	s.users = append(s.users, u)
	s.mu.Unlock()
	if u != s.user || p != s.pass {
		c.Write([]byte{1, 1})
		return
	}
	c.Write([]byte{1, 0})
	req := make([]byte, 4)
	if _, err := io.ReadFull(r, req); err != nil || req[1] != 1 {
		return
	}
	var host string
	switch req[3] {
	case 1:
		b := make([]byte, 4)
		io.ReadFull(r, b)
		host = net.IP(b).String()
	case 3:
		host = readField()
	case 4:
		b := make([]byte, 16)
		io.ReadFull(r, b)
		host = net.IP(b).String()
	}
	pb := make([]byte, 2)
	io.ReadFull(r, pb)
	up, err := net.Dial("tcp", net.JoinHostPort(host, itoa(int(binary.BigEndian.Uint16(pb)))))
	if err != nil {
		c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0})
		return
	}
	defer up.Close()
	c.Write([]byte{5, 0, 0, 1, 127, 0, 0, 1, 0, 0})
	_ = up.SetDeadline(time.Now().Add(10 * time.Second))
	go func() {
		io.Copy(up, r)
		up.Close() // client gone: end the other direction too
	}()
	io.Copy(c, up)
}

func itoa(n int) string {
	var b [8]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

func TestSocks5Exit(t *testing.T) {
	srv := echoServer(t)
	s := startSocks(t, "sam", "SockPw9")
	for _, tt := range []struct {
		line    string
		problem Problem
	}{
		{"socks5://sam:SockPw9@" + s.ln.Addr().String(), NoProblem},
		{"socks5h://sam:SockPw9@" + s.ln.Addr().String(), NoProblem},
		{"socks5://sam:bad@" + s.ln.Addr().String(), ProxyError},
	} {
		e := mustExit(t, tt.line)
		res, err := Check(context.Background(), []Exit{e}, CheckConfig{EchoURL: srv.URL, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		r := res[0]
		if r.Problem != tt.problem || (tt.problem == NoProblem && r.IP.String() != "127.0.0.1") {
			t.Errorf("Check(%v) = %v %v %q, want %v", e, r.Problem, r.IP, r.Detail, tt.problem)
		}
		if strings.Contains(r.Detail, "SockPw9") {
			t.Errorf("detail %q leaks the password", r.Detail)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Three requests, and the check of the proxy after the refused one.
	if len(s.users) != 4 || s.users[0] != "sam" {
		t.Errorf("SOCKS server saw users %q, want sam four times", s.users)
	}
}
