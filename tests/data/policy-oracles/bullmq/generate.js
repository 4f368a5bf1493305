'use strict';
// Generates tests/data/policy_oracle_bullmq.json: what BullMQ itself answers.
//
// For each job configuration a BullMQ user writes ({attempts, backoff}), this
// script builds a real bullmq Job (on a stand-in queue object: nothing here
// talks to Redis) and asks BullMQ's own Job#shouldRetryJob, after the n-th
// failure (attemptsMade = n - 1), whether it retries and with which delay.
// shouldRetryJob checks `attemptsMade + 1 < attempts` and calls
// Backoffs.calculate on the backoff the Job constructor normalized
// (Backoffs.normalize: a number is a fixed delay). No backoff gives an
// undefined delay, which moveToFailed treats as "retry at once": 0 here.
//
// Jitter bounds: BullMQ draws Math.random() once per jittered delay. The
// script stubs Math.random to 0 and to 1 - 2^-53 (the largest double below 1;
// V8's own generator never exceeds 1 - 2^-52) and records both results as
// min_ms / max_ms. delays_ms, the planned delay before jitter, is BullMQ's
// answer for the same backoff without its jitter key.
//
// Usage: npm ci && node generate.js ../../policy_oracle_bullmq.json
//
// Deterministic: mulberry32 with a fixed seed (as tests/data/cron-parser/
// generate.js), no clock in the output, one case a line. See ../README.md.

const fs = require('fs');
const { Job } = require('bullmq');
const bullmqVersion = require('bullmq/package.json').version;

const EXPECTED_VERSION = '5.81.0';
const SEED = 20250614;
const RANDOM_CONFIGS = 1200;
const DELAYS_CAP = 30; // delays recorded for retries 1..min(count, 30)
const RETRIES_LIMIT = 1001; // the core refuses more than 1000 retries; probing stops here
const RANDOM_HIGHEST = 1 - Math.pow(2, -53);

if (bullmqVersion !== EXPECTED_VERSION) {
  throw new Error('expected bullmq ' + EXPECTED_VERSION + ', found ' + bullmqVersion + ' (run npm ci)');
}

// ---------------------------------------------------------------- mulberry32

// mulberry32: the same small, named, seeded generator as cron-parser/generate.js.
function makeRng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: (xs) => xs[Math.floor(next() * xs.length)],
    chance: (p) => next() < p,
  };
}

// ---------------------------------------------------------------- BullMQ calls

// The few queue fields a Job's constructor and shouldRetryJob read.
const QUEUE = { name: 'oracle', opts: {}, keys: {}, qualifiedName: 'bull:oracle', toKey: (k) => 'bull:oracle:' + k };

// [retried, delay ms, Math.random calls] after the n-th failure, with
// Math.random held at `rand`.
async function failure(options, n, rand) {
  const job = new Job(QUEUE, 'oracle', {}, JSON.parse(JSON.stringify(options)));
  job.attemptsMade = n - 1;
  const saved = Math.random;
  let draws = 0;
  Math.random = () => {
    draws++;
    return rand;
  };
  try {
    const [retried, delay] = await job.shouldRetryJob(new Error('oracle'));
    return [retried, delay === undefined ? 0 : delay, draws];
  } finally {
    Math.random = saved;
  }
}

function withoutJitter(config) {
  if (config.backoff === null || typeof config.backoff !== 'object') return config;
  const backoff = Object.assign({}, config.backoff);
  delete backoff.jitter;
  return Object.assign({}, config, { backoff });
}

async function oracle(config) {
  let count = 0;
  const delays = [], lows = [], highs = [];
  let jittered = false;
  while (count < RETRIES_LIMIT) {
    const [retried, low, draws] = await failure(config, count + 1, 0);
    if (!retried) break;
    count++;
    if (count > DELAYS_CAP) continue;
    const high = (await failure(config, count, RANDOM_HIGHEST))[1];
    delays.push(draws > 0 ? (await failure(withoutJitter(config), count, 0))[1] : low);
    lows.push(low);
    highs.push(high);
    jittered = jittered || draws > 0;
  }
  if (count >= RETRIES_LIMIT) throw new Error(JSON.stringify(config) + ' retries without limit');
  for (const d of delays.concat(lows, highs)) {
    if (!Number.isInteger(d) || d < 0) throw new Error(JSON.stringify(config) + ': delay ' + d);
  }
  const c = { config, retries: count, delays_ms: delays };
  if (jittered) {
    c.min_ms = lows;
    c.max_ms = highs;
  }
  return c;
}

// ---------------------------------------------------------------- configurations

const CURATED = [
  {},
  { attempts: 1 },
  { attempts: 2 },
  { attempts: 5 },
  { attempts: 4, backoff: { type: 'exponential', delay: 1800000 } },
  { attempts: 3, backoff: 1000 },
  { attempts: 3, backoff: 0 },
  { attempts: 3, backoff: { type: 'fixed', delay: 5000 } },
  { attempts: 3, backoff: { type: 'fixed', delay: 5000, jitter: 0.5 } },
  { attempts: 3, backoff: { type: 'fixed', delay: 5000, jitter: 1 } },
  { attempts: 3, backoff: { type: 'fixed', delay: 5000, jitter: 0 } },
  { attempts: 6, backoff: { type: 'exponential', delay: 1000 } },
  { attempts: 6, backoff: { type: 'exponential', delay: 1000, jitter: 0.5 } },
  { attempts: 6, backoff: { type: 'exponential', delay: 3, jitter: 0.3 } },
  { attempts: 6, backoff: { type: 'exponential', delay: 0 } },
  { attempts: 6, backoff: { type: 'exponential', delay: 0, jitter: 0.5 } },
  { attempts: 31, backoff: { type: 'exponential', delay: 1 } },
  { attempts: 1001, backoff: { type: 'fixed', delay: 100 } },
  { attempts: 1001, backoff: { type: 'exponential', delay: 1, jitter: 0.25 } },
  { attempts: 3, backoff: { type: 'exponential', delay: 2000 }, removeOnFail: true },
];

const JITTERS = [0.1, 0.2, 0.25, 0.3, 0.5, 0.75, 0.9, 0.99, 1];

function randomAttempts(rng) {
  const r = rng.next();
  if (r < 0.6) return rng.int(1, 12);
  if (r < 0.9) return rng.int(13, 40);
  return rng.int(41, 1001);
}

function randomDelay(rng) {
  const r = rng.next();
  if (r < 0.05) return 0;
  if (r < 0.35) return rng.int(1, 1000);
  if (r < 0.75) return rng.int(1001, 60000);
  return rng.int(60001, 3600000);
}

function randomJitter(rng) {
  const r = rng.next();
  if (r < 0.5) return undefined;
  if (r < 0.55) return 0;
  if (r < 0.8) return rng.pick(JITTERS);
  return Math.round(rng.next() * 1000) / 1000; // a three-decimal jitter, as users write one
}

function randomBackoff(rng) {
  const r = rng.next();
  if (r < 0.15) return undefined;
  if (r < 0.3) return randomDelay(rng);
  const backoff = { type: r < 0.55 ? 'fixed' : 'exponential', delay: randomDelay(rng) };
  const jitter = randomJitter(rng);
  if (jitter !== undefined) backoff.jitter = jitter;
  return backoff;
}

function randomConfig(rng) {
  const config = {};
  if (rng.chance(0.95)) config.attempts = randomAttempts(rng);
  const backoff = randomBackoff(rng);
  if (backoff !== undefined) config.backoff = backoff;
  return config;
}

// ---------------------------------------------------------------- output

async function main() {
  const out = process.argv[2];
  if (!out) throw new Error('usage: node generate.js OUT.json');
  const rng = makeRng(SEED);
  const configs = CURATED.map((config) => ({ config, tag: 'curated' }));
  const seen = new Set(configs.map((c) => JSON.stringify(c.config)));
  while (configs.length < CURATED.length + RANDOM_CONFIGS) {
    const config = randomConfig(rng);
    const key = JSON.stringify(config);
    if (seen.has(key)) continue;
    seen.add(key);
    configs.push({ config, tag: 'random' });
  }
  const cases = [];
  for (const { config, tag } of configs) cases.push(Object.assign(await oracle(config), { tag }));

  const lines = ['{'];
  lines.push('  "about": ' + JSON.stringify(
    "Reference retry plans from BullMQ's own Job#shouldRetryJob and Backoffs.calculate. " +
    'Generated by tests/data/policy-oracles/bullmq/generate.js; do not edit by hand. ' +
    'config: the job options as written; retries: how many retries BullMQ makes; delays_ms: ' +
    'the delay before retry 1..min(retries, ' + DELAYS_CAP + ') (no backoff: 0, retried at ' +
    'once; with jitter: BullMQ\'s delay for the same backoff without jitter); min_ms/max_ms: ' +
    'the delay with Math.random() at 0 and at 1 - 2^-53, present when BullMQ draws jitter.') + ',');
  lines.push('  "library": "bullmq",');
  lines.push('  "version": ' + JSON.stringify(bullmqVersion) + ',');
  lines.push('  "seed": ' + SEED + ',');
  lines.push('  "delays_cap": ' + DELAYS_CAP + ',');
  lines.push('  "cases": [');
  cases.forEach((c, i) => lines.push('    ' + JSON.stringify(c) + (i + 1 < cases.length ? ',' : '')));
  lines.push('  ]');
  lines.push('}');
  fs.writeFileSync(out, lines.join('\n') + '\n');
  const jittered = cases.filter((c) => c.min_ms).length;
  console.log('bullmq %s: %d configs (%d curated, %d with jitter) -> %s',
    bullmqVersion, cases.length, CURATED.length, jittered, out);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
