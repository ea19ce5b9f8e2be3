// What every Node target of the exitgate peers shares: the flags each app
// takes besides its own (--host, --port, --log) and its access log, one
// line per finished response: "<unix time with ms> <client address>
// <status>" (peers.ReadAccessLog).
"use strict";
const fs = require("node:fs");
const { parseArgs } = require("node:util");

// flags parses the common flags and the app's own options.
function flags(own) {
  return parseArgs({
    options: {
      host: { type: "string", default: "127.0.0.1" },
      port: { type: "string" },
      log: { type: "string" },
      ...own,
    },
  }).values;
}

// accessLog opens the log at path and returns a function that writes one
// response's line.
function accessLog(path) {
  const fd = fs.openSync(path, "a");
  return (address, status) => {
    const now = Date.now();
    fs.writeSync(fd, `${Math.floor(now / 1000)}.${String(now % 1000).padStart(3, "0")} ${address} ${status}\n`);
  };
}

module.exports = { flags, accessLog };
