// An express target for the exitgate peers limited by express-throttle, as
// its README sets it up: throttle({rate: --rate}) keyed on the client
// address (req.ip; no proxy is trusted), a token bucket of --burst tokens
// (default the rate's amount) refilled continuously at the rate, fractional
// tokens; refused requests take nothing. A refusal is its bare 429 (no
// header, no body). Each request is logged when its response is finished,
// as "<unix time with ms> <client address> <status>".
"use strict";
const express = require("express");
const throttle = require("express-throttle");
const { flags, accessLog } = require("./peer_common.js");

const args = flags({
  rate: { type: "string" }, // e.g. "6/min", "5/s"
  burst: { type: "string", default: "0" },
});

const log = accessLog(args.log);
const app = express();
app.use((req, res, next) => {
  const address = req.socket.remoteAddress;
  res.on("finish", () => log(address, res.statusCode));
  next();
});
const options = { rate: args.rate };
if (args.burst !== "0") options.burst = Number(args.burst);
app.use(throttle(options));
app.use((req, res) => res.type("text/plain").send("ok\n"));
app.listen(Number(args.port), args.host);
