package pool

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func BenchmarkParse(b *testing.B) {
	var sb strings.Builder
	for i := range 1000 {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&sb, "http://user%d:pass%d@10.0.%d.%d:8080\n", i, i, i/256, i%256)
		case 1:
			fmt.Fprintf(&sb, "10.1.%d.%d:3128:user:pass\n", i/256, i%256)
		case 2:
			fmt.Fprintf(&sb, "# comment %d\n", i)
		case 3:
			fmt.Fprintf(&sb, "socks5h://10.2.%d.%d:1080\n", i/256, i%256)
		}
	}
	input := sb.String()
	b.ReportAllocs()
	b.SetBytes(int64(len(input)))
	for b.Loop() {
		if _, err := Parse(strings.NewReader(input), "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProxiedRoundTrip sends requests through a proxy exit (a local
// HTTP server answering the proxied GETs itself), with the watch for a
// silent proxy (TransportConfig.SilentAfter) on and off: its cost on a
// request answered at once, side by side.
//
//	go test -run '^$' -bench ProxiedRoundTrip ./pool
func BenchmarkProxiedRoundTrip(b *testing.B) {
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok"))
	}))
	defer proxy.Close()
	for _, c := range []struct {
		name   string
		silent time.Duration
	}{{"watch=off", -1}, {"watch=2s", 0}} {
		b.Run(c.name, func(b *testing.B) {
			tr := mustExit(b, proxy.URL).Transport(TransportConfig{SilentAfter: c.silent})
			defer tr.CloseIdleConnections()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest("GET", "http://127.0.0.1:9/x", nil)
					resp, err := tr.RoundTrip(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		})
	}
}
