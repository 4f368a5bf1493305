#!/usr/bin/ruby
# frozen_string_literal: true

# Generates tests/data/policy_oracle_sidekiq.json: what Sidekiq itself answers.
#
# For each configuration (a worker's `sidekiq_options retry: ...`, optionally a
# `sidekiq_retry_in` block) this script makes Sidekiq's own
# Sidekiq::JobRetry#local handle a failing job, as the processor does, with
# retry_count set for the n-th failure: Sidekiq decides whether to retry
# (retry_attempts_from, `count < max_retry_attempts`) and computes the delay
# with its private delay_for. Redis is replaced by a connection that discards
# the zadd, and retries_exhausted (the morgue) only notes that Sidekiq gave up.
#
# delay_for adds `rand(10) * (count + 1)`; the script runs each retry twice with
# Kernel#rand (as JobRetry calls it) at its lowest (0) and highest (n - 1)
# value: delays_ms and min_ms are the lowest, max_ms the highest.
#
# Usage (Debian 12: apt-get install ruby-sidekiq):
#   ruby generate.rb ../../policy_oracle_sidekiq.json
#
# Deterministic: mulberry32 with a fixed seed (as tests/data/cron-parser/
# generate.js), no clock in the output, one case a line. See ../README.md.

require "json"
require "logger"
require "sidekiq"
require "sidekiq/job_retry"

SEED = 20250613
RANDOM_RETRY_IN = 300
DELAYS_CAP = 30 # delays recorded for retries 1..min(count, 30)
RETRIES_LIMIT = 1001 # the core refuses more than 1000 retries; probing stops here
EXPECTED_VERSION = "6.4.1" # Debian 12's ruby-sidekiq

# ---------------------------------------------------------------- mulberry32

# The 32-bit mulberry32 generator, bit for bit as in generate.js.
class Mulberry32
  MASK = 0xFFFFFFFF

  def initialize(seed)
    @state = seed & MASK
  end

  def next
    @state = (@state + 0x6D2B79F5) & MASK
    t = @state
    t = ((t ^ (t >> 15)) * (t | 1)) & MASK
    t ^= (t + (((t ^ (t >> 7)) * (t | 61)) & MASK)) & MASK
    ((t ^ (t >> 14)) & MASK) / 4294967296.0
  end

  def int(lo, hi)
    lo + (self.next * (hi - lo + 1)).floor
  end

  def pick(xs)
    xs[(self.next * xs.length).floor]
  end

  def chance(p)
    self.next < p
  end
end

# ---------------------------------------------------------------- Sidekiq calls

class Boom < StandardError; end

# Stands in for Redis: JobRetry only schedules the retry with zadd.
class DiscardingConnection
  def zadd(*) = nil
end

def Sidekiq.redis
  yield DiscardingConnection.new
end

# Observes JobRetry: the delay delay_for returns, whether Sidekiq gave up, and
# Kernel#rand held at one extreme.
module Probe
  attr_accessor :delay, :exhausted, :highest, :draws

  def delay_for(worker, count, exception)
    self.delay = super
  end

  def retries_exhausted(_worker, _msg, _exception)
    self.exhausted = true
  end

  def rand(*args)
    unless args.length == 1 && args[0].is_a?(Integer) && args[0] >= 1
      raise "unexpected rand(#{args.inspect})"
    end

    self.draws += 1
    highest ? args[0] - 1 : 0
  end
end
Sidekiq::JobRetry.prepend(Probe)

def worker_class(config)
  klass = Class.new do
    include Sidekiq::Worker
    def perform; end
  end
  klass.sidekiq_options(retry: config["retry"]) if config.key?("retry")
  if config.key?("retry_in")
    # The block as a user writes it: `sidekiq_retry_in { |count, exception| ... }`.
    klass.sidekiq_retry_in(&eval("proc { |count, exception| #{config["retry_in"]} }")) # rubocop:disable Security/Eval
  end
  klass
end

# The delay in seconds Sidekiq schedules after the n-th failure, or nil when it
# does not retry; `draws` is how often it called rand.
def failure(worker, n, highest)
  job = { "class" => "OracleWorker", "args" => [], "jid" => "oracle", "queue" => "default" }
  job["retry_count"] = n - 2 if n >= 2
  retry_handler = Sidekiq::JobRetry.new
  retry_handler.highest = highest
  retry_handler.draws = 0
  begin
    retry_handler.local(worker, JSON.generate(job), "default") { raise Boom }
  rescue Sidekiq::JobRetry::Skip
    nil
  rescue Boom
    return [nil, 0] # retry: false, the error is raised on
  end
  return [nil, 0] if retry_handler.exhausted

  [retry_handler.delay, retry_handler.draws]
end

def oracle(config)
  worker = worker_class(config).new
  count = 0
  lows = []
  highs = []
  while count < RETRIES_LIMIT
    low, draws = failure(worker, count + 1, false)
    break if low.nil?

    count += 1
    next if count > DELAYS_CAP

    raise "no jitter drawn for #{config}" if draws.zero?

    lows << low * 1000
    highs << failure(worker, count, true)[0] * 1000
  end
  raise "#{config} retries without limit" if count >= RETRIES_LIMIT

  { "config" => config, "retries" => count, "delays_ms" => lows, "min_ms" => lows,
    "max_ms" => highs }
end

# ---------------------------------------------------------------- configurations

# sidekiq_retry_in bodies: arithmetic in count, and ones that give 0 or less
# for some counts (Sidekiq then falls back to its own formula).
RETRY_IN = [
  "10 * (count + 1)",
  "count ** 2 + 30",
  "(count + 1) * 60",
  "30",
  "count * 5",
  "0",
  "-5",
  "count - 2",
  "(count + 1) ** 3",
  "60 * 60",
  "5 + count * count"
].freeze

CURATED = [
  {},
  { "retry" => true },
  { "retry" => false },
  { "retry" => 0 },
  { "retry" => 1 },
  { "retry" => 5 },
  { "retry" => 25 },
  { "retry" => 30 },
  { "retry" => 1000 },
  *RETRY_IN.map { |text| { "retry" => 5, "retry_in" => text } },
  { "retry_in" => "10 * (count + 1)" },
  { "retry" => false, "retry_in" => "30" }
].freeze

def random_retry(rng)
  r = rng.next
  return :absent if r < 0.10
  return true if r < 0.20
  return false if r < 0.25
  return rng.int(0, 12) if r < 0.65
  return rng.int(13, 40) if r < 0.90

  rng.int(41, 1000)
end

# A sidekiq_retry_in block with a random retry value.
def random_retry_in_config(rng)
  config = {}
  retry_value = random_retry(rng)
  config["retry"] = retry_value unless retry_value == :absent
  config["retry_in"] = rng.pick(RETRY_IN)
  config
end

# ---------------------------------------------------------------- output

def config_key(config)
  JSON.generate(config.sort.to_h)
end

# The curated list; then every plain `retry` value the core accepts (0..1000:
# there are only that many, so all of them rather than a sample); then seeded
# random sidekiq_retry_in configurations.
def configs
  out = CURATED.map { |c| ["curated", c] }
  seen = out.to_h { |_, c| [config_key(c), true] }
  (0..RETRIES_LIMIT - 1).each do |n|
    config = { "retry" => n }
    out << ["all", config] unless seen[config_key(config)]
    seen[config_key(config)] = true
  end
  rng = Mulberry32.new(SEED)
  produced = 0
  while produced < RANDOM_RETRY_IN
    config = random_retry_in_config(rng)
    next if seen[config_key(config)]

    seen[config_key(config)] = true
    out << ["random", config]
    produced += 1
  end
  out
end

def main(out)
  if Sidekiq::VERSION != EXPECTED_VERSION
    abort "expected sidekiq #{EXPECTED_VERSION}, found #{Sidekiq::VERSION} " \
          "(Debian 12: apt-get install ruby-sidekiq)"
  end
  Sidekiq.logger = Logger.new(IO::NULL)
  cases = configs.map { |tag, config| oracle(config).merge("tag" => tag) }
  about = "Reference retry plans from Sidekiq's own JobRetry#local and delay_for. Generated " \
          "by tests/data/policy-oracles/sidekiq/generate.rb; do not edit by hand. config: the " \
          "worker's sidekiq_options retry (absent: the default) and, as retry_in, the body of a " \
          "sidekiq_retry_in { |count, exception| ... } block; retries: how many retries Sidekiq " \
          "makes; delays_ms = min_ms: the delay before retry 1..min(retries, #{DELAYS_CAP}) " \
          "with rand at 0; max_ms: with rand(10) at 9."
  lines = ["{"]
  lines << "  \"about\": #{JSON.generate(about)},"
  lines << "  \"library\": \"sidekiq\","
  lines << "  \"version\": #{JSON.generate(Sidekiq::VERSION)},"
  lines << "  \"seed\": #{SEED},"
  lines << "  \"delays_cap\": #{DELAYS_CAP},"
  lines << "  \"cases\": ["
  cases.each_with_index do |c, i|
    lines << "    #{JSON.generate(c)}#{i + 1 < cases.length ? "," : ""}"
  end
  lines << "  ]"
  lines << "}"
  File.write(out, "#{lines.join("\n")}\n")
  pending = cases.count { |c| c["config"].key?("retry_in") }
  puts "sidekiq #{Sidekiq::VERSION}: #{cases.length} configs (#{CURATED.length} curated, " \
       "#{pending} with retry_in) -> #{out}"
end

abort "usage: generate.rb OUT.json" unless ARGV.length == 1
main(ARGV[0])
