#!/usr/bin/env node
// Exports BullMQ queues, their jobs and their event streams, as the JSON that
// `rehearse import --bullmq` reads (docs/bullmq-export.md):
//
//   node tools/bullmq-export/export.mjs --redis redis://127.0.0.1:6379 \
//     --queue NAME [--queue NAME2 ...] [--prefix bull] [--out FILE]
//
// It reads through BullMQ's own API (the version pinned in package.json,
// installed with `npm ci --prefix tools/bullmq-export`) and writes nothing to
// Redis: every job of every state (Queue.getJobs over all states, each job's
// state from Job.getState) and the queue's event stream (XRANGE - + on
// `<prefix>:<queue>:events`, through the queue's own client).
//
// Exit status: 0 exported; 1 the export failed (Redis refused or did not
// answer, a Redis error, --out not writable); 2 bad arguments. Diagnostics
// go to stderr.
import { createRequire } from 'node:module';
import { rename, rm, writeFile } from 'node:fs/promises';
import { dirname, basename, join } from 'node:path';
import { Queue } from 'bullmq';

const require = createRequire(import.meta.url);
// The BullMQ that is loaded, not the one package.json asks for.
const BULLMQ_VERSION = require('bullmq/package.json').version;

const FORMAT = 'rehearse-bullmq-export';
const FORMAT_VERSION = 1;
// How long connecting to Redis may take before the export gives up.
const CONNECT_TIMEOUT_MS = 10000;

const USAGE = `usage: node tools/bullmq-export/export.mjs --redis URL --queue NAME [--queue NAME ...]
                                         [--prefix PREFIX] [--out FILE]

Writes the jobs (every state) and the event stream of each BullMQ queue as
the JSON \`rehearse import --bullmq FILE\` reads (docs/bullmq-export.md).

  --redis URL      the Redis holding the queues, e.g. redis://127.0.0.1:6379
                   (redis://[user:password@]host:port[/db], rediss:// for TLS)
  --queue NAME     a queue to export; repeat for several, exported in this order
  --prefix PREFIX  the queues' key prefix (BullMQ's \`prefix\` option; default bull)
  --out FILE       write FILE (through a temporary file renamed into place)
                   instead of standard output
  --help           this text

Exit status: 0 exported, 1 the export failed (Redis, --out), 2 bad arguments.
`;

class UsageError extends Error {}

// parseArgs(argv) -> {redis, queues, prefix, out, help}; throws UsageError.
// Options take their value as the next argument or after `=`.
function parseArgs(argv) {
  const args = { redis: null, queues: [], prefix: 'bull', out: null, help: false };
  const takesValue = new Set(['--redis', '--queue', '--prefix', '--out']);
  const seen = new Set();
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i];
    let value;
    const eq = arg.indexOf('=');
    if (arg.startsWith('--') && eq > 0) {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    if (arg === '--help' || arg === '-h') {
      if (value !== undefined) throw new UsageError(`${arg} takes no value`);
      args.help = true;
      continue;
    }
    if (!takesValue.has(arg)) {
      throw new UsageError(arg.startsWith('-') ? `unknown option ${arg}` : `unexpected argument '${arg}'`);
    }
    if (value === undefined) {
      if (i + 1 >= argv.length) throw new UsageError(`${arg} needs a value`);
      value = argv[++i];
    }
    if (value === '') throw new UsageError(`${arg} needs a non-empty value`);
    if (arg !== '--queue' && seen.has(arg)) throw new UsageError(`${arg} given twice`);
    seen.add(arg);
    if (arg === '--redis') args.redis = value;
    else if (arg === '--queue') args.queues.push(value);
    else if (arg === '--prefix') args.prefix = value;
    else args.out = value;
  }
  if (args.help) return args;
  if (args.redis === null) throw new UsageError('--redis URL is required');
  if (!/^rediss?:\/\//.test(args.redis)) {
    throw new UsageError(`--redis ${args.redis}: expected a redis:// or rediss:// URL`);
  }
  try {
    new URL(args.redis);
  } catch {
    throw new UsageError(`--redis ${args.redis}: not a URL`);
  }
  if (args.queues.length === 0) throw new UsageError('at least one --queue NAME is required');
  const dup = args.queues.find((q, i) => args.queues.indexOf(q) !== i);
  if (dup !== undefined) throw new UsageError(`--queue ${dup} given twice`);
  return args;
}

// Numeric job ids (BullMQ's own counter) in numeric order, then any other id
// in code-unit order.
function compareIds(a, b) {
  const na = /^\d+$/.test(a);
  const nb = /^\d+$/.test(b);
  if (na && nb) return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
  if (na !== nb) return na ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

const orNull = v => (v === undefined || v === null ? null : v);

// One job as the export writes it: BullMQ's decoded fields (job.toJSON()),
// with the state it was in when read.
function jobRecord(job, state) {
  const j = job.toJSON();
  return {
    id: String(j.id),
    name: j.name,
    data: orNull(j.data),
    opts: j.opts,
    timestamp: j.timestamp,
    processedOn: orNull(j.processedOn),
    finishedOn: orNull(j.finishedOn),
    attemptsMade: j.attemptsMade ?? 0,
    failedReason: j.failedReason === undefined || j.failedReason === null ? null : String(j.failedReason),
    stacktrace: Array.isArray(j.stacktrace) ? j.stacktrace.map(String) : [],
    returnvalue: orNull(j.returnvalue),
    state,
  };
}

async function exportJobs(queue) {
  // One Lua script lists the ids of every state at once; each job is then
  // read on its own, so a job removed meanwhile comes back empty and is left
  // out, and a job that moved on is reported in the state it has when read.
  const jobs = (await queue.getJobs()).filter(Boolean);
  const records = [];
  for (const job of jobs) {
    const state = await job.getState();
    records.push(jobRecord(job, state));
  }
  records.sort((a, b) => a.timestamp - b.timestamp || compareIds(a.id, b.id));
  return records;
}

// The queue's event stream, oldest first. BullMQ trims it (its
// streams.events.maxLen option, 10000 by default), so the oldest events of a
// busy queue may be gone.
async function exportEvents(queue, client) {
  const entries = await client.xrange(queue.toKey('events'), '-', '+');
  return entries.map(([id, flat]) => {
    const fields = {};
    for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]] = String(flat[i + 1]);
    const { event = null, jobId = null, ...rest } = fields;
    return { id, at: Number.parseInt(id.split('-')[0], 10), event, jobId, fields: rest };
  });
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function exportQueue(args, name, queues) {
  const queue = new Queue(name, {
    prefix: args.prefix,
    // Read only: the Queue constructor would otherwise write its meta hash.
    skipMetasUpdate: true,
    connection: {
      url: args.redis,
      connectTimeout: CONNECT_TIMEOUT_MS,
      // Give up after a few reconnections instead of retrying for ever.
      retryStrategy: times => (times > 3 ? null : 500),
    },
  });
  queues.push(queue);
  let lastError = null;
  queue.on('error', err => {
    lastError = err;
  });
  let client;
  try {
    client = await withTimeout(queue.client, CONNECT_TIMEOUT_MS, `connecting to ${args.redis}`);
  } catch (err) {
    throw new Error(`${err.message}${lastError && lastError !== err ? ` (${lastError.message})` : ''}`);
  }
  const jobs = await exportJobs(queue);
  const events = await exportEvents(queue, client);
  if (jobs.length === 0 && events.length === 0 && (await client.exists(queue.toKey('meta'))) === 0) {
    console.error(
      `export: warning: queue '${name}' has no jobs, events or meta key under prefix '${args.prefix}' (wrong --queue or --prefix?)`,
    );
  }
  return { name, prefix: args.prefix, jobs, events };
}

async function writeOutput(text, out) {
  if (out === null) {
    await new Promise((resolve, reject) => process.stdout.write(text, err => (err ? reject(err) : resolve())));
    return;
  }
  const tmp = join(dirname(out), `.${basename(out)}.${process.pid}.tmp`);
  try {
    await writeFile(tmp, text);
    await rename(tmp, out);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

async function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`export: ${err.message}\n(see --help)\n`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const exportedAt = Date.now();
  const queues = [];
  try {
    const exported = [];
    for (const name of args.queues) exported.push(await exportQueue(args, name, queues));
    const doc = {
      format: FORMAT,
      version: FORMAT_VERSION,
      bullmq: BULLMQ_VERSION,
      exported_at: exportedAt,
      queues: exported,
    };
    await writeOutput(`${JSON.stringify(doc, null, 2)}\n`, args.out);
    return 0;
  } catch (err) {
    process.stderr.write(`export: ${err.message}\n`);
    return 1;
  } finally {
    await Promise.allSettled(queues.map(q => q.close()));
  }
}

process.exitCode = await main();
