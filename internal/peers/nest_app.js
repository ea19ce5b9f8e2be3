// A NestJS target for the exitgate peers: every path answers "ok", limited
// per client address (req.ip, no proxy trusted) by @nestjs/throttler's
// ThrottlerGuard with two named throttlers, as its documentation sets them
// up: "short" (--short-limit per --short-ttl) and, when given, "long"
// (--long-limit per --long-ttl; milliseconds). Each throttler counts a sliding log of its
// hits (each expires its ttl after it came; refused requests do not count)
// and names its headers after itself: X-RateLimit-Limit-short,
// -Remaining-short and -Reset-short (whole seconds to the end of a window
// the storage keeps beside the log, not when a hit expires) on the
// responses it lets through, Retry-After-short (whole seconds until the
// oldest hit expires) on the 429s it refuses; the same for "long". Each
// request is logged when its response is finished, as "<unix time with ms>
// <client address> <status>".
"use strict";
require("reflect-metadata");
const { NestFactory, APP_GUARD } = require("@nestjs/core");
const { Module, Controller, All, Res } = require("@nestjs/common");
const { ThrottlerModule, ThrottlerGuard } = require("@nestjs/throttler");
const { flags, accessLog } = require("./peer_common.js");

const args = flags({
  "short-limit": { type: "string" },
  "short-ttl": { type: "string" }, // milliseconds
  "long-limit": { type: "string" },
  "long-ttl": { type: "string" },
});

const log = accessLog(args.log);

// Decorators applied by hand: plain JavaScript has no decorator syntax.
class OkController {
  ok(res) {
    res.type("text/plain").send("ok\n");
  }
}
Controller()(OkController);
Res()(OkController.prototype, "ok", 0);
All("*path")(OkController.prototype, "ok", Object.getOwnPropertyDescriptor(OkController.prototype, "ok"));

class AppModule {}
Module({
  imports: [ThrottlerModule.forRoot([
    { name: "short", ttl: Number(args["short-ttl"]), limit: Number(args["short-limit"]) },
    ...(args["long-limit"] ? [{ name: "long", ttl: Number(args["long-ttl"]), limit: Number(args["long-limit"]) }] : []),
  ])],
  controllers: [OkController],
  providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
})(AppModule);

async function main() {
  const app = await NestFactory.create(AppModule, { logger: ["error"] });
  app.use((req, res, next) => {
    const socket = req.socket;
    res.on("finish", () => log(socket.remoteAddress, res.statusCode));
    next();
  });
  await app.listen(Number(args.port), args.host);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
