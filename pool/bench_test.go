package pool

import (
	"fmt"
	"strings"
	"testing"
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
