// A fastify target for the exitgate peers: every path answers "ok", limited
// per client address (@fastify/rate-limit's default key, request.ip) by its
// LocalStore: a fixed window per client, opened by the client's first
// request (with --continue-exceeding, a request over the limit opens it
// again). Headers are the plugin's defaults: x-ratelimit-limit, -remaining
// and -reset on every response, retry-after on 429s. Each request is logged
// when its response is finished, as
// "<unix time with ms> <client address> <status>".
"use strict";
const fs = require("node:fs");
const { parseArgs } = require("node:util");
const Fastify = require("fastify");

const { values: args } = parseArgs({
  options: {
    host: { type: "string", default: "127.0.0.1" },
    port: { type: "string" },
    log: { type: "string" },
    max: { type: "string" },
    window: { type: "string" }, // milliseconds
    "continue-exceeding": { type: "string", default: "false" },
  },
});

const log = fs.openSync(args.log, "a");
const app = Fastify({ logger: false });
app.addHook("onResponse", (request, reply, done) => {
  const now = Date.now();
  fs.writeSync(log, `${Math.floor(now / 1000)}.${String(now % 1000).padStart(3, "0")} ${request.socket.remoteAddress} ${reply.statusCode}\n`);
  done();
});
app.register(require("@fastify/rate-limit"), {
  max: Number(args.max),
  timeWindow: Number(args.window),
  continueExceeding: args["continue-exceeding"] === "true",
});
app.register(async (instance) => {
  instance.all("/*", async (request, reply) => {
    reply.type("text/plain");
    return "ok\n";
  });
});
app.listen({ port: Number(args.port), host: args.host }).catch((err) => {
  console.error(err);
  process.exit(1);
});
