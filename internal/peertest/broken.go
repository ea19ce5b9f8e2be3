package peertest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Modes of BrokenProxy.
const (
	// Garbage answers every connection with bytes of no protocol at all.
	Garbage = "garbage"
	// Silent accepts connections and never answers: a black hole.
	Silent = "silent"
	// SOCKSReject is a SOCKS5 server that asks for a user name and password
	// and refuses any.
	SOCKSReject = "socks-reject"
)

// BrokenProxy listens on 127.0.0.1 and plays a proxy broken in the given
// mode until the test ends; it returns the address. Use it in front of
// exits that should count as failing.
func BrokenProxy(t testing.TB, mode string) string {
	t.Helper()
	if mode != Garbage && mode != Silent && mode != SOCKSReject {
		t.Fatalf("BrokenProxy: unknown mode %q", mode)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { serveBroken(c, mode) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// DeadAddr returns a loopback address nothing listens on (one listened on
// and closed): a proxy or server that refuses every connection.
func DeadAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func serveBroken(c net.Conn, mode string) {
	switch mode {
	case Garbage:
		c.Write([]byte("\x00\x17 not a proxy at all \xff\r\n\r\n"))
	case SOCKSReject:
		var b [256]byte
		if _, err := io.ReadFull(c, b[:2]); err != nil || b[0] != 5 {
			break
		}
		io.ReadFull(c, b[:b[1]])
		c.Write([]byte{5, 2}) // username/password, please
		io.ReadFull(c, b[:2]) // version 1, user length
		io.ReadFull(c, b[:b[1]])
		io.ReadFull(c, b[:1]) // password length
		io.ReadFull(c, b[:b[0]])
		c.Write([]byte{1, 1}) // refused
		c.Close()
		return
	}
	io.Copy(io.Discard, c) // read until closed, never answer
}
