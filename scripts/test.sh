#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine with Go: installs the real
# peers the tests run against (when missing), checks formatting and vet, and
# runs every test under the race detector. Tests start and stop their own
# peers (nginx, haproxy, tinyproxy, redis-server, flask-limiter,
# express-rate-limit and Rack::Attack apps, Varnish with vsthrottle, and the gateway's clients curl,
# Python requests and Scrapy; the Node targets' npm modules go to the user
# cache) in temporary directories, so nothing is left running afterwards. The dashboard's
# browser test writes its screenshot to $EXITGATE_SCREENSHOT (default:
# exitgate-dashboard.png in the temporary directory).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the real-peer tests need, as "command:package"; chromium
# runs the dashboard's browser test (chromedp, headless).
peers=(nginx:nginx haproxy:haproxy tinyproxy:tinyproxy redis-server:redis-server node:nodejs npm:npm curl:curl chromium:chromium)

missing=()
for p in "${peers[@]}"; do
	# nginx and haproxy live in /usr/sbin, often not on a non-root PATH.
	command -v "${p%%:*}" >/dev/null 2>&1 || [[ -x /usr/sbin/${p%%:*} ]] || missing+=("${p#*:}")
done
# Python modules, checked with Debian's interpreter: a python3 earlier on
# PATH (pyenv) does not see Debian's packages.
/usr/bin/python3 -c 'import flask_limiter' >/dev/null 2>&1 || missing+=(python3-flask-limiter)
# The gateway's real clients (exitgate serve): Python requests and Scrapy.
/usr/bin/python3 -c 'import requests' >/dev/null 2>&1 || missing+=(python3-requests)
/usr/bin/python3 -c 'import scrapy' >/dev/null 2>&1 || missing+=(python3-scrapy)
# Ruby's Rack::Attack (a held-out limiter of peerbench), its cache and puma.
ruby -e 'require "rack/attack"; require "active_support/cache"; require "rack/handler/puma"' >/dev/null 2>&1 ||
	missing+=(ruby-rack-attack ruby-activesupport puma)
# Varnish Cache with varnish-modules' vsthrottle (a held-out limiter of peerbench).
command -v varnishd >/dev/null 2>&1 || [[ -x /usr/sbin/varnishd ]] || missing+=(varnish)
compgen -G '/usr/lib/*/varnish/vmods/libvmod_vsthrottle.so' >/dev/null || missing+=(varnish-modules)
# Apache httpd with mod_qos and with mod_evasive (held-out limiters of peerbench).
command -v apache2 >/dev/null 2>&1 || [[ -x /usr/sbin/apache2 ]] || missing+=(apache2)
[[ -e /usr/lib/apache2/modules/mod_qos.so ]] || missing+=(libapache2-mod-qos)
[[ -e /usr/lib/apache2/modules/mod_evasive20.so ]] || missing+=(libapache2-mod-evasive)
if ((${#missing[@]})); then
	echo "test.sh: installing ${missing[*]}" >&2
	sudo=""
	[[ $(id -u) -eq 0 ]] || sudo="sudo"
	# Keep package scripts from starting system services: the tests start
	# their own instances on loopback and stop them.
	policy=/usr/sbin/policy-rc.d
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
		$sudo chmod +x "$policy"
		trap '$sudo rm -f "$policy"' EXIT
	fi
	$sudo apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [[ -n $unformatted ]]; then
	echo "test.sh: gofmt would rewrite:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go vet ./...

# Real-peer tests fail instead of skipping when their program is missing.
export EXITGATE_REQUIRE_PEERS=1
# internal/peerbench holds real limiters' runs to their simulated twins
# within 5 points, measured in real time: it runs on its own, after the
# rest. Beside cmd/exitgate's fleets of worker processes the real learner's
# first 30 s ran slow (one real run read 75.6% against its twin's 83.2%,
# 82.5% on an idle machine; 22% beside a fleet test on this 2-core
# machine), a measure of the machine, not of the twin. The rest takes about
# as long as cmd/exitgate alone, so the suite is no longer for it.
go test -race -timeout 10m "$@" $(go list ./... | grep -v '/internal/peerbench$')
go test -race -timeout 10m "$@" ./internal/peerbench

# The Colly example is a module of its own (Colly stays out of exitgate's
# go.mod), so ./... above does not reach it.
(cd examples/colly && go vet ./... && go test -race -timeout 2m "$@" ./...)
