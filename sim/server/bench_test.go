package server

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkHandle measures one virtual-time decision: 20 exits sending in
// turn, the clock advancing 10 ms per request.
func BenchmarkHandle(b *testing.B) {
	for _, sc := range Scenarios() {
		switch sc.Name {
		case "per-ip-token-bucket", "per-ip-sliding-log", "per-ip-penalising", "per-ip-headers-xrl", "per-ip-headers-ietf", "bans", "overload-503":
		default:
			continue
		}
		b.Run(sc.Name, func(b *testing.B) {
			s, err := New(sc.Config)
			if err != nil {
				b.Fatal(err)
			}
			var ips [20]string
			for i := range ips {
				ips[i] = "127.0.0." + strconv.Itoa(11+i)
			}
			now := t0
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				s.Handle(SimRequest{IP: ips[i%20], Now: now})
				i++
				now = now.Add(10 * time.Millisecond)
			}
		})
	}
}
