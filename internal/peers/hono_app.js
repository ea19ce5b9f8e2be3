// A hono target for the exitgate peers: every path answers "ok", limited per
// client address by hono-rate-limiter's MemoryStore (a fixed window per
// client, opened by its first request; refused requests count too) on
// @hono/node-server, with the header draft --headers names: "draft-6"
// (RateLimit-Policy, RateLimit-Limit, -Remaining, -Reset) or "draft-7" (one
// RateLimit field and RateLimit-Policy), and Retry-After on 429s. Each
// request is logged when its response is finished, as "<unix time with ms>
// <client address> <status>".
"use strict";
const { Hono } = require("hono");
const { serve } = require("@hono/node-server");
const { rateLimiter } = require("hono-rate-limiter");
const { flags, accessLog } = require("./peer_common.js");

const args = flags({
  limit: { type: "string" },
  window: { type: "string" }, // milliseconds
  headers: { type: "string", default: "draft-6" },
});

const log = accessLog(args.log);
const address = (c) => c.env.incoming.socket.remoteAddress;
const app = new Hono();
app.use(async (c, next) => {
  const socket = c.env.incoming.socket;
  c.env.outgoing.on("finish", () => log(socket.remoteAddress, c.env.outgoing.statusCode));
  await next();
});
app.use(rateLimiter({
  windowMs: Number(args.window),
  limit: Number(args.limit),
  standardHeaders: args.headers,
  keyGenerator: address,
}));
app.all("/*", (c) => c.text("ok\n"));
serve({ fetch: app.fetch, port: Number(args.port), hostname: args.host });
