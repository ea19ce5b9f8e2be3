// A fastify target for the exitgate peers: every path answers "ok", limited
// per client address (@fastify/rate-limit's default key, request.ip) by its
// LocalStore: a fixed window per client, opened by the client's first
// request (with --continue-exceeding, a request over the limit opens it
// again). Headers are the plugin's defaults: x-ratelimit-limit, -remaining
// and -reset on every response, retry-after on 429s. Each request is logged
// when its response is finished, as
// "<unix time with ms> <client address> <status>".
"use strict";
const Fastify = require("fastify");
const { flags, accessLog } = require("./peer_common.js");

const args = flags({
  max: { type: "string" },
  window: { type: "string" }, // milliseconds
  "continue-exceeding": { type: "string", default: "false" },
});

const log = accessLog(args.log);
const app = Fastify({ logger: false });
app.addHook("onResponse", (request, reply, done) => {
  log(request.socket.remoteAddress, reply.statusCode);
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
