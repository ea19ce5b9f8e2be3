package urlfile

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/exitgate/exitgate/frontier/sqlite"
)

// writeURLFile writes n URLs of one host, one a line, every 1,000th line a
// bad one (port 0), and returns the file's path.
func writeURLFile(tb testing.TB, n int) string { return writeURLs(tb, n, 1) }

// writeURLs writes n URLs over hosts hosts (one after the other, in turn),
// one a line, every 1,000th line a bad one (port 0), and returns the file's
// path.
func writeURLs(tb testing.TB, n, hosts int) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "urls.txt")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range n {
		if i%1000 == 999 {
			fmt.Fprintf(w, "http://127.0.0.1:0/bad/%d\n", i)
			continue
		}
		if hosts == 1 {
			fmt.Fprintf(w, "http://127.0.0.1:8080/catalog/item/%d?ref=list&page=%d\n", i, i%97)
		} else {
			fmt.Fprintf(w, "https://www.shop%d.example/catalog/item/%d?ref=list&page=%d\n", i%hosts, i, i%97)
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// BenchmarkPushFile loads a file of 1,000,000 URLs (0.1% bad lines) into a
// new SQLite frontier per op: read, checked line by line, pushed, and the
// frontier closed (a checkpoint the load left to do is part of its cost).
// The URLs are of one host, or of 1,000 hosts in turn. URLs/s is the figure.
//
//	go test -run '^$' -bench PushFile -benchtime=3x ./internal/urlfile
func BenchmarkPushFile(b *testing.B) {
	for _, hosts := range []int{1, 1000} {
		b.Run(fmt.Sprintf("hosts=%d", hosts), func(b *testing.B) { benchPushFile(b, hosts) })
	}
}

func benchPushFile(b *testing.B, hosts int) {
	const n = 1_000_000
	path := writeURLs(b, n, hosts)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		b.StopTimer()
		fr, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(b.TempDir(), fmt.Sprintf("f%d.db", i))})
		if err != nil {
			b.Fatal(err)
		}
		i++
		b.StartTimer()
		l, err := Push(ctx, fr, path)
		added, bad := l.Added, l.Bad
		if err != nil || added != n-n/1000 || bad.Count() != n/1000 {
			b.Fatalf("Push = %d added, %d bad, %v; want %d, %d", added, bad.Count(), err, n-n/1000, n/1000)
		}
		fr.Close()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "URLs/s")
}
