"""A flask-limiter target for the exitgate peers: every path answers "ok",
limited per client address (flask_limiter.util.get_remote_address) with the
given limit and strategy, rate-limit headers enabled unless --headers off. Each request is logged
from an after_request hook as "<unix time with ms> <client address> <status>".
"""
import argparse
import logging
import threading
import time

from flask import Flask, request
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address

p = argparse.ArgumentParser()
p.add_argument("--host", default="127.0.0.1")
p.add_argument("--port", type=int, required=True)
p.add_argument("--limit", required=True)  # e.g. "20 per minute"
p.add_argument("--strategy", required=True)  # moving-window, fixed-window, ...
p.add_argument("--headers", choices=["on", "off"], default="on")
p.add_argument("--log", required=True)
args = p.parse_args()

app = Flask(__name__)
limiter = Limiter(
    get_remote_address,
    app=app,
    default_limits=[args.limit],
    strategy=args.strategy,
    headers_enabled=args.headers == "on",
    storage_uri="memory://",
)
log = open(args.log, "a", buffering=1)
lock = threading.Lock()
logging.getLogger("werkzeug").setLevel(logging.ERROR)


@app.after_request
def access_log(resp):
    with lock:
        log.write("%.3f %s %d\n" % (time.time(), request.remote_addr, resp.status_code))
    return resp


@app.route("/", defaults={"path": ""})
@app.route("/<path:path>")
def page(path):
    return "ok\n"


app.run(host=args.host, port=args.port, threaded=True)
