// An express-rate-limit target for the exitgate peers: every path answers
// "ok", limited per client address (express-rate-limit's default key,
// request.ip) by its MemoryStore (a fixed window per client, opened by the
// client's first request), with the IETF RateLimit draft headers of
// --headers (draft-6, draft-7 or draft-8) and Retry-After on 429s. Each
// request is logged when its response is finished, as
// "<unix time with ms> <client address> <status>".
"use strict";
const fs = require("node:fs");
const { parseArgs } = require("node:util");
const express = require("express");
const { rateLimit } = require("express-rate-limit");

const { values: args } = parseArgs({
  options: {
    host: { type: "string", default: "127.0.0.1" },
    port: { type: "string" },
    limit: { type: "string" },
    window: { type: "string" }, // milliseconds
    headers: { type: "string", default: "draft-8" },
    log: { type: "string" },
  },
});

const log = fs.openSync(args.log, "a");
const app = express();
app.use((req, res, next) => {
  res.on("finish", () => {
    const now = Date.now();
    const line = `${Math.floor(now / 1000)}.${String(now % 1000).padStart(3, "0")} ${req.socket.remoteAddress} ${res.statusCode}\n`;
    fs.writeSync(log, line);
  });
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
