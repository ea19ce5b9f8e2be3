# A Rack::Attack target for the exitgate peers: every path answers "ok",
# throttled per client address (req.ip) with Rack::Attack's throttle, whose
# windows are whole periods of the epoch clock (Time.now.to_i / period), the
# same for every client; the cache is ActiveSupport's MemoryStore, as
# Rack::Attack's README sets it up outside Rails. Retry-After (seconds to the
# period's end) only with --retry-after on, Rack::Attack's
# throttled_response_retry_after_header. Served by puma; each request is
# logged as "<unix time with ms> <client address> <status>".
require "optparse"
require "active_support"
require "active_support/cache"
require "rack"
require "rack/attack"
require "rack/handler/puma"

opts = { host: "127.0.0.1", retry_after: "off" }
OptionParser.new do |o|
  o.on("--host HOST") { |v| opts[:host] = v }
  o.on("--port PORT", Integer) { |v| opts[:port] = v }
  o.on("--limit N", Integer) { |v| opts[:limit] = v }
  o.on("--period SECONDS", Integer) { |v| opts[:period] = v }
  o.on("--retry-after ON", %w[on off]) { |v| opts[:retry_after] = v }
  o.on("--log FILE") { |v| opts[:log] = v }
end.parse!
%i[port limit period log].each { |k| abort("rack_attack_app: --#{k} is required") unless opts[k] }

Rack::Attack.cache.store = ActiveSupport::Cache::MemoryStore.new
Rack::Attack.throttled_response_retry_after_header = opts[:retry_after] == "on"
Rack::Attack.throttle("req/ip", limit: opts[:limit], period: opts[:period]) { |req| req.ip }

LOG = File.open(opts[:log], "a")
LOG.sync = true
LOCK = Mutex.new

# AccessLog sits outside Rack::Attack, so it logs throttled requests too.
class AccessLog
  def initialize(app) = @app = app

  def call(env)
    status, headers, body = @app.call(env)
    line = format("%.3f %s %d\n", Time.now.to_f, Rack::Request.new(env).ip, status)
    LOCK.synchronize { LOG.write(line) }
    [status, headers, body]
  end
end

app = Rack::Builder.new do
  use AccessLog
  use Rack::Attack
  run ->(_env) { [200, { "content-type" => "text/plain" }, ["ok\n"]] }
end

Rack::Handler::Puma.run(app, Host: opts[:host], Port: opts[:port], Threads: "8:16", Silent: true)
