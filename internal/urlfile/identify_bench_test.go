package urlfile

import "testing"

// BenchmarkIdentify reads a file of 1,000,000 URLs for its Identity, as a
// crawl does before it loads the list: URLs/s is the figure.
//
//	go test -run '^$' -bench Identify -benchtime=3x ./internal/urlfile
func BenchmarkIdentify(b *testing.B) {
	const n = 1_000_000
	path := writeURLFile(b, n)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Identify(path); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "URLs/s")
}
