package rlheader

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// now (defined in retryafter_test.go) is 2026-03-26T16:00:00Z, Unix 1774540800.
const nowUnix = 1774540800

func dur(s *Signal, has bool, d time.Duration) string {
	if !has {
		return "-"
	}
	return d.String()
}

func num(has bool, n int64) string {
	if !has {
		return "-"
	}
	return fmt.Sprint(n)
}

// summary renders the top-level numbers; "-" means unknown.
func summary(s *Signal) string {
	return fmt.Sprintf("ra=%s lim=%s rem=%s win=%s reset=%s",
		dur(s, s.HasRetryAfter, s.RetryAfter), num(s.HasLimit, s.Limit),
		num(s.HasRemaining, s.Remaining), dur(s, s.HasWindow, s.Window), dur(s, s.HasReset, s.Reset))
}

func sources(s *Signal) string {
	return fmt.Sprintf("ra=%s lim=%s rem=%s win=%s reset=%s", s.Sources.RetryAfter, s.Sources.Limit,
		s.Sources.Remaining, s.Sources.Window, s.Sources.Reset)
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

type parseCase struct {
	name    string
	h       http.Header
	prof    Profile
	want    string // summary
	sources string // optional
	ignored []string
}

var parseCases = []parseCase{
	{
		name: "nothing",
		h:    hdr("Content-Type", "text/html", "Date", "Thu, 26 Mar 2026 16:00:00 GMT"),
		want: "ra=- lim=- rem=- win=- reset=-",
	},
	{
		name: "GitHub epoch reset",
		h: hdr("Date", "Thu, 26 Mar 2026 16:00:00 GMT", "x-ratelimit-limit", "60", "x-ratelimit-remaining", "0",
			"x-ratelimit-reset", fmt.Sprint(nowUnix+1800), "x-ratelimit-used", "60", "x-ratelimit-resource", "core"),
		want:    "ra=- lim=60 rem=0 win=- reset=30m0s",
		sources: "ra= lim=X-Ratelimit-Limit rem=X-Ratelimit-Remaining win= reset=X-Ratelimit-Reset",
	},
	{
		name: "Discord decimals and Reset-After",
		h: hdr("Retry-After", "65", "X-RateLimit-Limit", "5", "X-RateLimit-Remaining", "0",
			"X-RateLimit-Reset", fmt.Sprint(nowUnix+64)+".123", "X-RateLimit-Reset-After", "64.57",
			"X-RateLimit-Bucket", "abcd1234", "X-RateLimit-Scope", "user"),
		want:    "ra=1m5s lim=5 rem=0 win=- reset=1m4.57s",
		sources: "ra=Retry-After lim=X-Ratelimit-Limit rem=X-Ratelimit-Remaining win= reset=X-Ratelimit-Reset-After",
	},
	{
		name: "Discord epoch decimals without Reset-After",
		h:    hdr("X-RateLimit-Remaining", "1", "X-RateLimit-Reset", fmt.Sprint(nowUnix+2)+".5"),
		want: "ra=- lim=- rem=1 win=- reset=2.5s",
	},
	{
		name: "Reddit delta and 598.0",
		h:    hdr("X-Ratelimit-Used", "2", "X-Ratelimit-Remaining", "598.0", "X-Ratelimit-Reset", "412"),
		want: "ra=- lim=- rem=598 win=- reset=6m52s",
	},
	{
		// github.com/sethvargo/go-limiter: reset and Retry-After are
		// time.RFC1123 dates in UTC; the date's own comma is not a list.
		name: "go-limiter HTTP-date reset",
		h: hdr("Date", "Thu, 26 Mar 2026 16:00:00 GMT", "X-RateLimit-Limit", "3", "X-RateLimit-Remaining", "0",
			"X-RateLimit-Reset", "Thu, 26 Mar 2026 16:00:07 UTC", "Retry-After", "Thu, 26 Mar 2026 16:00:07 UTC"),
		want:    "ra=7s lim=3 rem=0 win=- reset=7s",
		sources: "ra=Retry-After lim=X-Ratelimit-Limit rem=X-Ratelimit-Remaining win= reset=X-Ratelimit-Reset",
	},
	{
		name: "HTTP-date reset repeated by a proxy",
		h:    hdr("Date", "Thu, 26 Mar 2026 16:00:00 GMT", "X-RateLimit-Reset", "Thu, 26 Mar 2026 16:00:07 GMT, Thu, 26 Mar 2026 16:00:07 GMT"),
		want: "ra=- lim=- rem=- win=- reset=7s",
	},
	{
		name:    "HTTP-date resets that disagree",
		h:       hdr("Date", "Thu, 26 Mar 2026 16:00:00 GMT", "X-RateLimit-Reset", "Thu, 26 Mar 2026 16:00:07 GMT, Thu, 26 Mar 2026 16:00:09 GMT"),
		want:    "ra=- lim=- rem=- win=- reset=-",
		ignored: []string{"X-Ratelimit-Reset"},
	},
	{
		name: "epoch milliseconds",
		h:    hdr("X-RateLimit-Reset", fmt.Sprint(nowUnix+90)+"250"),
		want: "ra=- lim=- rem=- win=- reset=1m30.25s",
	},
	{
		name: "delta milliseconds need the profile",
		h:    hdr("X-RateLimit-Reset", "600000"),
		prof: Profile{Reset: ResetDeltaMillis},
		want: "ra=- lim=- rem=- win=- reset=10m0s",
	},
	{
		name: "delta milliseconds read as seconds by magnitude",
		h:    hdr("X-RateLimit-Reset", "600000"),
		want: "ra=- lim=- rem=- win=- reset=166h40m0s",
	},
	{
		name: "name ending in -ms",
		h:    hdr("X-RateLimit-Reset-Ms", "1500"),
		want: "ra=- lim=- rem=- win=- reset=1.5s",
	},
	{
		name: "profile epoch seconds for a small number",
		h:    hdr("X-RateLimit-Reset", "100"),
		prof: Profile{Reset: ResetEpochSeconds},
		want: "ra=- lim=- rem=- win=- reset=0s", // 1970: long past
	},
	{
		// 31 years: no quota's reset; listed as ignored (a saturated one
		// parked a host for a month).
		name:    "profile delta seconds for a big number",
		h:       hdr("X-RateLimit-Reset", "1000000000"),
		prof:    Profile{Reset: ResetDeltaSeconds},
		want:    "ra=- lim=- rem=- win=- reset=-",
		ignored: []string{"X-Ratelimit-Reset"},
	},
	{
		name:    "a reset past any quota's",
		h:       hdr("X-RateLimit-Limit", "10", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "99999999999999999999999"),
		want:    "ra=- lim=10 rem=0 win=- reset=-",
		ignored: []string{"X-Ratelimit-Reset"},
	},
	{
		name:    "an IETF reset past any quota's",
		h:       hdr("RateLimit-Policy", `"p";q=10;w=60`, "RateLimit", `"p";r=0;t=99999999999`),
		want:    "ra=- lim=10 rem=0 win=1m0s reset=-",
		ignored: []string{"Ratelimit"},
	},
	{
		name: "profile epoch millis",
		h:    hdr("X-RateLimit-Reset", fmt.Sprint((nowUnix+3)*1000)),
		prof: Profile{Reset: ResetEpochMillis},
		want: "ra=- lim=- rem=- win=- reset=3s",
	},
	{
		name: "ISO 8601 minutes and Z",
		h:    hdr("Date", "Thu, 26 Mar 2026 15:59:00 GMT", "X-RateLimit-Reset", "2026-03-26T16:00Z"),
		want: "ra=- lim=- rem=- win=- reset=1m0s",
	},
	{
		name: "ISO 8601 with offset and fraction",
		h:    hdr("X-RateLimit-Reset", "2026-03-26T17:00:30.5+01:00"),
		want: "ra=- lim=- rem=- win=- reset=30.5s",
	},
	{
		name: "HTTP-date reset",
		h:    hdr("X-RateLimit-Reset", "Thu, 26 Mar 2026 16:00:10 GMT"),
		want: "ra=- lim=- rem=- win=- reset=10s",
	},
	{
		name: "duration strings (OpenAI)",
		h: hdr("x-ratelimit-limit-requests", "500", "x-ratelimit-remaining-requests", "0",
			"x-ratelimit-reset-requests", "1h2m3.5s", "x-ratelimit-limit-tokens", "30000",
			"x-ratelimit-remaining-tokens", "29000", "x-ratelimit-reset-tokens", "6m0s"),
		want:    "ra=- lim=500 rem=0 win=- reset=1h2m3.5s",
		sources: "ra= lim=X-Ratelimit-Limit-Requests rem=X-Ratelimit-Remaining-Requests win= reset=X-Ratelimit-Reset-Requests",
	},
	{
		name: "duration string milliseconds",
		h:    hdr("X-RateLimit-Reset", "250ms"),
		want: "ra=- lim=- rem=- win=- reset=250ms",
	},
	{
		name: "Shopify 40/40 with Retry-After 2.0",
		h:    hdr("X-Shopify-Shop-Api-Call-Limit", "40/40", "Retry-After", "2.0"),
		want: "ra=2s lim=40 rem=0 win=- reset=-",
	},
	{
		// restify's throttle plugin with setHeaders: a bucket of 10
		// refilled at 1/s; the limit is the bucket's size.
		name:    "restify bucket rate",
		h:       hdr("X-RateLimit-Remaining", "7", "X-RateLimit-Limit", "10", "X-RateLimit-Rate", "1"),
		want:    "ra=- lim=1 rem=7 win=1s reset=-",
		sources: "ra= lim=X-Ratelimit-Rate rem=X-Ratelimit-Remaining win=X-Ratelimit-Rate reset=",
		ignored: []string{"X-Ratelimit-Limit"},
	},
	{
		name: "bucket rate of half a request a second",
		h:    hdr("X-RateLimit-Remaining", "3", "X-RateLimit-Rate", "0.5"),
		want: "ra=- lim=1 rem=3 win=2s reset=-",
	},
	{
		name: "bucket rate of 2.5 a second",
		h:    hdr("X-RateLimit-Rate", "2.5"),
		want: "ra=- lim=5 rem=- win=2s reset=-",
	},
	{
		name:    "bucket rate malformed",
		h:       hdr("X-RateLimit-Limit", "10", "X-RateLimit-Rate", "-1"),
		want:    "ra=- lim=10 rem=- win=- reset=-",
		ignored: []string{"X-Ratelimit-Rate"},
	},
	{
		name:    "Shopify malformed",
		h:       hdr("X-Shopify-Shop-Api-Call-Limit", "forty"),
		want:    "ra=- lim=- rem=- win=- reset=-",
		ignored: []string{"X-Shopify-Shop-Api-Call-Limit"},
	},
	{
		name: "IETF policies, most restrictive governs",
		h: hdr("RateLimit-Policy", `"burst";q=100;w=60,"daily";q=1000;w=86400`,
			"RateLimit", `"burst";r=50;t=30, "daily";r=2;t=3000`),
		want:    "ra=- lim=1000 rem=2 win=24h0m0s reset=50m0s",
		sources: "ra= lim=Ratelimit-Policy rem=Ratelimit win=Ratelimit-Policy reset=Ratelimit",
	},
	{
		name: "IETF single policy",
		h:    hdr("RateLimit-Policy", `"default";q=100;w=10`, "RateLimit", `"default";r=50;t=30`),
		want: "ra=- lim=100 rem=50 win=10s reset=30s",
	},
	{
		name: "IETF fields split over several lines",
		h: hdr("RateLimit-Policy", `"burst";q=100;w=60`, "RateLimit-Policy", `"daily";q=1000;w=86400`,
			"RateLimit", `"daily";r=0;t=600`),
		want: "ra=- lim=1000 rem=0 win=24h0m0s reset=10m0s",
	},
	{
		name: "IETF RateLimit without a policy",
		h:    hdr("RateLimit", `"default";r=0;t=5`),
		want: "ra=- lim=- rem=0 win=- reset=5s",
	},
	{
		name: "IETF token names (draft -08 dictionary-like lists)",
		h:    hdr("RateLimit-Policy", `burst;q=100;w=60`, "RateLimit", `burst;r=7;t=3`),
		want: "ra=- lim=100 rem=7 win=1m0s reset=3s",
	},
	{
		name: "IETF non-request units do not govern",
		h: hdr("RateLimit-Policy", `"bytes";q=1000000;w=60;qu="content-bytes", "req";q=10;w=1`,
			"RateLimit", `"bytes";r=0;t=40, "req";r=9;t=1`),
		want: "ra=- lim=10 rem=9 win=1s reset=1s",
	},
	{
		name:    "IETF malformed fields ignored",
		h:       hdr("RateLimit-Policy", `"burst";q=100;w=60,,`, "RateLimit", `"burst";r=-1`),
		want:    "ra=- lim=- rem=- win=- reset=-",
		ignored: []string{"Ratelimit-Policy", "Ratelimit"},
	},
	{
		name:    "IETF malformed items ignored, the rest kept",
		h:       hdr("RateLimit-Policy", `"a";w=60, "b";q=5;w=0, "c";q=7;w=1, ("x" "y");q=1, 1.5`),
		want:    "ra=- lim=7 rem=- win=1s reset=-",
		ignored: []string{"Ratelimit-Policy", "Ratelimit-Policy", "Ratelimit-Policy", "Ratelimit-Policy"},
	},
	{
		name: "IETF draft-07 dictionary",
		h:    hdr("RateLimit", "limit=100, remaining=50, reset=5"),
		want: "ra=- lim=100 rem=50 win=- reset=5s",
	},
	{
		name: "IETF draft-07 policy as integers",
		h:    hdr("RateLimit-Policy", "100;w=10, 1000;w=3600", "RateLimit", "limit=100, remaining=50, reset=5"),
		want: "ra=- lim=100 rem=50 win=10s reset=5s",
	},
	{
		name: "Beta- prefix",
		h:    hdr("Beta-RateLimit-Policy", `"default";q=10;w=1`, "Beta-RateLimit", `"default";r=3;t=1`),
		want: "ra=- lim=10 rem=3 win=1s reset=1s",
	},
	{
		name: "un-prefixed wins over Beta-",
		h: hdr("Beta-RateLimit-Policy", `"default";q=10;w=1`, "RateLimit-Policy", `"default";q=20;w=2`,
			"RateLimit", `"default";r=4;t=2`),
		want:    "ra=- lim=20 rem=4 win=2s reset=2s",
		ignored: []string{"Beta-Ratelimit-Policy"},
	},
	{
		name: "RateLimit-Limit with a policy riding in it",
		h:    hdr("RateLimit-Limit", "100, 100;w=10", "RateLimit-Remaining", "20", "RateLimit-Reset", "7"),
		want: "ra=- lim=100 rem=20 win=10s reset=7s",
	},
	{
		name: "RateLimit-Limit with two policies",
		h:    hdr("RateLimit-Limit", "10, 10;w=1, 1000;w=3600;comment=\"hourly\""),
		want: "ra=- lim=10 rem=- win=1s reset=-",
	},
	{
		name:    "IETF over legacy over vendor",
		h:       hdr("RateLimit", `"default";r=5;t=9`, "RateLimit-Limit", "50", "X-RateLimit-Limit", "60", "X-RateLimit-Remaining", "6", "X-RateLimit-Reset", "99", "X-RateLimit-Window", "60"),
		want:    "ra=- lim=50 rem=5 win=1m0s reset=9s",
		sources: "ra= lim=Ratelimit-Limit rem=Ratelimit win=X-Ratelimit-Window reset=Ratelimit",
	},
	{
		name: "X-Rate-Limit and per-minute suffix (Kong)",
		h: hdr("X-RateLimit-Limit-Minute", "5", "X-RateLimit-Remaining-Minute", "4",
			"X-RateLimit-Limit-Hour", "100", "X-RateLimit-Remaining-Hour", "2"),
		want: "ra=- lim=100 rem=2 win=1h0m0s reset=-",
	},
	{
		name: "a qualifier before the field (hapi-rate-limit)",
		h: hdr("X-RateLimit-UserLimit", "30", "X-RateLimit-UserRemaining", "29",
			"X-RateLimit-UserReset", fmt.Sprint((nowUnix+40)*1000)),
		want:    "ra=- lim=30 rem=29 win=- reset=40s",
		sources: "ra= lim=X-Ratelimit-Userlimit rem=X-Ratelimit-Userremaining win= reset=X-Ratelimit-Userreset",
	},
	{
		name: "a remaining below zero is none left (hapi's 429)",
		h:    hdr("X-RateLimit-UserLimit", "2", "X-RateLimit-UserRemaining", "-1"),
		want: "ra=- lim=2 rem=0 win=- reset=-",
	},
	{
		name:    "a remaining below zero and another: the other",
		h:       hdr("X-RateLimit-Limit", "2", "X-RateLimit-Remaining", "-1", "X-Rate-Limit-Remaining", "1"),
		want:    "ra=- lim=2 rem=1 win=- reset=-",
		ignored: []string{"X-Ratelimit-Remaining"},
	},
	{
		name: "hapi's user and path policies: the one with fewer left",
		h: hdr("X-RateLimit-UserLimit", "30", "X-RateLimit-UserRemaining", "29",
			"X-RateLimit-PathLimit", "50", "X-RateLimit-PathRemaining", "3"),
		want: "ra=- lim=50 rem=3 win=- reset=-",
	},
	{
		name:    "a qualifier is letters only",
		h:       hdr("X-RateLimit-2Limit", "30"),
		want:    "ra=- lim=- rem=- win=- reset=-",
		ignored: []string{"X-Ratelimit-2limit"},
	},
	{
		name: "X-Rate-Limit (Twitter)",
		h:    hdr("X-Rate-Limit-Limit", "15", "X-Rate-Limit-Remaining", "0", "X-Rate-Limit-Reset", fmt.Sprint(nowUnix+900)),
		want: "ra=- lim=15 rem=0 win=- reset=15m0s",
	},
	{
		name: "window and interval",
		h:    hdr("X-RateLimit-Limit", "10", "X-RateLimit-Interval", "1m"),
		want: "ra=- lim=10 rem=- win=1m0s reset=-",
	},
	{
		name: "window word",
		h:    hdr("X-RateLimit-Limit", "10", "X-RateLimit-Window", "minute"),
		want: "ra=- lim=10 rem=- win=1m0s reset=-",
	},
	{
		name: "used without remaining",
		h:    hdr("X-RateLimit-Limit", "10", "X-RateLimit-Used", "12"),
		want: "ra=- lim=10 rem=0 win=- reset=-",
	},
	{
		name: "vendor millisecond wait",
		h:    hdr("X-Retry-After-Ms", "1500"),
		want: "ra=1.5s lim=- rem=- win=- reset=-",
	},
	{
		name: "NestJS's named throttlers: policies of requests, each with its wait",
		h: hdr("X-RateLimit-Limit-short", "3", "X-RateLimit-Remaining-short", "0", "X-RateLimit-Reset-short", "1",
			"Retry-After-short", "1", "X-RateLimit-Limit-long", "100", "X-RateLimit-Remaining-long", "50",
			"X-RateLimit-Reset-long", "40", "Retry-After-long", "40"),
		want:    "ra=40s lim=3 rem=0 win=- reset=1s",
		sources: "ra=Retry-After-Long lim=X-Ratelimit-Limit-Short rem=X-Ratelimit-Remaining-Short win= reset=X-Ratelimit-Reset-Short",
	},
	{
		name:    "a plain Retry-After wins over a named one",
		h:       hdr("Retry-After", "5", "Retry-After-long", "40"),
		want:    "ra=5s lim=- rem=- win=- reset=-",
		ignored: []string{"Retry-After-Long"},
	},
	{
		name:    "a named wait that is not one",
		h:       hdr("Retry-After-short", "soon"),
		want:    "ra=- lim=- rem=- win=- reset=-",
		ignored: []string{"Retry-After-Short"},
	},
	{
		name: "the unit first (RapidAPI)",
		h: hdr("X-RateLimit-Requests-Limit", "500", "X-RateLimit-Requests-Remaining", "499",
			"X-RateLimit-Requests-Reset", "2592000"),
		want: "ra=- lim=500 rem=499 win=- reset=720h0m0s",
	},
	{
		name: "OpenAI's tokens are not requests",
		h: hdr("X-RateLimit-Limit-Requests", "60", "X-RateLimit-Remaining-Requests", "59",
			"X-RateLimit-Limit-Tokens", "1000", "X-RateLimit-Remaining-Tokens", "3"),
		want: "ra=- lim=60 rem=59 win=- reset=-",
	},
	{
		name: "Spring Cloud Gateway's token bucket: its refill is the quota",
		h: hdr("X-RateLimit-Remaining", "19", "X-RateLimit-Replenish-Rate", "10",
			"X-RateLimit-Burst-Capacity", "20", "X-RateLimit-Requested-Tokens", "1"),
		want:    "ra=- lim=10 rem=19 win=1s reset=-",
		ignored: []string{"X-Ratelimit-Burst-Capacity"},
	},
	{
		name: "Spring Cloud Gateway's one request a minute: tokens counted in requests",
		h: hdr("X-RateLimit-Remaining", "119", "X-RateLimit-Replenish-Rate", "1",
			"X-RateLimit-Burst-Capacity", "120", "X-RateLimit-Requested-Tokens", "60"),
		want:    "ra=- lim=1 rem=1 win=1m0s reset=-",
		ignored: []string{"X-Ratelimit-Burst-Capacity"},
	},
	{
		name:    "tokens a request takes must be a whole number",
		h:       hdr("X-RateLimit-Replenish-Rate", "1", "X-RateLimit-Requested-Tokens", "0"),
		want:    "ra=- lim=1 rem=- win=1s reset=-",
		ignored: []string{"X-Ratelimit-Requested-Tokens"},
	},
	{
		name: "AspNetCoreRateLimit's period where the limit goes: the window",
		h: hdr("X-Rate-Limit-Limit", "1m", "X-Rate-Limit-Remaining", "58",
			"X-Rate-Limit-Reset", now.Add(42*time.Second).UTC().Format("2006-01-02T15:04:05.0000000Z")),
		want: "ra=- lim=- rem=58 win=1m0s reset=42s",
	},
	{
		name: "vendor wait in seconds (Rust's governor middlewares)",
		h:    hdr("X-RateLimit-After", "3", "X-RateLimit-Limit", "30", "X-RateLimit-Remaining", "0"),
		want: "ra=3s lim=30 rem=0 win=- reset=-",
	},
	{
		name: "vendor wait in seconds (Bucket4j's Spring Boot starter)",
		h:    hdr("X-Rate-Limit-Retry-After-Seconds", "299", "X-Rate-Limit-Remaining", "0"),
		want: "ra=4m59s lim=- rem=0 win=- reset=-",
	},
	{
		name: "x-ms-retry-after-ms",
		h:    hdr("x-ms-retry-after-ms", "20.5"),
		want: "ra=20.5ms lim=- rem=- win=- reset=-",
	},
	{
		name:    "Retry-After wins over retry-after-ms",
		h:       hdr("Retry-After", "2", "retry-after-ms", "1500"),
		want:    "ra=2s lim=- rem=- win=- reset=-",
		sources: "ra=Retry-After lim= rem= win= reset=",
		ignored: []string{"Retry-After-Ms"},
	},
	{
		name: "X-RateLimit-Retry-After",
		h:    hdr("X-RateLimit-Retry-After", "7"),
		want: "ra=7s lim=- rem=- win=- reset=-",
	},
	{
		name: "Retry-After rfc850",
		h:    hdr("Retry-After", "Thursday, 26-Mar-26 16:00:30 GMT"),
		want: "ra=30s lim=- rem=- win=- reset=-",
	},
	{
		name: "Retry-After asctime",
		h:    hdr("Retry-After", "Thu Mar 26 16:00:45 2026"),
		want: "ra=45s lim=- rem=- win=- reset=-",
	},
	{
		name: "skewed Date header cancels",
		// The server's clock runs an hour behind ours: its Retry-After
		// date and epoch reset are read against its own Date.
		h: hdr("Date", "Thu, 26 Mar 2026 15:00:00 GMT", "Retry-After", "Thu, 26 Mar 2026 15:01:00 GMT",
			"X-RateLimit-Reset", fmt.Sprint(nowUnix-3600+120)),
		want: "ra=1m0s lim=- rem=- win=- reset=2m0s",
	},
	{
		name: "a Date a day or more off is no clock",
		// A server whose clock is not set: its Retry-After date read
		// against 1970 was 56 years, a day's wait.
		h:       hdr("Date", "Thu, 01 Jan 1970 00:00:00 GMT", "Retry-After", "Thu, 26 Mar 2026 16:00:05 GMT"),
		want:    "ra=5s lim=- rem=- win=- reset=-",
		ignored: []string{"Date"},
	},
	{
		name:    "invalid Date header falls back to the receive time",
		h:       hdr("Date", "yesterday", "Retry-After", "Thu, 26 Mar 2026 16:01:00 GMT"),
		want:    "ra=1m0s lim=- rem=- win=- reset=-",
		ignored: []string{"Date"},
	},
	{
		name:    "garbage everywhere",
		h:       hdr("Retry-After", "soon", "X-RateLimit-Remaining", "-3", "X-RateLimit-Limit", "lots", "X-RateLimit-Reset", "later", "X-RateLimit-Frobs", "1"),
		want:    "ra=- lim=- rem=- win=- reset=-",
		ignored: []string{"Retry-After", "X-Ratelimit-Frobs", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"},
	},
	{
		name:    "conflicting joined values",
		h:       hdr("Retry-After", "120", "Retry-After", "60", "X-RateLimit-Remaining", "5, 6"),
		want:    "ra=- lim=- rem=- win=- reset=-",
		ignored: []string{"Retry-After", "X-Ratelimit-Remaining"},
	},
	{
		name: "consistent joined values",
		h:    hdr("Retry-After", "120", "Retry-After", "120", "X-RateLimit-Remaining", "5, 5"),
		want: "ra=2m0s lim=- rem=5 win=- reset=-",
	},
	{
		name:    "duplicate names across families",
		h:       hdr("X-RateLimit-Limit", "10", "X-Rate-Limit-Limit", "20"),
		want:    "ra=- lim=20 rem=- win=- reset=-", // sorted by name: x-rate-limit- < x-ratelimit-
		ignored: []string{"X-Ratelimit-Limit"},
	},
}

func TestParse(t *testing.T) {
	for _, tt := range parseCases {
		t.Run(tt.name, func(t *testing.T) {
			s := Parse(tt.h, now, tt.prof)
			if got := summary(&s); got != tt.want {
				t.Errorf("Parse(%v) = %s, want %s", tt.h, got, tt.want)
			}
			if tt.sources != "" {
				if got := sources(&s); got != tt.sources {
					t.Errorf("Parse(%v) sources = %s, want %s", tt.h, got, tt.sources)
				}
			}
			var ig []string
			for _, i := range s.Ignored {
				ig = append(ig, i.Header)
				if i.Reason == "" {
					t.Errorf("Parse(%v) ignored %q without a reason", tt.h, i.Header)
				}
			}
			slices.Sort(ig)
			want := slices.Clone(tt.ignored)
			slices.Sort(want)
			if !slices.Equal(ig, want) {
				t.Errorf("Parse(%v) ignored %v, want %v", tt.h, s.Ignored, want)
			}
			if s.HasRetryAfter && !s.RetryAfterAt.Equal(now.Add(s.RetryAfter)) {
				t.Errorf("RetryAfterAt = %v, want now+%v", s.RetryAfterAt, s.RetryAfter)
			}
			if s.HasReset && !s.ResetAt.Equal(now.Add(s.Reset)) {
				t.Errorf("ResetAt = %v, want now+%v", s.ResetAt, s.Reset)
			}
		})
	}
}

func TestParseDetails(t *testing.T) {
	t.Run("Discord scope and bucket", func(t *testing.T) {
		s := Parse(hdr("X-RateLimit-Bucket", "abcd1234", "X-RateLimit-Scope", "shared", "X-RateLimit-Global", "true"), now, Profile{})
		if s.Bucket != "abcd1234" || s.Scope != ScopeShared || s.Sources.Scope != "X-Ratelimit-Scope" {
			t.Errorf("Parse = bucket %q scope %v from %q, want abcd1234 shared from X-Ratelimit-Scope", s.Bucket, s.Scope, s.Sources.Scope)
		}
		s = Parse(hdr("X-RateLimit-Global", "true"), now, Profile{})
		if s.Scope != ScopeGlobal {
			t.Errorf("Parse(Global: true) scope = %v, want global", s.Scope)
		}
		s = Parse(hdr("X-RateLimit-Scope", "user"), now, Profile{})
		if s.Scope != ScopeUser || s.Scope.String() != "per-user" {
			t.Errorf("Parse(Scope: user) scope = %v, want per-user", s.Scope)
		}
	})
	t.Run("a qualified policy counts requests", func(t *testing.T) {
		s := Parse(hdr("X-RateLimit-UserLimit", "30", "X-RateLimit-UserRemaining", "29", "X-RateLimit-UserPathLimit-Minute", "10"), now, Profile{})
		var names []string
		for _, p := range s.Policies {
			names = append(names, p.Name)
			if !p.CountsRequests() {
				t.Errorf("policy %q: unit %q, want requests", p.Name, p.Unit)
			}
			if p.Name == "userpath-minute" && p.Window != time.Minute {
				t.Errorf("policy %q: window %v, want its suffix's minute", p.Name, p.Window)
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"user", "userpath-minute"}) {
			t.Errorf("policies %v, want user and userpath-minute", names)
		}
	})
	t.Run("IETF policy fields", func(t *testing.T) {
		s := Parse(hdr("RateLimit-Policy", `"peruser";q=100;w=60;qu="concurrent-requests";pk=:Zm9v:`,
			"RateLimit", `"peruser";r=3;t=4;pk=:Zm9v:`), now, Profile{})
		want := Policy{Name: "peruser", Quota: 100, HasQuota: true, Window: time.Minute, Unit: UnitConcurrentRequests,
			Partition: []byte("foo"), Remaining: 3, HasRemaining: true, Reset: 4 * time.Second, HasReset: true, Source: "Ratelimit-Policy"}
		if len(s.Policies) != 1 || fmt.Sprint(s.Policies[0]) != fmt.Sprint(want) {
			t.Errorf("Parse policies = %+v, want [%+v]", s.Policies, want)
		}
		if s.HasLimit {
			t.Errorf("Parse: a concurrent-requests policy set Limit = %d; it is not a rate", s.Limit)
		}
	})
	t.Run("empty value slices", func(t *testing.T) {
		h := http.Header{"Date": {}, "Retry-After": {}, "X-Ratelimit-Limit": {}, "Ratelimit": {}, "Ratelimit-Policy": {},
			"X-Shopify-Shop-Api-Call-Limit": {}, "X-Ratelimit-Reset": {}, "X-Ratelimit-Scope": {}}
		s := Parse(h, now, Profile{})
		if got := summary(&s); got != "ra=- lim=- rem=- win=- reset=-" {
			t.Errorf("Parse(%v) = %s", h, got)
		}
	})
	t.Run("HTTP/2 lowercase keys", func(t *testing.T) {
		h := http.Header{"retry-after": {"3"}, "x-ratelimit-remaining": {"0"}, "ratelimit": {`"d";r=0;t=3`}}
		s := Parse(h, now, Profile{})
		if got := summary(&s); got != "ra=3s lim=- rem=0 win=- reset=3s" {
			t.Errorf("Parse(%v) = %s", h, got)
		}
	})
	t.Run("excessive Retry-After is kept and flagged", func(t *testing.T) {
		s := Parse(hdr("Retry-After", "172800"), now, Profile{})
		if !s.HasRetryAfter || s.RetryAfter != 48*time.Hour || !s.RetryAfterExcessive {
			t.Errorf("Parse(Retry-After: 172800) = %v excessive %v, want 48h flagged", s.RetryAfter, s.RetryAfterExcessive)
		}
		s = Parse(hdr("Retry-After", "172800"), now, Profile{MaxRetryAfter: -1})
		if s.RetryAfterExcessive {
			t.Errorf("Parse with MaxRetryAfter -1 flagged %v", s.RetryAfter)
		}
		s = Parse(hdr("Retry-After", "61"), now, Profile{MaxRetryAfter: time.Minute})
		if !s.RetryAfterExcessive {
			t.Errorf("Parse(61s) with MaxRetryAfter 1m not flagged")
		}
		s = Parse(hdr("Retry-After", "86400"), now, Profile{})
		if s.RetryAfterExcessive {
			t.Errorf("Parse(exactly 24h) flagged")
		}
	})
	t.Run("Wait", func(t *testing.T) {
		cases := []struct {
			h    http.Header
			want string
		}{
			{hdr("Retry-After", "5", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "50"), "5s"},
			{hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "50"), "50s"},
			{hdr("X-RateLimit-Remaining", "1", "X-RateLimit-Reset", "50"), "none"},
			{hdr("RateLimit-Policy", `"b";q=1;w=1;qu="content-bytes"`, "RateLimit", `"b";r=0;t=9`), "9s"},
			{hdr("Content-Type", "text/html"), "none"},
		}
		for _, c := range cases {
			s := Parse(c.h, now, Profile{})
			got := "none"
			if d, ok := s.Wait(); ok {
				got = d.String()
			}
			if got != c.want {
				t.Errorf("Parse(%v).Wait() = %s, want %s", c.h, got, c.want)
			}
		}
	})
	t.Run("absent means unknown", func(t *testing.T) {
		s := Parse(hdr("Server", "nginx"), now, Profile{})
		if s.Known() || s.Policies != nil || s.Ignored != nil {
			t.Errorf("Parse(no rate-limit headers) = %+v, want nothing known", s)
		}
	})
	t.Run("deterministic whatever the map order", func(t *testing.T) {
		h := hdr("X-RateLimit-Limit", "10", "X-Rate-Limit-Limit", "20", "RateLimit-Policy", `"a";q=1, "b";q=1`,
			"Beta-RateLimit", `"a";r=1`, "Gamma-RateLimit", `"a";r=2`)
		first := fmt.Sprintf("%+v", Parse(h, now, Profile{}))
		for range 20 {
			if got := fmt.Sprintf("%+v", Parse(h, now, Profile{})); got != first {
				t.Fatalf("Parse is not deterministic:\n%s\n%s", got, first)
			}
		}
	})
}

func TestParseReset(t *testing.T) {
	tests := []struct {
		in   string
		mode ResetMode
		want string
	}{
		{"30", ResetAuto, "30s"},
		{"30.5", ResetAuto, "30.5s"},
		{"999999999", ResetAuto, "277777h46m39s"},
		{fmt.Sprint(nowUnix + 10), ResetAuto, "10s"},
		{fmt.Sprint(nowUnix - 10), ResetAuto, "0s"},
		{fmt.Sprint((nowUnix + 10) * 1000), ResetAuto, "10s"},
		{"10", ResetDeltaMillis, "10ms"},
		{"6m0s", ResetAuto, "6m0s"},
		{"1h2m3.5s", ResetEpochSeconds, "1h2m3.5s"},
		{"12ms", ResetAuto, "12ms"},
		{"-5", ResetAuto, "negative value"},
		{"-5s", ResetAuto, "negative value"},
		{"", ResetAuto, "empty value"},
		{"5 s", ResetAuto, "unrecognised value"},
		{"1e9", ResetAuto, "unrecognised value"},
		{"2026-03-26T16:00Z", ResetAuto, "0s"},
		{"2026-03-26T16:01", ResetAuto, "1m0s"},
		{"9999999999999999999999999999", ResetAuto, "0s"}, // epoch ms in the year 3e11: saturates
	}
	for _, tt := range tests {
		d, err := ParseReset(tt.in, now, tt.mode)
		got := d.String()
		if err != nil {
			got = err.Error()
		}
		if tt.in == "9999999999999999999999999999" {
			if err != nil || d != maxDuration {
				t.Errorf("ParseReset(%q) = %v, %v, want saturation", tt.in, d, err)
			}
			continue
		}
		if got != tt.want {
			t.Errorf("ParseReset(%q, %v) = %s, want %s", tt.in, tt.mode, got, tt.want)
		}
	}
}

func TestResetModeNames(t *testing.T) {
	for _, m := range []ResetMode{ResetAuto, ResetEpochSeconds, ResetEpochMillis, ResetDeltaSeconds, ResetDeltaMillis} {
		if got, err := ParseResetMode(m.String()); err != nil || got != m {
			t.Errorf("ParseResetMode(%q) = %v, %v, want %v", m.String(), got, err, m)
		}
	}
	if _, err := ParseResetMode("epoch"); err == nil || !strings.Contains(err.Error(), "epoch-seconds") {
		t.Errorf("ParseResetMode(epoch) error = %v, want one listing the choices", err)
	}
}

// A Date header in agreement with the receive time is only its whole
// second: resets are measured from the finer receive time, so two
// responses of one window a fraction of a second apart agree on its end
// (go-chi/httprate sends the end of its window in epoch seconds).
func TestDateAgreeingUsesReceiveTime(t *testing.T) {
	date := time.Unix(nowUnix, 0).UTC().Format(http.TimeFormat)
	reset := fmt.Sprint(nowUnix + 10)
	for _, frac := range []time.Duration{0, 300 * time.Millisecond, 900 * time.Millisecond} {
		recv := time.Unix(nowUnix, 0).Add(frac)
		s := Parse(hdr("Date", date, "X-RateLimit-Reset", reset), recv, Profile{})
		if got, want := s.Reset, 10*time.Second-frac; (got - want).Abs() > time.Microsecond { // float seconds
			t.Errorf("received %v into the Date's second: reset in %v, want %v", frac, got, want)
		}
	}
}

// single glues a weekday to the part after it only when the two make an
// HTTP-date; otherwise the weekday is a value of its own.
func TestSingleWeekdays(t *testing.T) {
	for _, c := range []struct {
		in      []string
		want    string
		wantErr error
	}{
		{[]string{"Tue, 01 Dec 2026 19:47:46 UTC"}, "Tue, 01 Dec 2026 19:47:46 UTC", nil},
		{[]string{"Tue, 01 Dec 2026 19:47:46 GMT", "Tue, 01 Dec 2026 19:47:46 GMT"}, "Tue, 01 Dec 2026 19:47:46 GMT", nil},
		{[]string{"sun, sun"}, "sun", nil},
		{[]string{"Mon"}, "Mon", nil},
		{[]string{"Thu, 5"}, "", ErrConflict},
	} {
		got, err := single(c.in)
		if !errors.Is(err, c.wantErr) || (err == nil && got != c.want) {
			t.Errorf("single(%q) = %q, %v; want %q, %v", c.in, got, err, c.want, c.wantErr)
		}
	}
}

// An answer declaring thousands of policies is read for the first 64 and
// the rest listed as ignored: each header was looked up among all the
// groups before it, and 32,000 took 9 s of CPU.
func TestTooManyPolicies(t *testing.T) {
	h := http.Header{}
	for i := range 5000 {
		h.Set(fmt.Sprintf("X-RateLimit-Limit-P%d", i), "10")
		h.Set(fmt.Sprintf("X-RateLimit-Remaining-P%d", i), "5")
	}
	s := Parse(h, now, Profile{})
	ignored := 0
	for _, ig := range s.Ignored {
		if ig.Reason == tooManyPolicies {
			ignored++
		}
	}
	if len(s.Policies) != maxGroups || ignored == 0 || !s.HasLimit {
		t.Errorf("%d policies, %d headers ignored as too many, limit %v; want %d policies read and the rest ignored", len(s.Policies), ignored, s.HasLimit, maxGroups)
	}
}
