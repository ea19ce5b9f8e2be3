// An express-rate-limit target for the exitgate peers: every path answers
// "ok", limited per client address (express-rate-limit's default key,
// request.ip) by its MemoryStore (a fixed window per client, opened by the
// client's first request), with the IETF RateLimit draft headers of
// --headers (draft-6, draft-7 or draft-8) and Retry-After on 429s. Each
// request is logged when its response is finished, as
// "<unix time with ms> <client address> <status>".
"use strict";
const express = require("express");
const { rateLimit } = require("express-rate-limit");
const { flags, accessLog } = require("./peer_common.js");

const args = flags({
  limit: { type: "string" },
  window: { type: "string" }, // milliseconds
  headers: { type: "string", default: "draft-8" },
});

const log = accessLog(args.log);
const app = express();
app.use((req, res, next) => {
  res.on("finish", () => log(req.socket.remoteAddress, res.statusCode));
  next();
});
app.use(
  rateLimit({
    windowMs: Number(args.window),
    limit: Number(args.limit),
    standardHeaders: args.headers,
    legacyHeaders: false,
  }),
);
app.use((req, res) => res.type("text/plain").send("ok\n"));
app.listen(Number(args.port), args.host);
