// A koa target for the exitgate peers: every path answers "ok", limited per
// client address (ctx.ip) by koa-ratelimit's memory driver (a fixed window
// per client, opened by its first request; refused requests do not count),
// with its default headers: X-RateLimit-Limit, -Remaining and -Reset (the
// window's end in Unix seconds, with a fraction) on every response and
// Retry-After (the whole seconds to that end, rounded down: 0 in the last
// second) on 429s. Each request is logged when its response is finished, as
// "<unix time with ms> <client address> <status>".
"use strict";
const Koa = require("koa");
const ratelimit = require("koa-ratelimit");
const { flags, accessLog } = require("./peer_common.js");

const args = flags({
  limit: { type: "string" },
  window: { type: "string" }, // milliseconds
});

const log = accessLog(args.log);
const app = new Koa();
app.use(async (ctx, next) => {
  const socket = ctx.req.socket;
  ctx.res.on("finish", () => log(socket.remoteAddress, ctx.res.statusCode));
  await next();
});
app.use(ratelimit({
  driver: "memory",
  db: new Map(),
  duration: Number(args.window),
  max: Number(args.limit),
  id: (ctx) => ctx.ip,
}));
app.use(async (ctx) => {
  ctx.type = "text/plain";
  ctx.body = "ok\n";
});
app.listen(Number(args.port), args.host);
