// Package rlheader turns the rate-limit headers of one HTTP response into one
// normalised Signal: how long to wait (Retry-After), the limit, what remains
// of it, the window, when it resets, the declared policies, the scope the
// server says it enforces, and where each number came from.
//
// Absent means unknown. Every number carries an explicit Has flag; a missing
// header never reads as "unlimited" or as zero.
//
// # Precedence
//
// Retry-After wins over everything else for the wait. For limit, remaining,
// window and reset, each number is taken from the first of these tiers that
// knows it:
//
//  1. the IETF fields RateLimit and RateLimit-Policy
//     (draft-ietf-httpapi-ratelimit-headers -08 to -11, plus draft-07's
//     Dictionary form and vendor-prefixed copies such as Beta-RateLimit;
//     the un-prefixed pair wins over prefixed ones);
//  2. the older IETF separate fields RateLimit-Limit, RateLimit-Remaining and
//     RateLimit-Reset;
//  3. vendor headers: X-RateLimit-*, X-Rate-Limit-*, Rate-Limit-*, Shopify's
//     used/size pair, vendor waits and named policies' Retry-After-<name>
//     (used for the wait only when there is no Retry-After; of several
//     named waits, the longest).
//
// When a tier declares several policies (IETF policies, or vendor groups such
// as X-RateLimit-Limit-Minute next to X-RateLimit-Limit-Hour, NestJS's
// X-RateLimit-Limit-short next to -long, hapi's X-RateLimit-UserLimit next
// to -PathLimit), the most
// restrictive one governs: among request-counting policies, the one with the
// fewest requests remaining; on a tie, the one that resets last; failing
// both, the one with the lowest quota per second. All policies are listed in
// Signal.Policies whatever governs.
//
// # Ambiguity
//
// The same reset header means different things on different APIs. Unless a
// Profile pins the interpretation, a bare number is read by magnitude:
// >= 1e12 is epoch milliseconds, >= 1e9 epoch seconds, anything smaller a
// delta in seconds (decimals allowed). Delta milliseconds cannot be told from
// delta seconds by magnitude; pin ResetDeltaMillis for hosts that send them
// (names ending in -ms are read as milliseconds). Dates (HTTP-date, ISO 8601)
// and Go duration strings ("6m0s", "250ms") are recognised by form.
//
// Absolute times (epoch values, dates) are in the server's clock, so they are
// measured against the response's own Date header when it is present and
// valid, which cancels clock skew; otherwise against the time the response
// was received. Durations in a Signal are therefore "from the response's
// time", and the matching absolute fields (RetryAfterAt, ResetAt) are that
// duration added to the receive time in the local clock.
//
// Malformed values never stop parsing: they are skipped and reported in
// Signal.Ignored with the reason.
package rlheader
