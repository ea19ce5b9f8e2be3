// An express target for the exitgate peers limited by the npm package
// limiter's RateLimiter, one per client address, as its README sets it up
// for a server (fireImmediately: true, a removeTokens(1) below zero is
// refused): a token bucket of --limit tokens refilled at --limit per
// --window, and besides it at most --limit removals in a window opened by
// the first request after the last one ended (refused requests open it too,
// but do not count in it). A refusal is a 429 with Retry-After: --retry-after
// seconds (0: none, the README's bare 429). Each request is logged when its
// response is finished, as "<unix time with ms> <client address> <status>".
"use strict";
const express = require("express");
const { RateLimiter } = require("limiter");
const { flags, accessLog } = require("./peer_common.js");

const args = flags({
  limit: { type: "string" },
  window: { type: "string" }, // milliseconds
  "retry-after": { type: "string", default: "0" },
});

const log = accessLog(args.log);
const limiters = new Map();
const app = express();
app.use((req, res, next) => {
  const address = req.socket.remoteAddress;
  res.on("finish", () => log(address, res.statusCode));
  let limiter = limiters.get(address);
  if (!limiter) {
    limiter = new RateLimiter({ tokensPerInterval: Number(args.limit), interval: Number(args.window), fireImmediately: true });
    limiters.set(address, limiter);
  }
  limiter.removeTokens(1).then((remaining) => {
    if (remaining >= 0) return next();
    if (args["retry-after"] !== "0") res.set("Retry-After", args["retry-after"]);
    res.status(429).type("text/plain").send("429 Too Many Requests - your IP is being rate limited\n");
  }, next);
});
app.use((req, res) => res.type("text/plain").send("ok\n"));
app.listen(Number(args.port), args.host);
