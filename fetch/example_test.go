package fetch_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
)

// ExampleTransport plugs the limiter into a plain http.Client: each request
// waits for a lane of its host, goes out through the exit the limiter chose,
// and its status and rate-limit headers teach that lane.
func ExampleTransport() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	}))
	defer site.Close()

	// Each (host, exit) lane starts at 20 requests per second and learns
	// from there; the in-memory store keeps the state in this process.
	lim, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(20)})
	if err != nil {
		log.Fatal(err)
	}
	lim.SetExits([]limit.Exit{{ID: "exit-a"}, {ID: "exit-b"}})

	// In production each RoundTripper comes from pool.Exit.Transport, and
	// sends through a proxy or from a bound source address; here both exits
	// are direct connections.
	exits := map[string]http.RoundTripper{
		"exit-a": http.DefaultTransport.(*http.Transport).Clone(),
		"exit-b": http.DefaultTransport.(*http.Transport).Clone(),
	}
	client := &http.Client{Transport: &fetch.Transport{Limiter: lim, Exits: exits}}
	defer client.CloseIdleConnections()

	used := map[string]int{}
	for range 4 {
		resp, err := client.Get(site.URL + "/")
		if err != nil {
			log.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		exit := resp.Header.Get(fetch.ExitHeader)
		_, known := exits[exit]
		used[exit]++
		fmt.Println(resp.Status, "via a known exit:", known)
	}
	// An unpinned request takes an exit its host has not used yet first, so
	// the first two requests went out on different exits.
	fmt.Println("exits used:", len(used))
	// Output:
	// 200 OK via a known exit: true
	// 200 OK via a known exit: true
	// 200 OK via a known exit: true
	// 200 OK via a known exit: true
	// exits used: 2
}
