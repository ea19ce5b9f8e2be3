// A hapi target for the exitgate peers: every path answers "ok", limited per
// client address by hapi-rate-limit's userLimit (no authentication, so the
// user is request.info.remoteAddress: a fixed window per client opened by
// its first request, in hapi's memory cache; refused requests count too),
// its path limits off. 429s are Boom's tooManyRequests, without
// Retry-After; every response carries the plugin's own headers,
// X-RateLimit-UserLimit, -UserRemaining and -UserReset (the window's end in
// Unix milliseconds). Each request is logged when its response is finished,
// as "<unix time with ms> <client address> <status>".
"use strict";
const Hapi = require("@hapi/hapi");
const { flags, accessLog } = require("./peer_common.js");

const args = flags({
  limit: { type: "string" },
  window: { type: "string" }, // milliseconds
});

const log = accessLog(args.log);

async function main() {
  const server = Hapi.server({ port: Number(args.port), host: args.host });
  server.events.on("response", (request) => {
    const status = request.response && (request.response.isBoom ? request.response.output.statusCode : request.response.statusCode);
    log(request.info.remoteAddress, status);
  });
  await server.register({
    plugin: require("hapi-rate-limit"),
    options: {
      userLimit: Number(args.limit),
      userCache: { expiresIn: Number(args.window) },
      pathLimit: false,
      userPathLimit: false,
    },
  });
  server.route({ method: "*", path: "/{any*}", handler: (request, h) => h.response("ok\n").type("text/plain") });
  await server.start();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
