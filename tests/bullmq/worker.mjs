#!/usr/bin/env node
// A scripted BullMQ incident, run on a real Redis by tests/cli/test_bullmq_real.sh:
//
//   node tests/bullmq/worker.mjs --redis redis://127.0.0.1:PORT [--queue partner-sync]
//
// The queue is emptied (obliterated, its event stream deleted), then ONE job
// named `sync` is added with {attempts: 5, backoff: {type: 'fixed', delay:
// 2000}}, and a Worker (concurrency 1) processes it. Each attempt takes about
// 100 ms (a 100 ms sleep) and then, while the wall clock is inside the
// partner's rate-limit window [the job's timestamp, +5000 ms), throws
// `HTTP 429 Too Many Requests`; after the window it returns {ok: true}. The
// job so fails at about +0.1 s, +2.2 s and +4.3 s and completes on its fourth
// attempt, at about +6.4 s.
//
// The script waits until the job has completed or failed for good, closes
// the worker and the queue and exits 0; it exits 1 when the job has not ended
// within 30 s (or Redis fails), 2 on bad arguments. One line per attempt, and
// the outcome, go to stderr.
//
// BullMQ is the one pinned for the exporter (tools/bullmq-export/package.json),
// loaded from tools/bullmq-export/node_modules (`npm ci --prefix tools/bullmq-export`).
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';

const require = createRequire(new URL('../../tools/bullmq-export/package.json', import.meta.url));
const { Queue, Worker } = require('bullmq');

const JOB_NAME = 'sync';
const JOB_OPTS = { attempts: 5, backoff: { type: 'fixed', delay: 2000 } };
const WORK_MS = 100; // each attempt's work before it answers
const WINDOW_MS = 5000; // the 429 window, from the job's timestamp
const DEADLINE_MS = 30000; // the job must have ended by then
const POLL_MS = 50;
const WATCHDOG_MS = 45000; // the whole script, Redis unreachable included

const USAGE = `usage: node tests/bullmq/worker.mjs --redis URL [--queue NAME]
Runs the scripted partner-sync incident (see the head of this file) on the
queue NAME (default partner-sync) of the Redis at URL.
`;

function parseArgs(argv) {
  const args = { redis: null, queue: 'partner-sync' };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--help' || arg === '-h') {
      process.stdout.write(USAGE);
      process.exit(0);
    }
    if (arg !== '--redis' && arg !== '--queue') throw new Error(`unknown argument '${arg}'`);
    if (i + 1 >= argv.length || argv[i + 1] === '') throw new Error(`${arg} needs a value`);
    args[arg.slice(2)] = argv[++i];
  }
  if (args.redis === null) throw new Error('--redis URL is required');
  return args;
}

const log = line => process.stderr.write(`worker: ${line}\n`);

async function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`worker: ${err.message}\n${USAGE}`);
    return 2;
  }
  // A watchdog for what the polling below cannot see (Redis gone, close hanging).
  setTimeout(() => {
    log(`no end within ${WATCHDOG_MS} ms`);
    process.exit(1);
  }, WATCHDOG_MS).unref();
  // A few reconnections, not BullMQ's default of retrying for ever.
  const connection = { url: args.redis, retryStrategy: times => (times > 3 ? null : 500) };
  const queue = new Queue(args.queue, { connection });
  let redisError = null;
  queue.on('error', err => {
    if (redisError === null) log(`redis: ${err.message}`);
    redisError = err;
  });
  let worker = null;
  try {
    const client = await queue.client;
    // A clean queue: no job, no event and not paused (obliterate pauses first).
    await queue.obliterate({ force: true });
    await client.del(queue.toKey('events'), queue.toKey('meta'));
    await queue.resume();
    await client.del(queue.toKey('events'));

    worker = new Worker(
      args.queue,
      async job => {
        const attempt = job.attemptsMade + 1;
        const started = Date.now();
        await sleep(WORK_MS);
        const now = Date.now();
        const at = `attempt ${attempt} started at +${started - job.timestamp} ms, answered at +${now - job.timestamp} ms`;
        if (now < job.timestamp + WINDOW_MS) {
          log(`${at}: HTTP 429 Too Many Requests`);
          throw new Error('HTTP 429 Too Many Requests');
        }
        log(`${at}: ok`);
        return { ok: true };
      },
      { connection, concurrency: 1 },
    );
    worker.on('error', err => log(`worker error: ${err.message}`));
    await worker.waitUntilReady();

    const job = await queue.add(JOB_NAME, {}, JOB_OPTS);
    log(`added job ${job.id} at ${job.timestamp}`);
    const deadline = job.timestamp + DEADLINE_MS;
    let state;
    for (;;) {
      state = await queue.getJobState(job.id);
      if (state === 'completed' || state === 'failed' || Date.now() > deadline) break;
      await sleep(POLL_MS);
    }
    if (state !== 'completed' && state !== 'failed') {
      log(`job ${job.id} has not ended within ${DEADLINE_MS} ms (state ${state})`);
      return 1;
    }
    const done = await queue.getJob(job.id);
    log(`job ${job.id} ${state} after ${done.attemptsMade} attempts`);
    return 0;
  } catch (err) {
    log(err.message);
    return 1;
  } finally {
    if (worker) await worker.close();
    await queue.close();
  }
}

process.exitCode = await main();
