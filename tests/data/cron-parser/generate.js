'use strict';
// Generates tests/data/cron_vectors.json: what cron-parser 4.9.0 (the version
// BullMQ 5.81 pins) answers for a curated list of expressions, a seeded
// random batch from a grammar, and expressions it rejects. The C++ test
// tests/model/test_cron_vectors.cpp checks the core against every entry; CI
// only reads the committed JSON (no network). See README.md here.
//
// Usage: npm ci && node generate.js ../cron_vectors.json
//
// Reference calls: parseExpression(expr, { currentDate: <ms>, tz: 'UTC' }),
// then next() five times. cron-parser gives up after 10000 loop steps
// ("loop limit exceeded") on rare-but-valid expressions; for those we restart
// it further on (see refNext) and mark the case `loop_limit`, so the vector
// still holds the instant cron-parser's own rule selects.

const fs = require('fs');
const path = require('path');
const parser = require('cron-parser');
const parserVersion = require('cron-parser/package.json').version;

if (parserVersion !== '4.9.0') {
  throw new Error('expected cron-parser 4.9.0, found ' + parserVersion + ' (run npm ci)');
}

const SEED = 20240917;
const RANDOM_EXPRESSIONS = 3000;
const RANDOM_JUNK = 1200;
const LOOP_LIMIT_MESSAGE = 'Invalid expression, loop limit exceeded';
const DAY_MS = 86400000;
const RESTART_STEP_MS = 9000 * DAY_MS; // < the ~9800 days a failed 10000-step scan covers
const RESTARTS_MAX = 17;               // 17 * 9000 days > one 400-year cycle (146097 days)

// ---------------------------------------------------------------- utilities

// mulberry32: a small, named, seeded generator (never Math.random).
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

// The core's instant format: seconds always, milliseconds only when non-zero.
function iso(ms) {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

function ms(isoText) {
  const t = Date.parse(isoText);
  if (Number.isNaN(t)) throw new Error('bad instant ' + isoText);
  return t;
}

function parse(expr, fromMs) {
  // A fresh options object each time: cron-parser stores `#n` in it.
  return parser.parseExpression(expr, { currentDate: fromMs, tz: 'UTC' });
}

// First instant strictly after fromMs, or null when there is none within a
// 400-year cycle (the expression never fires). Throws cron-parser's own
// errors other than the loop limit.
function refNext(expr, fromMs) {
  try {
    return { at: parse(expr, fromMs).next().getTime(), loopLimit: false };
  } catch (err) {
    if (err.message !== LOOP_LIMIT_MESSAGE) throw err;
  }
  // A scan that hit the limit made 10000 steps without a match, and each
  // step was a day or a month (hour, minute and second steps only happen on
  // a matching day, which always yields a match; at most ~150 of them on the
  // start day), so there is no match in (T, T + ~9800 days]; restarting
  // every 9000 days therefore finds the first match after fromMs.
  for (let i = 1; i <= RESTARTS_MAX; i++) {
    try {
      return { at: parse(expr, fromMs + i * RESTART_STEP_MS).next().getTime(), loopLimit: true };
    } catch (err) {
      if (err.message !== LOOP_LIMIT_MESSAGE) throw err;
    }
  }
  return null;
}

// Classifies an expression from one start instant:
//   { kind: 'reject', error }   parse fails, or next() throws something other
//                               than the loop limit (e.g. a bare L in day-of-week)
//   { kind: 'never' }           parses, but no instant in a 400-year cycle
//   { kind: 'ok', next, loopLimit }
function classify(expr, fromMs) {
  try {
    parse(expr, fromMs);
  } catch (err) {
    return { kind: 'reject', error: err.message, stage: 'parse' };
  }
  // An `L` without weekday in day-of-week ("L", "L5") fails lazily, on the
  // first day it checks that no plain weekday matches: probe a week of start
  // days so such an expression is a rejection whatever the case's own start
  // instant is.
  const dow = parse(expr, fromMs).fields.dayOfWeek;
  const lazy = dow.some((v) => typeof v === 'string' && !/^[0-9]/.test(v));
  for (let d = 0; lazy && d < 7; d++) {
    try {
      parse(expr, ms('2024-01-01T00:00:00Z') + d * DAY_MS).next();
    } catch (err) {
      if (err.message !== LOOP_LIMIT_MESSAGE) return { kind: 'reject', error: err.message, stage: 'next' };
    }
  }
  const next = [];
  let loopLimit = false;
  let t = fromMs;
  for (let i = 0; i < 5; i++) {
    let r;
    try {
      r = refNext(expr, t);
    } catch (err) {
      return { kind: 'reject', error: err.message, stage: 'next' };
    }
    if (r === null) {
      if (i === 0) return { kind: 'never' };
      throw new Error('expression stopped firing: ' + expr);
    }
    loopLimit = loopLimit || r.loopLimit;
    next.push(r.at);
    t = r.at;
  }
  return { kind: 'ok', next, loopLimit };
}

// ---------------------------------------------------------------- curated

// Start instants: year wraps, leap and non-leap Februaries (2000 and 2400
// leap, 2100 not), milliseconds, a Friday 17:00 exactly.
const CURATED_FROMS = [
  '2024-01-01T00:00:00Z',
  '2024-02-28T23:59:59.999Z',
  '2023-02-28T12:34:56.789Z',
  '2024-12-31T23:59:30Z',
  '2025-06-15T08:07:06.500Z',
  '2099-12-31T23:00:00Z',
  '2100-02-27T00:00:00Z',
  '1999-12-31T23:59:59Z',
  '2000-02-28T00:00:00.001Z',
  '2026-03-29T01:30:00Z',
  '2026-11-29T00:00:00Z',
  '2026-12-04T17:00:00Z',
  '2399-02-27T12:00:00Z',
  '1972-02-29T23:59:59.999Z',
  '2031-07-31T23:59:59Z',
];

const CURATED = {
  basic: [
    '* * * * *', '0 * * * *', '*/15 * * * *', '0 0 * * *', '30 4 * * *', '0 17 * * 5',
    '10 17 * * 1-5', '*/3 * * * *', '0 9 1 * *', '59 23 31 12 *', '0 12 * * 0', '0 12 * * 7',
    '0 22 * * 1-5', '23 0-20/2 * * *', '0 0,12 1 */2 *', '30 4 1,15 * 5', '0 0 1 1 *',
    '15 14 1 * *', '0 8-18 * * *', '0,30 * * * *', '45 23 * * 6', '00 00 01 01 *',
    '0 0 13 * 5', '5 0 * 8 *',
  ],
  six_fields: [
    '* * * * * *', '*/10 * * * * *', '0 0 17 * * 5', '30 15 10 * * *', '0 0 0 1 1 *',
    '15,45 */5 * * * *', '59 59 23 31 12 *', '0 */30 9-17 * * 1-5', '5-10 * * * * *',
    '0 0 12 ? * MON#1', '0 0 0 L * *', '30 * * * * *', '0 0 0 29 2 *', '*/7 */7 * * * *',
    '1-59/2 0 0 * * *', '0 0 0 * * 5L', '0 0 9 1 * *', '10 17 * * 1-5 *',
  ],
  steps: [
    '*/7 * * * *', '5/15 * * * *', '0 */5 * * *', '10-50/20 * * * *', '0 0 */10 * *',
    '0 0 5/10 * *', '0 0 1 */3 *', '0 0 * * */2', '0 0 * * 1-5/2', '0 0 * * 4-7/2',
    '0 0 * * 0-7/3', '0 0 * * 1/2', '*/1 * * * *', '0 0 */1 * 1', '0 0 1-31/1 * 1',
    '0-59/60 * * * *', '*/59 * * * *', '0 */23 * * *', '0 0 */31 * *', '0 0 2-30/7 * *',
    '0 0 1 2/5 *', '0 0 * * 3/1', '0 0 1 1-12/4 *', '7/0015 * * * *',
  ],
  day_rule: [
    '0 0 1-31 * 1', '0 0 * * 0-7', '0 0 1 * 0-7', '0 0 1 * 1-7', '0 0 1 * 0-6',
    '0 0 1 * sun-sat', '0 0 1-30 * 1', '0 0 1-29 * 1', '0 0 1-28 * 1', '0 0 1-15,16-31 * 1',
    '0 0 1-20,1-20 * 1', '0 0 1 * 1,1,1,1,1,1,1,1', '0 0 */2 * 1', '0 0 1 * 1-5',
    '*/5 * * * 5', '0 0 15 * 0', '0 0 ? * 1', '0 0 1 * ?', '0 0 1-31 2 1', '0 0 1-30 4 1',
    '0 0 1-31 4,6 1', '0 0 1,15 * 1-5', '0 0 L * 1', '0 0 1-30,L * 1', '0 0 1 * 0,1,2,3,4,5,6,7',
    '0 0 13 * 5#2', '0 0 1-7 * */7', '0 0 */2 * */7',
  ],
  names: [
    '0 0 1 jan *', '0 0 1 JAN-MAR *', '0 0 1 Jan,Jul *', '0 0 1 jan-mar,DEC *', '0 9 * * MON-FRI',
    '0 9 * * mon,wed,fri', '0 9 * * Sat,Sun', '0 0 * * SUN', '0 0 1 */12 *', '0 0 1 JANFEB *',
    '0 0 1 feb-dec/3 *', '0 0 * * tue-thu', '0 0 * * FRI-SAT', '0 0 1 DEC *', '0 0 * * mOn',
    '0 0 1 jun-AUG *', '0 0 * * sun-sun', '0 0 * * sat,sun',
  ],
  last_day: [
    '0 0 L * *', '0 0 L 2 *', '0 12 L * 5', '0 0 5L * *', '0 0 L/2 * *', '0 0 1,L * *',
    '0 0 15,L * *', '59 23 L * *', '0 0 L 2,4 *', '0 0 L * ?', '0 0 LL * *', '0 0 L,L * *',
    '0 0 L 12 *',
  ],
  last_weekday: [
    '0 0 * * 5L', '0 0 * * FRIL', '0 0 * * 0L', '0 0 * * 7L', '0 0 * * 1L,5L', '0 0 * * 9L',
    '0 0 * * 55L', '0 0 * * 1,5L', '0 0 L * 5L', '0 0 * * 0-6,L', '0 0 * 2 1L', '0 0 * * 5LL',
    '0 0 15 * 3L', '0 0 * * sun-sat,L', '0 0 5L,L 2 *', '0 0 LL 2 1',
    '0 0 L/2 2 *', '0 0 15,5L 3 *', '0 0 5L 3 1',
  ],
  nth_weekday: [
    '0 0 * * 1#1', '0 0 * * MON#2', '0 0 * * 5#3', '0 0 * * 0#4', '0 0 * * 6#5', '0 0 * * 7#1',
    '0 0 * * *#2', '0 0 * * ?#3', '0 0 10 * 5#2', '0 0 1 * 1#1', '0 0 * * 5#01', '0 0 * * 5#+2',
    '0 0 * * 5#0x2', '0 0 * * 5#1e0', '0 0 * * 5#2.0', '0 0 * 2 5#5', '0 0 * * fri#4',
    '0 0 L * 1#5', '0 0 * * 3#5',
  ],
  question_mark: ['0 0 ? * *', '0 0 * * ?', '0 0 ? * ?', '0 0 ?/2 * *', '0 0 ? * 5', '0 0 5 * ?'],
  leap_and_month_end: [
    '0 0 29 2 *', '0 0 29 2 1', '0 0 28-29 2 *', '0 0 31 * *', '0 0 30 * *',
    '0 0 31 1,3,5,7,8,10,12 *', '0 0 30,31 * *', '0 0 31 */2 *', '0 0 29 * *',
    '0 0 29,30 2 *', '0 0 1-31 2 *', '0 0 29 FEB *', '0 0 31 1-12/2 *',
  ],
  quirks: [
    '-0 * * * *', '1* * * * *', '0 2* * * *', '0 0 1-5-9 * *', '0--5 * * * *', '0 0 * * -0',
    '0-59/99999999999999999999999 * * * *', '0 0 3* * *', '0 0 1 1* *', '*,5 * * * *',
    '1,1,1 * * * *', '0 0 * * 1,1', '0 0 * * 7,0',
  ],
  whitespace: [
    '0\t0\n1 * *', '\u00a00 0 1 * *', '0 0 1 * *\u3000', '0\u20030 1 * *', '\ufeff0 0 1 * *',
    '  0   0  1 * *  ', '0 0 1 * *\r\n',
  ],
  corners: [
    '0 0 * * MON-FRI/2', '0 0 1 jan/3 *', '0 0 1 JAN-DEC/2 *', '0 0 * * SUN/2', '0 0 * * 7/1',
    '0 0 * * 7-7', '0 0 * * 0-0', '0 0 * * 5-5/9', '*/60 * * * *', '0 */24 * * *', '0 0 */32 * *',
    '0 0 1 */13 *', '0 0 * * */8', '0 0 * * */7', '0 0 * * 1-7/7', '0 0 * * ?/2', '0 0 L,1-30 * 1',
    '0 0 1-28,L 2 1', '0 0 1-29 2 1', '0 0 1-28 2 1', '0 0 2-31 2 1', '0 0 * * 1#5', '0 0 31 * 1#5',
    '0 0 * * 0L,6L', '0 0 * * 0,0,0,0,0,0,0,0', '0 0 * * L,0,1,2,3,4,5,6', '0 0 1 * 0-6,5L',
    '0 0 1 1 0-7,L', '0 0 0 1 1 0#1', '1-1 1-1 1-1 1-1 1-1', '5-05 * * * *', '0 0 1-5,3-7 * 1',
    '0 0 1-15,1-15 * 1', '0 0 1-15,1-14 * 1', '0 0 1-15,1-13,L * 1', '0 0 * * sun#5', '0 0 * * sunl',
    '0 0 * 1,1 *', '0 0 L 2-2 1', '0 0 5L 2-2 1', '0 0 15,5L 2 *', '0 0 0029 2 *',
  ],
  macros: ['@yearly', '@monthly', '@weekly', '@daily', '@hourly'],
  rare: ['0 0 * 2 1#5', '0 0 * 2 6#5', '0 0 0 * 2 0#5', '0 0 29 2 1#5', '0 0 * 2 *#5'],
};

const CURATED_REJECTS = [
  '* * * * * * *', '0 0 0 1 1 * 2024', '60 * * * *', '* 24 * * *', '* * 0 * *', '* * 32 * *',
  '* * * 0 *', '* * * 13 *', '* * * * 8', '5-1 * * * *', '*/0 * * * *', '1/0 * * * *',
  '* * * * MON-', '0 0 15W * *', '0 0 LW * *', 'H * * * *', '0 0 * * 5#6', '0 0 * * 5#0',
  '0 0 * * 5#', '0 0 * * #2', '0 0 * * 1#1,2', '0 0 * * 1-5#2', '0 0 * * */2#2', '* ? * * *',
  '? * * * *', '* * * ? *', 'L * * * *', '0 0 * L *', '0 0 1 JANUARY *', '0 0 * * MONDAY',
  '0 0 * * 1-5L', '0 0 L-5 * *', '1,,2 * * * *', ',1 * * * *', '1, * * * *', '1/2/3 * * * *',
  '@reboot', '@every 5m', '@YEARLY', ' @daily', '@daily ', '@Weekly', 'a b c d e',
  '0 0 31 4 *', '0 0 30,L 2 *', '0 0 30 2 1', '* * * * L', '* * * * L5', '* * * * 1-6,L',
  '0 0 * * MONTUE', '-5 * * * *', '- * * * *', '0 0 -0 * *', '* * * -0 *', '1-60 * * * *',
  '0 0 1-32 * *', '0 0 * * 5#-1', '0 0 * * 5#2#3', '0 0 * * 5#Infinity', '0 0 * * 5#abc',
  '0 0 * * 5/2#2', '0 0 * * MON#', '0 0 * * L#2', '5- * * * *', '0 0 * JAN-FOO *',
  '0 0 * * 1-5/0', '0 0 1 1-12/ *', '0 0 * * 1-5/x', 'x * * * *', '0 0 1 * 1 2024',
  '0 0 1 * *,', '0 0 1.5 * *', '0 0 * * 1.0', '0 0 1 2-1 *', '0 0 * * 6-1', '0 0 * * 8L#',
  '0 0 * * *L', '0 0 * * W', '0 0 L W *', '0 0 ? ? ?', '0 0 1 ? *', '0 0 */ * *',
  '0 0 1 * 0x1', '0 0 1e1 * *', '0 0 +1 * *', '0 0 1 * mon-', '0 0 1 * 1--', '* * * * * #',
];

// Never fire: cron-parser rejects them at parse time or gives up at its loop
// limit; the core must say never_fires.
const CURATED_NEVER = [
  '0 0 30 2 *', '0 0 31 4,6 *', '0 0 31 2,4,6,9,11 *', '0 0 30 FEB *', '0 0 31 2-4/2 *',
  '0 0 * * 5#1.5', '0 0 * * 5L#2', '0 0 * * 1L#1', '0-59/' + '9'.repeat(400) + ' * * * *',
  '0 0 0 30 2 *', '0 0 31 4-6/2 *', '0 0 30,31 2 *', '0 0 L * 1L#1', '0 0 31 apr,jun,sep,nov *',
  '0 0 5L 2 *', '0 0 LL 4 *', '0 0 31 2,2 *', '0 0 30 2-2 *',
];

// Accepted by cron-parser, refused by the core on purpose (docs/semantics.md §3).
const CURATED_STRICT = [
  ['', 'empty expression (cron-parser: every minute)'],
  ['   ', 'whitespace-only expression (cron-parser: every minute)'],
  ['\t\n', 'whitespace-only expression (cron-parser: every minute)'],
  ['* * * *', 'four fields (cron-parser pads with *)'],
  ['0 12 * *', 'four fields (cron-parser pads with *)'],
  ['5', 'one field (cron-parser reads it as day-of-week)'],
  ['* *', 'two fields'],
  ['0 9 1 *', 'four fields'],
  ['MON', 'one field (cron-parser reads it as day-of-week)'],
];

// Accepted by the core, rejected by cron-parser 4.9.0 (docs/semantics.md §3
// accepts them): vectors taken from the equivalent macro.
const EXTENSIONS = [
  ['@annually', '@yearly'],
  ['@midnight', '@daily'],
];

// ---------------------------------------------------------------- random grammar

function randomGrammar(rng) {
  const names = {
    month: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'],
    dow: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'],
  };
  const spec = {
    second: [0, 59], minute: [0, 59], hour: [0, 23], dom: [1, 31], month: [1, 12], dow: [0, 7],
  };
  const cased = (s) => {
    const r = rng.int(0, 2);
    return r === 0 ? s : r === 1 ? s.toUpperCase() : s[0].toUpperCase() + s.slice(1);
  };
  const slack = () => rng.chance(0.03);
  const number = (kind, withSlack) => {
    const [lo, hi] = spec[kind];
    let v = rng.int(lo - (withSlack ? 1 : 0), hi + (withSlack ? 1 : 0));
    if (v < 0) v = 0;
    if ((kind === 'month' || kind === 'dow') && rng.chance(0.25)) {
      const list = names[kind];
      const idx = kind === 'month' ? v - 1 : v % 7;
      if (idx >= 0 && idx < list.length) return cased(list[idx]);
    }
    const text = String(v);
    return rng.chance(0.05) ? '0' + text : text;
  };
  // cron-parser's odd corners, each of which the core must reproduce.
  const quirk = (kind) => {
    const [lo, hi] = spec[kind];
    const options = [
      () => String(rng.int(lo, hi)) + ',' + String(rng.int(lo, hi)),               // duplicates
      () => rng.int(lo, hi) + '-' + rng.int(lo, hi) + '-' + rng.int(lo, hi),      // a-b-c
      () => '000' + rng.int(lo, hi),                                               // zeros
      () => String(rng.int(0, 5)) + '*',                                           // "1*"
      () => rng.int(lo, hi) + '--' + rng.int(lo, hi),                              // a--b
      () => '-0',
    ];
    if (kind === 'dom') options.push(() => rng.pick(['5L', 'LL', 'L/2', 'L', '31L', 'L,L']));
    if (kind === 'dow') options.push(() => rng.pick(['9L', '55L', '7L', 'FRIL', 'sunL', '0L,6L']));
    if (kind === 'dow') options.push(() => rng.int(0, 7) + '-7/' + rng.int(1, 4));
    return rng.pick(options)();
  };
  const element = (kind) => {
    const [lo, hi] = spec[kind];
    const r = rng.next();
    if (r < 0.28) return number(kind, slack());
    if (r < 0.46) {
      let a = rng.int(lo, hi);
      let b = rng.int(lo, hi);
      if (a > b && !rng.chance(0.05)) [a, b] = [b, a];
      const nameA = (kind === 'month' || kind === 'dow') && rng.chance(0.2);
      if (nameA) {
        const list = names[kind];
        const ia = kind === 'month' ? a - 1 : a % 7;
        const ib = kind === 'month' ? b - 1 : b % 7;
        if (ia <= ib) return cased(list[ia]) + '-' + cased(list[ib]);
      }
      return a + '-' + b;
    }
    if (r < 0.58) return '*/' + rng.int(1, Math.max(2, hi - lo + (slack() ? 2 : 0)));
    if (r < 0.68) {
      const a = rng.int(lo, hi);
      const b = rng.int(a, hi);
      return a + '-' + b + '/' + rng.int(slack() ? 0 : 1, hi - lo + 1);
    }
    if (r < 0.76) return rng.int(lo, hi) + '/' + rng.int(1, hi - lo + 1);
    if (r < 0.84) return quirk(kind);
    if (kind === 'dom' && r < 0.90) return rng.pick(['L', 'L', '5L', 'L/3']);
    if (kind === 'dow' && r < 0.92) return number('dow', false) + 'L';
    return '*';
  };
  const field = (kind) => {
    const r = rng.next();
    if (r < 0.33) return '*';
    if ((kind === 'dom' || kind === 'dow') && r < 0.40) return '?';
    if (kind === 'dow' && r < 0.47) {
      const base = rng.chance(0.8) ? number('dow', false) : rng.pick(['*', '?', '5L', 'fri', 'L']);
      const nth = rng.chance(0.9) ? String(rng.int(slack() ? 0 : 1, slack() ? 6 : 5))
                                  : rng.pick(['0x2', '2.0', '1e0', '+3', '01', '1.5']);
      return base + '#' + nth;
    }
    const n = rng.chance(0.7) ? 1 : rng.int(2, 4);
    const parts = [];
    for (let i = 0; i < n; i++) parts.push(element(kind));
    return parts.join(',');
  };
  const month = () => {
    const r = rng.next();
    if (r < 0.45) return '*';
    if (r < 0.70) return number('month', false);   // a single month: cron-parser's day filter
    return field('month');
  };
  // Mostly dense (cron-parser and a brute force rarely run long); seconds are
  // restricted only in six-field form.
  const six = rng.chance(0.35);
  const fields = [];
  if (six) fields.push(rng.chance(0.5) ? field('second') : rng.pick(['0', '*/15', '30']));
  fields.push(field('minute'));
  fields.push(field('hour'));
  fields.push(field('dom'));
  fields.push(month());
  fields.push(field('dow'));
  return fields.join(' ');
}

// Near-valid strings: a grammar expression with one to three random edits
// (insert, delete, replace) from a cron-flavoured alphabet, or raw noise.
function randomJunk(rng) {
  const alphabet = '0123456789*,/-?L#W H@xJFMSn\t';
  if (rng.chance(0.15)) {
    let s = '';
    const n = rng.int(1, 16);
    for (let i = 0; i < n; i++) s += alphabet[rng.int(0, alphabet.length - 1)];
    return s;
  }
  let s = randomGrammar(rng);
  const edits = rng.int(1, 3);
  for (let e = 0; e < edits; e++) {
    const at = rng.int(0, s.length);
    const c = alphabet[rng.int(0, alphabet.length - 1)];
    const r = rng.next();
    if (r < 0.4) s = s.slice(0, at) + c + s.slice(at);
    else if (r < 0.7) s = s.slice(0, at) + s.slice(at + 1);
    else s = s.slice(0, at) + c + s.slice(at + 1);
  }
  return s;
}

function randomFrom(rng) {
  const lo = ms('1975-01-01T00:00:00Z');
  const hi = ms('2150-01-01T00:00:00Z');
  let t = lo + Math.floor(rng.next() * (hi - lo));
  const r = rng.next();
  if (r < 0.3) t -= t % 60000;          // whole minute
  else if (r < 0.6) t -= t % 1000;      // whole second
  return t;
}

// ---------------------------------------------------------------- assemble

function main() {
  const out = process.argv[2] || path.join(__dirname, '..', 'cron_vectors.json');
  const rng = makeRng(SEED);
  const cases = [];
  const rejects = [];
  const never = [];
  const strict = [];
  const extensions = [];
  const surprises = [];

  const addRejectOrNever = (expr, c, tag) => {
    if (c.kind === 'reject') rejects.push({ expr, error: c.error, stage: c.stage, tag });
    else if (c.kind === 'never') never.push({ expr, tag });
  };

  // Curated: four start instants each (rotating through CURATED_FROMS), plus
  // a start exactly on the first match and one a millisecond before it.
  let rotation = 0;
  for (const [group, exprs] of Object.entries(CURATED)) {
    for (const expr of exprs) {
      const froms = [];
      for (let k = 0; k < 4; k++) froms.push(ms(CURATED_FROMS[(rotation + k) % CURATED_FROMS.length]));
      rotation += 3;
      let first = null;
      for (const from of froms) {
        const c = classify(expr, from);
        if (c.kind !== 'ok') {
          surprises.push(group + ': ' + JSON.stringify(expr) + ' is ' + c.kind + ' ' + (c.error || ''));
          addRejectOrNever(expr, c, 'curated:' + group);
          break;
        }
        if (first === null) first = c.next[0];
        cases.push({ expr, from, next: c.next, loopLimit: c.loopLimit, tag: 'curated:' + group });
      }
      if (first !== null) {
        for (const from of [first, first - 1, first + 499]) {
          const c = classify(expr, from);
          cases.push({ expr, from, next: c.next, loopLimit: c.loopLimit, tag: 'curated:' + group + ':on_match' });
        }
      }
    }
  }
  for (const expr of CURATED_REJECTS) {
    const c = classify(expr, ms('2024-01-01T00:00:00Z'));
    if (c.kind === 'ok') surprises.push('reject list: ' + JSON.stringify(expr) + ' is accepted');
    else addRejectOrNever(expr, c, 'curated:reject');
  }
  for (const expr of CURATED_NEVER) {
    const c = classify(expr, ms('2024-01-01T00:00:00Z'));
    if (c.kind === 'ok') surprises.push('never list: ' + JSON.stringify(expr) + ' fires');
    else never.push({ expr, tag: 'curated:never', reference: c.kind === 'reject' ? c.error : LOOP_LIMIT_MESSAGE });
  }
  for (const [expr, reason] of CURATED_STRICT) {
    const c = classify(expr, ms('2024-01-01T00:00:00Z'));
    if (c.kind !== 'ok') surprises.push('strict list: ' + JSON.stringify(expr) + ' is ' + c.kind);
    else strict.push({ expr, reason, reference_next: c.next.map(iso) });
  }
  for (const [expr, equivalent] of EXTENSIONS) {
    const mine = classify(expr, ms('2024-01-01T00:00:00Z'));
    if (mine.kind === 'ok') surprises.push('extension: ' + expr + ' is accepted by cron-parser');
    for (const from of CURATED_FROMS.slice(0, 4).map(ms)) {
      const c = classify(equivalent, from);
      extensions.push({ expr, equivalent, from, next: c.next, reference_error: mine.error });
    }
  }

  // Random expressions from the grammar, one start instant each.
  const seen = new Set();
  let produced = 0;
  while (produced < RANDOM_EXPRESSIONS) {
    const expr = randomGrammar(rng);
    const from = randomFrom(rng);
    if (seen.has(expr)) continue;
    seen.add(expr);
    produced++;
    const c = classify(expr, from);
    if (c.kind === 'ok') cases.push({ expr, from, next: c.next, loopLimit: c.loopLimit, tag: 'random' });
    else addRejectOrNever(expr, c, 'random');
  }
  // Random junk strings: agreement on acceptance.
  produced = 0;
  while (produced < RANDOM_JUNK) {
    const expr = randomJunk(rng);
    if (seen.has(expr)) continue;
    seen.add(expr);
    produced++;
    const from = randomFrom(rng);
    const c = classify(expr, from);
    const fields = expr.trim().split(/\s+/).filter((x) => x.length > 0).length;
    if (c.kind === 'ok' && fields < 5) strict.push({ expr, reason: 'fewer than 5 fields', reference_next: c.next.map(iso) });
    else if (c.kind === 'ok') cases.push({ expr, from, next: c.next, loopLimit: c.loopLimit, tag: 'junk' });
    else if (c.kind === 'never' && fields < 5) rejects.push({ expr, error: 'never fires (and fewer than 5 fields)', stage: 'next', tag: 'junk' });
    else addRejectOrNever(expr, c, 'junk');
  }

  const lines = [];
  lines.push('{');
  lines.push('  "about": ' + JSON.stringify(
    'Reference vectors from cron-parser ' + parserVersion + ' (parseExpression(expr, {currentDate, tz: "UTC"}), next() x5). ' +
    'Generated by tests/data/cron-parser/generate.js; do not edit by hand. ' +
    'cases: must parse and fire exactly at next[] (loop_limit: cron-parser hit its 10000-step limit and was restarted further on). ' +
    'rejects: cron-parser rejects (at parse, or at the first next()); the core must too. ' +
    'never_fires: the core must say never_fires. strict: cron-parser accepts, the core refuses on purpose. ' +
    'extensions: the core accepts, cron-parser 4.9.0 does not; expected instants from the equivalent macro.') + ',');
  lines.push('  "cron_parser": ' + JSON.stringify(parserVersion) + ',');
  lines.push('  "seed": ' + SEED + ',');
  const block = (name, items, render, last) => {
    lines.push('  "' + name + '": [');
    items.forEach((item, i) => lines.push('    ' + JSON.stringify(render(item)) + (i + 1 < items.length ? ',' : '')));
    lines.push('  ]' + (last ? '' : ','));
  };
  block('cases', cases, (c) => {
    const o = { expr: c.expr, from: iso(c.from), next: c.next.map(iso), tag: c.tag };
    if (c.loopLimit) o.loop_limit = true;
    return o;
  });
  block('rejects', rejects, (r) => ({ expr: r.expr, reference_error: r.error, stage: r.stage, tag: r.tag }));
  block('never_fires', never, (n) => {
    const o = { expr: n.expr, tag: n.tag };
    if (n.reference) o.reference_error = n.reference;
    return o;
  });
  block('strict', strict, (s) => s);
  block('extensions', extensions, (e) => ({ expr: e.expr, equivalent: e.equivalent, from: iso(e.from), next: e.next.map(iso), reference_error: e.reference_error }), true);
  lines.push('}');
  fs.writeFileSync(out, lines.join('\n') + '\n');

  const curated = cases.filter((c) => c.tag.startsWith('curated')).length;
  const loopLimited = cases.filter((c) => c.loopLimit).length;
  console.log('cases %d (curated %d, random %d, junk %d, loop_limit %d), rejects %d, never_fires %d, strict %d, extensions %d',
    cases.length, curated, cases.filter((c) => c.tag === 'random').length, cases.filter((c) => c.tag === 'junk').length,
    loopLimited, rejects.length, never.length, strict.length, extensions.length);
  for (const s of surprises) console.log('note: ' + s);
  console.log('wrote ' + out + ' (' + fs.statSync(out).size + ' bytes)');
}

if (require.main === module) {
  main();
} else {
  module.exports = { makeRng, randomGrammar, randomJunk, randomFrom };
}
