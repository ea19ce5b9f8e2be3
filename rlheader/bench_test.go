package rlheader

import (
	"net/http"
	"testing"
	"time"
)

// A typical 429 head: Retry-After, the X-RateLimit family, the IETF pair
// and the ordinary headers around them.
func head429() http.Header {
	return http.Header{
		"Date":                  {"Thu, 26 Mar 2026 15:59:30 GMT"},
		"Content-Type":          {"application/json; charset=utf-8"},
		"Content-Length":        {"87"},
		"Server":                {"nginx/1.25.3"},
		"Set-Cookie":            {"session=abc123; Path=/; HttpOnly; Secure"},
		"Cache-Control":         {"no-store"},
		"Vary":                  {"Accept-Encoding"},
		"X-Request-Id":          {"0f4c2a1e-9d7b-4a3c-8e21-5b6f0d9c3a77"},
		"Retry-After":           {"30"},
		"X-Ratelimit-Limit":     {"5000"},
		"X-Ratelimit-Remaining": {"0"},
		"X-Ratelimit-Reset":     {"1774540800"},
		"X-Ratelimit-Used":      {"5000"},
		"Ratelimit-Policy":      {`"default";q=5000;w=3600`},
		"Ratelimit":             {`"default";r=0;t=30`},
	}
}

func headPlain200() http.Header {
	return http.Header{
		"Date":                      {"Thu, 26 Mar 2026 15:59:30 GMT"},
		"Content-Type":              {"text/html; charset=utf-8"},
		"Content-Length":            {"48213"},
		"Server":                    {"nginx/1.25.3"},
		"Set-Cookie":                {"session=abc123; Path=/; HttpOnly; Secure"},
		"Cache-Control":             {"max-age=0, private, must-revalidate"},
		"Vary":                      {"Accept-Encoding"},
		"Etag":                      {`W/"5e1f-18c2"`},
		"Last-Modified":             {"Wed, 25 Mar 2026 10:00:00 GMT"},
		"X-Request-Id":              {"0f4c2a1e-9d7b-4a3c-8e21-5b6f0d9c3a77"},
		"Strict-Transport-Security": {"max-age=31536000"},
	}
}

var sink Signal

func BenchmarkParse429(b *testing.B) {
	h := head429()
	now := time.Date(2026, 3, 26, 16, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		sink = Parse(h, now, Profile{})
	}
}

func BenchmarkParsePlain200(b *testing.B) {
	h := headPlain200()
	now := time.Date(2026, 3, 26, 16, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		sink = Parse(h, now, Profile{})
	}
}
