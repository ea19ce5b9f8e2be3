// A rate-limiter-flexible target for the exitgate peers: an express app
// whose middleware consumes a point per request from a RateLimiterMemory
// keyed on the client address (a window opened by the client's first
// request; refused requests consume points too; with --block, a client over
// the limit is refused for that many seconds), and sets the headers the
// library's README shows: X-RateLimit-Limit, -Remaining, -Reset (epoch
// seconds, rounded up) on every response, and on 429s Retry-After as
// msBeforeNext / 1000 (fractional seconds, e.g. "0.734"); or, with
// --headers retry-after, Retry-After alone in whole seconds rounded up, or
// with --headers none, nothing. Each request is
// logged when its response is finished, as
// "<unix time with ms> <client address> <status>".
"use strict";
const express = require("express");
const { RateLimiterMemory } = require("rate-limiter-flexible");
const { flags, accessLog } = require("./peer_common.js");

const args = flags({
  points: { type: "string" },
  duration: { type: "string" }, // seconds
  block: { type: "string", default: "0" }, // seconds
  // readme: the headers above; retry-after: Retry-After alone, whole
  // seconds rounded up; none: bare 429s.
  headers: { type: "string", default: "readme" },
});

const log = accessLog(args.log);
const opts = { points: Number(args.points), duration: Number(args.duration), blockDuration: Number(args.block) };
const rateLimiter = new RateLimiterMemory(opts);

function headers(res) {
  return {
    "X-RateLimit-Limit": opts.points,
    "X-RateLimit-Remaining": res.remainingPoints,
    "X-RateLimit-Reset": Math.ceil((Date.now() + res.msBeforeNext) / 1000),
  };
}

const app = express();
app.use((req, res, next) => {
  res.on("finish", () => log(req.socket.remoteAddress, res.statusCode));
  next();
});
app.use((req, res, next) => {
  rateLimiter
    .consume(req.ip)
    .then((r) => {
      if (args.headers === "readme") res.set(headers(r));
      next();
    })
    .catch((r) => {
      if (r instanceof Error) {
        next(r);
        return;
      }
      if (args.headers === "readme") {
        res.set(headers(r));
        res.set("Retry-After", String(r.msBeforeNext / 1000));
      } else if (args.headers === "retry-after") {
        res.set("Retry-After", String(Math.ceil(r.msBeforeNext / 1000)));
      }
      res.status(429).send("Too Many Requests");
    });
});
app.use((req, res) => res.type("text/plain").send("ok\n"));
app.listen(Number(args.port), args.host);
