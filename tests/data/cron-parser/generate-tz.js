'use strict';
// Generates tests/data/cron_tz_vectors.json: what cron-parser 4.9.0 (the
// version BullMQ 5.81 pins) answers with its `tz` option, concentrated around
// daylight-saving transitions (gaps, folds, rule changes, the day Samoa
// skipped). The UTC-only vectors come from generate.js; see README.md here,
// "Zoned vectors".
//
// Usage: npm ci && node generate-tz.js ../cron_tz_vectors.json
//
// Reference calls: parseExpression(expr, { currentDate: new Date(from), tz }),
// a fresh options object each time, then next() up to five times on that one
// iterator; a thrown error is recorded with the instants obtained before it.
// Where a fresh parseExpression from each previous instant (what BullMQ does
// for every repeat) gives a different sequence, that one is kept too, as
// next_fresh: cron-parser carries DST state from one next() to the next.
//
// Deterministic: a fixed seed for mulberry32, fixed scan window, no clock in
// the output. The zone transitions come from the ICU time-zone data of the
// node that runs this script (recorded as tz_version): a different node may
// know different rules, and then the file changes.

const fs = require('fs');
const path = require('path');
const parser = require('cron-parser');
const { DateTime } = require('luxon');
const parserVersion = require('cron-parser/package.json').version;
const luxonVersion = require('luxon/package.json').version;

if (parserVersion !== '4.9.0') {
  throw new Error('expected cron-parser 4.9.0, found ' + parserVersion + ' (run npm ci)');
}

const SEED = 20251206;
const MINUTE = 60000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const SCAN_FROM = Date.UTC(2010, 0, 1);   // transitions in 2010..2026 (UTC years)
const SCAN_TO = Date.UTC(2027, 0, 1);
const SAMPLES_PER_TRANSITION = 8;         // (expression, start) pairs for a non-focus transition
const RANDOM_CASES = 3000;                // random grammar, around random transitions
const NO_DST_CURATED = 300;
const NO_DST_RANDOM = 120;
const LOOP_LIMIT_MESSAGE = 'Invalid expression, loop limit exceeded';

// Zones, each with the reason it is here (also in README.md).
const ZONES = [
  ['Europe/Berlin', 'EU rule, northern: 02:00->03:00 gap in March, 03:00->02:00 fold in October'],
  ['Europe/London', 'EU rule at 01:00 local (offset 0 in winter): gap and fold in the 01:00 hour'],
  ['America/New_York', 'US rule, negative offsets: 02:00->03:00 gap (March), 02:00->01:00 fold (November)'],
  ['America/Santiago', 'southern, transitions at local midnight (gap 00:00->01:00 in September, fold 24:00->23:00 in April); irregular years'],
  ['America/Havana', 'northern, transitions at local midnight (gap 00:00->01:00, fold 01:00->00:00)'],
  ['Australia/Sydney', 'southern: 02:00->03:00 gap in October, 03:00->02:00 fold in April'],
  ['Australia/Lord_Howe', '30-minute DST shift: 02:00->02:30 gap, 02:00->01:30 fold'],
  ['Pacific/Auckland', 'southern, +12/+13 (UTC date differs from local date): 02:00->03:00 gap, 03:00->02:00 fold'],
  ['Asia/Kolkata', 'no DST, +05:30: the control zone'],
  ['America/Sao_Paulo', 'midnight transitions, DST abolished in 2019 (rule change: the last fold is February 2019)'],
  ['Europe/Moscow', 'rule changes: permanent +04 from March 2011 (a gap, no fold after it), back to +03 in October 2014 (a fold)'],
  ['Asia/Tehran', '+03:30/+04:30, midnight transitions, DST abolished in 2022'],
  ['Pacific/Apia', 'crossed the date line: 2011-12-30 never happened (a 24-hour gap); DST until 2021'],
  ['America/St_Johns', '-03:30/-02:30; until 2011 transitions at 00:01 local (not on an hour), since then at 02:00'],
  ['Pacific/Chatham', '+12:45/+13:45: gap 02:45->03:45 and fold 03:45->02:45 (neither on an hour boundary)'],
  ['Africa/Casablanca', 'several transitions a year (DST suspended for Ramadan; since 2018 +01 with -1 h during Ramadan)'],
];

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

function offsetMinutes(zone, t) {
  return DateTime.fromMillis(t, { zone }).offset;
}

// Wall clock of a "wall ms" (local fields stored as if UTC).
function wallFields(w) {
  const d = new Date(w);
  return {
    year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate(),
    hour: d.getUTCHours(), minute: d.getUTCMinutes(), weekday: d.getUTCDay(),
  };
}

function wallText(w) {
  return new Date(w).toISOString().slice(0, 16);
}

// ---------------------------------------------------------------- transitions

// Offsets sampled every hour over the scan window; where two samples differ,
// bisect to the first minute with the new offset. (A change and its reversal
// within one hour would be missed; tzdata has none in these zones.)
function findTransitions(zone) {
  const out = [];
  let t = SCAN_FROM;
  let off = offsetMinutes(zone, t);
  while (t < SCAN_TO) {
    const u = t + HOUR;
    const offU = offsetMinutes(zone, u);
    if (offU !== off) {
      let lo = t;   // old offset
      let hi = u;   // new offset
      while (hi - lo > MINUTE) {
        const mid = lo + Math.floor((hi - lo) / 2 / MINUTE) * MINUTE;
        if (offsetMinutes(zone, mid) === off) lo = mid; else hi = mid;
      }
      if (offsetMinutes(zone, hi - 1) !== off || offsetMinutes(zone, hi) !== offU) {
        throw new Error(zone + ': transition at ' + hi + ' is not on a minute');
      }
      out.push({ at: hi, before: off, after: offU });
    }
    t = u;
    off = offU;
  }
  return out;
}

// The wall-clock interval a transition affects: for a gap (offset grows) the
// local times that never happen, for a fold (offset shrinks) those that
// happen twice (first pass [at-d, at), second pass [at, at+d)).
function describe(tr) {
  const d = Math.abs(tr.after - tr.before) * MINUTE;
  const kind = tr.after > tr.before ? 'gap' : 'fold';
  const wallAt = tr.at + tr.before * MINUTE;   // the wall clock when it changes, old offset
  const a = kind === 'gap' ? wallAt : wallAt - d;
  return { kind, d, a, b: a + d, wallAt };
}

// ---------------------------------------------------------------- expressions

// Hours and minutes that matter at one transition, from the affected wall
// interval [a, b): its first, middle and last minute, the minute before it,
// the hours around it, its weekday and day of month.
function context(tr) {
  const info = describe(tr);
  const first = wallFields(info.a);
  const mid = wallFields(info.a + Math.floor(Math.min(info.d, DAY) / 2 / MINUTE) * MINUTE);
  const last = wallFields(info.b - MINUTE);
  const before = wallFields(info.a - MINUTE);
  return {
    kind: info.kind, d: info.d,
    H: first.hour, M: first.minute,
    Hm: mid.hour, Mm: mid.minute,
    Hl: last.hour, Ml: last.minute,
    Hb: before.hour, Mb: before.minute,
    Hp: (first.hour + 23) % 24, Hn: (last.hour + 1) % 24,
    D: first.weekday, DOM: first.day, MON: first.month,
  };
}

// The curated DST-relevant list, its hours chosen for this transition (for a
// 02:00 gap or fold of an hour these are exactly `30 2 * * *`, `0 2 * * *`,
// `59 1 * * *`, `0 3 * * *`, `0 1-3 * * *`, ...).
function curatedExpressions(c) {
  const list = [
    `${c.Mm} ${c.Hm} * * *`,            // inside the gap/fold (30 2)
    `0 ${c.H} * * *`,                   // 0 2
    `${c.M} ${c.H} * * *`,              // first minute of the interval (02:00, or 02:45 at Chatham)
    `${c.Ml} ${c.Hl} * * *`,            // last minute of the interval
    `${c.Mb} ${c.Hb} * * *`,            // the minute before it (59 1)
    `0 ${c.Hp} * * *`,                  // 0 1
    `0 ${c.Hn} * * *`,                  // 0 3
    `0 ${c.Hl} * * *`,
    '0 0 * * *', '30 0 * * *',
    '30 * * * *', '0 * * * *', '0 */2 * * *', '0 1/2 * * *', '*/15 * * * *',
  ];
  const hours = [c.Hp, c.H, c.Hl, c.Hn].filter((h, i, xs) => xs.indexOf(h) === i);
  const lo = Math.min(...hours);
  const hi = Math.max(...hours);
  if (hi - lo <= 4) list.push(`0 ${lo}-${hi} * * *`);                  // 0 1-3
  else list.push(`0 ${Math.min(...hours.filter((h) => h > 12))}-23 * * *`, `0 0-${Math.max(...hours.filter((h) => h <= 12))} * * *`);
  list.push(`0 ${hours.join(',')} * * *`);                              // 0 1,2,3
  list.push(`*/20 ${c.H} * * *`, `* ${c.H} * * *`, `* ${c.Hl} * * *`);  // */20 2, * 2
  list.push(`0 ${c.Mm} ${c.Hm} * * *`, '30 * * * * *', `*/15 ${c.Mm} ${c.Hm} * * *`);
  list.push(`${c.Mm} ${c.Hm} * * ${c.D}`, `${c.Mm} ${c.Hm} * * ${c.D},${(c.D + 6) % 7}`); // 30 2 * * 0 / 0,6
  list.push(`${c.Mm} ${c.Hm} ${c.DOM} * *`);                             // monthly, on the transition's day
  list.push('@daily', '@hourly', '@weekly');
  return list.filter((e, i, xs) => xs.indexOf(e) === i);
}

// Start instants: the day before, shortly before, both passes of a fold (for
// a gap: the interval before it and after it), a millisecond before, exactly
// on, and two hours after the transition. d is capped at two hours so the
// starts stay near the transition (Apia's 24-hour gap).
function startInstants(tr) {
  const d = Math.min(Math.abs(tr.after - tr.before) * MINUTE, 2 * HOUR);
  const T = tr.at;
  return [
    T - 26 * HOUR,
    T - 3 * HOUR,
    T - d,                                             // start of the first pass
    T - Math.floor(d / 2 / MINUTE) * MINUTE - 17000,   // inside the first pass
    T - 1,
    T,                                                 // exactly on the transition
    T + Math.floor(d / 2 / MINUTE) * MINUTE + 17123,   // inside the second pass
    T + d,                                             // end of the second pass
    T + 2 * HOUR,
  ];
}

// ---------------------------------------------------------------- random grammar

function randomExpression(rng, c) {
  const uniq = (xs) => xs.filter((x, i) => xs.indexOf(x) === i);
  const hourAtom = () => rng.pick([c.H, c.H, c.Hm, c.Hl, c.Hp, c.Hn, c.Hb, rng.int(0, 23)]);
  const minuteAtom = () => rng.pick([c.M, c.Mm, c.Ml, c.Mb, 0, 0, 30, 59, 15, 45, rng.int(0, 59)]);
  const hour = () => {
    const r = rng.next();
    if (r < 0.42) return String(hourAtom());
    if (r < 0.54) return '*';
    if (r < 0.64) return '*/' + rng.pick([2, 3, 4, 6, 12]);
    if (r < 0.76) {
      let lo = Math.max(0, c.H - rng.int(0, 2));
      let hi = Math.min(23, c.Hl + rng.int(0, 2));
      if (lo > hi) [lo, hi] = [hi, lo];
      return lo + '-' + hi + (rng.chance(0.25) ? '/' + rng.int(1, 2) : '');
    }
    if (r < 0.9) return uniq([hourAtom(), hourAtom(), hourAtom()].slice(0, rng.int(2, 3))).join(',');
    return rng.int(0, Math.max(0, c.H)) + '/' + rng.int(1, 4);
  };
  const minute = (hourField) => {
    const r = rng.next();
    if (r < 0.4) return String(minuteAtom());
    if (r < 0.5 && hourField !== '*') return '*';
    if (r < 0.66) return '*/' + rng.pick([5, 7, 10, 15, 20, 30, 45]);
    if (r < 0.76) {
      const a = rng.int(0, 50);
      return a + '-' + rng.int(a, 59) + (rng.chance(0.3) ? '/' + rng.int(2, 15) : '');
    }
    if (r < 0.9) return uniq([minuteAtom(), minuteAtom(), minuteAtom()].slice(0, rng.int(2, 3))).join(',');
    return rng.int(0, 29) + '/' + rng.pick([10, 15, 20, 30]);
  };
  const second = () => rng.pick(['0', '30', '*/20', '*/30', '0,30', String(rng.int(0, 59)), '*', '15-17']);
  const dom = () => {
    if (rng.chance(0.8)) return '*';
    return rng.pick([String(c.DOM), c.DOM + ',' + (c.DOM % 28 + 1), '*/2', '1-15', c.DOM + '-' + Math.min(31, c.DOM + 3), '?']);
  };
  const month = () => {
    if (rng.chance(0.85)) return '*';
    return rng.pick([String(c.MON), c.MON + ',' + (c.MON % 12 + 1), c.MON < 12 ? c.MON + '-12' : '1-12']);
  };
  const dow = () => {
    if (rng.chance(0.7)) return '*';
    const nth = Math.floor((c.DOM - 1) / 7) + 1;
    return rng.pick([String(c.D), c.D + ',' + (c.D + 6) % 7, '1-5', '0,6', c.D + 'L', c.D + '#' + nth, '*/2']);
  };
  const h = hour();
  const fields = [minute(h), h, dom(), month(), dow()];
  if (rng.chance(0.15)) fields.unshift(second());
  return fields.join(' ');
}

function randomStart(rng, tr) {
  if (rng.chance(0.15)) return rng.pick(startInstants(tr));
  let t = tr.at - 26 * HOUR + Math.floor(rng.next() * 28 * HOUR);
  const r = rng.next();
  if (r < 0.4) t -= ((t % MINUTE) + MINUTE) % MINUTE;
  else if (r < 0.7) t -= ((t % 1000) + 1000) % 1000;
  return t;
}

// ---------------------------------------------------------------- reference

function reference(expr, tz, from) {
  const out = { next: [] };
  let it;
  try {
    // A fresh options object each time: cron-parser stores `#n` in it.
    it = parser.parseExpression(expr, { currentDate: new Date(from), tz });
  } catch (err) {
    out.error = err.message;
    return out;
  }
  for (let i = 0; i < 5; i++) {
    try {
      out.next.push(it.next().getTime());
    } catch (err) {
      out.error = err.message;
      break;
    }
  }
  return out;
}

// What BullMQ sees: it calls parseExpression afresh for every repeat, from
// the previous instant, and next() once. cron-parser keeps DST state
// (_dstStart/_dstEnd) in the iterator, so this can differ from the chain.
function freshChain(expr, tz, from, count) {
  const out = [];
  let t = from;
  for (let i = 0; i < count; i++) {
    try {
      t = parser.parseExpression(expr, { currentDate: new Date(t), tz }).next().getTime();
    } catch (err) {
      break;
    }
    out.push(t);
  }
  return out;
}

// True when the expression makes cron-parser hit its loop limit in UTC from
// this start: such rare expressions need the restarts of generate.js and are
// covered by the UTC vectors, so the zoned generator skips them.
function needsRestarts(expr, from) {
  try {
    const it = parser.parseExpression(expr, { currentDate: new Date(from), tz: 'UTC' });
    for (let i = 0; i < 5; i++) it.next();
  } catch (err) {
    return err.message === LOOP_LIMIT_MESSAGE;
  }
  return false;
}

// ---------------------------------------------------------------- assemble

function main() {
  const out = process.argv[2] || path.join(__dirname, '..', 'cron_tz_vectors.json');
  const started = process.hrtime.bigint();
  const rng = makeRng(SEED);
  const zones = {};
  const cases = [];
  const slow = [];
  let skipped = 0;

  const add = (expr, tz, from, tag) => {
    const t0 = process.hrtime.bigint();
    const r = reference(expr, tz, from);
    const msSpent = Number(process.hrtime.bigint() - t0) / 1e6;
    if (msSpent > 200) slow.push(msSpent.toFixed(0) + ' ms: ' + JSON.stringify(expr) + ' ' + tz + ' ' + from);
    const c = { expr, tz, from, next: r.next };
    if (r.error !== undefined) c.error = r.error;
    const fresh = freshChain(expr, tz, from, r.next.length);
    if (fresh.join() !== r.next.join()) c.next_fresh = fresh;
    c.tag = tag;
    cases.push(c);
  };

  for (const [zone, why] of ZONES) {
    const transitions = findTransitions(zone);
    zones[zone] = { why, offset_2010: offsetMinutes(zone, SCAN_FROM), transitions };
  }

  // Focus transitions: per zone the last gap and the last fold of the window
  // (for zones that abolished DST: their last transitions) and every shift
  // of more than two hours (Apia's date line); for them the full cross
  // product of curated expressions and start instants.
  for (const [zone] of ZONES) {
    const trs = zones[zone].transitions;
    if (trs.length === 0) continue;
    const focus = new Set();
    for (const kind of ['gap', 'fold']) {
      for (let i = trs.length - 1; i >= 0; i--) {
        if (describe(trs[i]).kind === kind) { focus.add(i); break; }
      }
    }
    trs.forEach((tr, i) => { if (Math.abs(tr.after - tr.before) > 120) focus.add(i); });
    trs.forEach((tr, i) => {
      const c = context(tr);
      const exprs = curatedExpressions(c);
      const starts = startInstants(tr);
      if (focus.has(i)) {
        for (const expr of exprs) for (const from of starts) add(expr, zone, from, 'curated:' + c.kind);
      } else {
        const pairs = [];
        for (const expr of exprs) for (const from of starts) pairs.push([expr, from]);
        for (let k = 0; k < SAMPLES_PER_TRANSITION && pairs.length > 0; k++) {
          const [expr, from] = pairs.splice(rng.int(0, pairs.length - 1), 1)[0];
          add(expr, zone, from, 'sample:' + c.kind);
        }
      }
    });
  }

  // Random grammar around random transitions, zones taken in turn.
  const withDst = ZONES.map(([z]) => z).filter((z) => zones[z].transitions.length > 0);
  for (let n = 0; n < RANDOM_CASES; n++) {
    const zone = withDst[n % withDst.length];
    const trs = zones[zone].transitions;
    const tr = trs[rng.int(0, trs.length - 1)];
    const c = context(tr);
    const expr = randomExpression(rng, c);
    const from = randomStart(rng, tr);
    if (needsRestarts(expr, from)) { skipped++; continue; }
    add(expr, zone, from, 'random:' + c.kind);
  }

  // Zones without DST (Asia/Kolkata): the curated list and the grammar for a
  // pretend 02:00-03:00 interval, starts around it on a few dates.
  for (const [zone] of ZONES) {
    if (zones[zone].transitions.length > 0) continue;
    const off = zones[zone].offset_2010;
    const pretend = ['2011-12-30', '2014-10-26', '2024-02-29', '2026-03-29', '2026-09-06', '2026-11-01']
      .map((day) => ({ at: Date.parse(day + 'T02:00:00Z') - off * MINUTE, before: off, after: off + 60 }));
    const pairs = [];
    for (const tr of pretend) {
      const c = context(tr);
      for (const expr of curatedExpressions(c)) for (const from of startInstants(tr)) pairs.push([expr, from]);
    }
    for (let k = 0; k < NO_DST_CURATED; k++) {
      const [expr, from] = pairs.splice(rng.int(0, pairs.length - 1), 1)[0];
      add(expr, zone, from, 'no-dst:curated');
    }
    for (let k = 0; k < NO_DST_RANDOM; k++) {
      const tr = rng.pick(pretend);
      const expr = randomExpression(rng, context(tr));
      const from = randomStart(rng, tr);
      if (needsRestarts(expr, from)) { skipped++; continue; }
      add(expr, zone, from, 'no-dst:random');
    }
  }

  // ---- write: one transition and one case a line.
  const lines = [];
  lines.push('{');
  lines.push('  "about": ' + JSON.stringify(
    'What cron-parser ' + parserVersion + ' (luxon ' + luxonVersion + ') answers with a time zone, generated by ' +
    'tests/data/cron-parser/generate-tz.js (do not edit by hand): parseExpression(expr, {currentDate: new Date(from), tz}) ' +
    'with a fresh options object, then next() up to 5 times on that iterator; instants are Unix milliseconds, ' +
    'an error is recorded with the instants obtained before it; next_fresh (only where it differs) is the sequence ' +
    'from a fresh parseExpression at each previous instant, as BullMQ computes repeats.') + ',');
  lines.push('  "cron_parser": ' + JSON.stringify(parserVersion) + ',');
  lines.push('  "luxon": ' + JSON.stringify(luxonVersion) + ',');
  lines.push('  "tz_version": ' + JSON.stringify(process.versions.tz || 'unknown') + ',');
  lines.push('  "seed": ' + SEED + ',');
  lines.push('  "transition_window": ' + JSON.stringify({ from: SCAN_FROM, to: SCAN_TO }) + ',');
  lines.push('  "zones": {');
  ZONES.forEach(([zone], zi) => {
    const z = zones[zone];
    lines.push('    ' + JSON.stringify(zone) + ': {');
    lines.push('      "why": ' + JSON.stringify(z.why) + ',');
    lines.push('      "offset_2010": ' + z.offset_2010 + ',');
    if (z.transitions.length === 0) {
      lines.push('      "transitions": []');
    } else {
      lines.push('      "transitions": [');
      z.transitions.forEach((tr, i) => {
        const o = { at: tr.at, before: tr.before, after: tr.after, kind: describe(tr).kind,
          utc: new Date(tr.at).toISOString().slice(0, 16) + 'Z', wall: wallText(describe(tr).wallAt) };
        lines.push('        ' + JSON.stringify(o) + (i + 1 < z.transitions.length ? ',' : ''));
      });
      lines.push('      ]');
    }
    lines.push('    }' + (zi + 1 < ZONES.length ? ',' : ''));
  });
  lines.push('  },');
  lines.push('  "cases": [');
  cases.forEach((c, i) => lines.push('    ' + JSON.stringify(c) + (i + 1 < cases.length ? ',' : '')));
  lines.push('  ]');
  lines.push('}');
  fs.writeFileSync(out, lines.join('\n') + '\n');

  // ---- counts
  const count = (key) => {
    const m = new Map();
    for (const c of cases) m.set(key(c), (m.get(key(c)) || 0) + 1);
    return m;
  };
  let transitions = 0;
  for (const [zone] of ZONES) transitions += zones[zone].transitions.length;
  console.log('zones %d, transitions %d, cases %d (errors %d, skipped for the loop limit %d)',
    ZONES.length, transitions, cases.length, cases.filter((c) => c.error !== undefined).length, skipped);
  const perZone = count((c) => c.tz);
  console.log('per zone:');
  for (const [zone] of ZONES) {
    console.log('  %s %d cases, %d transitions', zone.padEnd(20), perZone.get(zone) || 0, zones[zone].transitions.length);
  }
  console.log('per tag:');
  for (const [tag, n] of [...count((c) => c.tag)].sort()) console.log('  %s %d', tag.padEnd(16), n);
  const errors = count((c) => c.error);
  errors.delete(undefined);
  for (const [msg, n] of errors) console.log('error %d x %s', n, msg);
  let backwards = 0;
  let repeats = 0;
  for (const c of cases) {
    let prev = c.from;
    c.next.forEach((t, i) => {
      if (t === prev && i > 0) repeats++;
      else if (t <= prev) backwards++;
      prev = t;
    });
  }
  console.log('cases whose chained next() differs from fresh parses (next_fresh): %d',
    cases.filter((c) => c.next_fresh !== undefined).length);
  console.log('instants not after their predecessor: %d repeats, %d going backwards (or not after from)', repeats, backwards);
  for (const s of slow) console.log('slow: ' + s);
  console.log('wrote %s (%d bytes) in %s s', out, fs.statSync(out).size,
    (Number(process.hrtime.bigint() - started) / 1e9).toFixed(1));
}

if (require.main === module) {
  main();
}
