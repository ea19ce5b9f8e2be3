package fetch_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/pool"
)

// ExampleNewTransport plugs the limiter into a plain http.Client: each
// request waits for a lane of its host, goes out through the exit the
// limiter chose, and its status and rate-limit headers teach that lane.
func ExampleNewTransport() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	}))
	defer site.Close()

	// One list of exits, as a proxies file holds them (pool.ParseFile):
	// here two that need no proxy, this machine's own address and a bound
	// loopback source address.
	exits, err := pool.Parse(strings.NewReader("direct\nbind:127.0.0.1\n"), "exits")
	if err != nil {
		log.Fatal(err)
	}
	// The limiter's exits are that list: nothing else to keep in step.
	// Each (host, exit) lane starts at 20 requests per second and learns
	// from there.
	rt, err := fetch.NewTransport(exits, fetch.TransportConfig{Limit: limit.Config{FirstGuess: limit.PerSecond(20)}})
	if err != nil {
		log.Fatal(err)
	}
	var mu sync.Mutex
	used := map[string]int{}
	rt.OnSent = func(s fetch.Sent) { mu.Lock(); used[s.Member]++; mu.Unlock() }
	client := &http.Client{Transport: rt}
	defer client.CloseIdleConnections()

	for range 4 {
		resp, err := client.Get(site.URL + "/")
		if err != nil {
			log.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Println(resp.Status)
	}
	// An unpinned request takes an exit its host has not used yet first, so
	// the requests went out on both exits.
	fmt.Println("exits used:", len(used))
	// Output:
	// 200 OK
	// 200 OK
	// 200 OK
	// 200 OK
	// exits used: 2
}
