// A restify target for the exitgate peers: every path answers "ok", limited
// per client address by restify's own throttle plugin (a token bucket of
// --burst tokens refilled at --rate a second, fractional tokens; ip: true
// keys it on the socket's address), answering 429 TooManyRequests without
// Retry-After. With --headers it sets the plugin's setHeaders:
// X-RateLimit-Limit (the burst), X-RateLimit-Remaining (whole tokens left)
// and X-RateLimit-Rate (the rate) on every response. Each request is logged
// when its response is finished, as "<unix time with ms> <client address>
// <status>".
"use strict";
const restify = require("restify");
const { flags, accessLog } = require("./peer_common.js");

const args = flags({
  rate: { type: "string" },
  burst: { type: "string" },
  headers: { type: "string", default: "false" },
});

const log = accessLog(args.log);
// restify logs every throttled request at info through its own pino.
const pino = require(require.resolve("pino", { paths: [require.resolve("restify")] }));
const server = restify.createServer({ log: pino({ level: "warn" }) });
server.pre((req, res, next) => {
  res.on("finish", () => log(req.socket.remoteAddress, res.statusCode));
  next();
});
server.use(restify.plugins.throttle({
  rate: Number(args.rate),
  burst: Number(args.burst),
  ip: true,
  setHeaders: args.headers === "true",
}));
const ok = (req, res, next) => {
  res.setHeader("Content-Type", "text/plain");
  res.send(200, "ok\n");
  next();
};
server.get("/*", ok);
server.listen(Number(args.port), args.host);
