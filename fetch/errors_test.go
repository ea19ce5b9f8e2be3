package fetch

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/classify"
	"github.com/exitgate/exitgate/verdict"
)

// selfSigned serves TLS with httptest's own certificate, which no client
// trusts but its own.
func selfSigned(t *testing.T) string {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// TestErrorClass: the errors net/http gives for servers that misbehave on
// a real loopback connection are named for what happened, not "transport
// error": a body cut short, a reply cut inside its header, a connection
// closed before any reply, a refused connection.
func TestErrorClass(t *testing.T) {
	serve := func(t *testing.T, reply string) string {
		t.Helper()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.SetDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 4096)
				c.Read(buf) // the request
				io.WriteString(c, reply)
				c.Close()
			}
		}()
		return "http://" + ln.Addr().String() + "/"
	}
	get := func(url string) error {
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		return err
	}
	refused := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return "http://" + addr + "/"
	}
	for _, tc := range []struct {
		name, url, want string
	}{
		{"body cut short", serve(t, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b"), "truncated response"},
		{"header cut short", serve(t, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"), "truncated response"},
		{"header cut in a line", serve(t, "HTTP/1.1 200 OK\r\nContent-Le"), "malformed response head (a control character in a header, a line without a colon, or a head cut short)"},
		{"a control character in a header", serve(t, "HTTP/1.1 200 OK\r\nX-A: a\x01b\r\nContent-Length: 2\r\n\r\nok"), "malformed response head (a control character in a header, a line without a colon, or a head cut short)"},
		// net/http refuses these heads with errors of no exported type:
		// read by their words (each was "transport error").
		{"garbage", serve(t, "SSH-2.0-OpenSSH_9.2\r\n\r\n"), "malformed response head (not HTTP)"},
		{"Content-Length twice", serve(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok"), "malformed response head (Content-Length given twice)"},
		{"Content-Length not a number", serve(t, "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nok"), "malformed response head (a Content-Length that is not a number)"},
		{"closed at once", serve(t, ""), "closed without a response"},
		{"refused", refused(), "connection refused"},
		// Neither is fetched better asked again: both are the URL's fate.
		{"gzip over a plain body", serve(t, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 27\r\n\r\nplain text that is not gzip"), "corrupt compressed body"},
		{"self-signed certificate", selfSigned(t), "tls certificate of an unknown authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := get(tc.url)
			if err == nil {
				t.Fatal("no error")
			}
			if got := ErrorClass(err); got != tc.want {
				t.Errorf("ErrorClass(%v) = %q, want %q", err, got, tc.want)
			}
			if strings.HasPrefix(tc.want, "tls") || strings.HasPrefix(tc.want, "corrupt") {
				if v := classify.Error(err); v != verdict.Fatal {
					t.Errorf("classify.Error(%v) = %v, want fatal", err, v)
				}
			}
		})
	}
}
