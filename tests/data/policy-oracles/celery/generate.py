#!/usr/bin/python3
"""Generates tests/data/policy_oracle_celery.json: what Celery itself answers.

For each configuration a Celery user writes on a task (max_retries,
retry_backoff, retry_backoff_max, retry_jitter, default_retry_delay), this
script builds a real task with autoretry_for and runs Celery's own retry path:
celery.app.autoretry's wrapper, Task.retry (the max_retries check and the
default_retry_delay countdown) and celery.utils.time.
get_exponential_backoff_interval. It records, for retry n = 1, 2, ..., the
countdown Celery hands to the Retry it raises, in milliseconds.

Jitter bounds: Celery draws full jitter with random.randrange(countdown + 1).
The script runs every retry twice with randrange patched to return its lowest
(0) and its highest (stop - 1) value; a retry whose countdown called randrange
gets `min_ms`/`max_ms`. The highest draw equals the countdown before jitter,
which is the planned delay (`delays_ms`).

Usage (Debian 12: apt-get install python3-celery):
    /usr/bin/python3 generate.py ../../policy_oracle_celery.json

Deterministic: the configurations come from mulberry32 with a fixed seed (the
generator tests/data/cron-parser/generate.js uses), no clock is read, and the
output is one case a line. See ../README.md.
"""

import json
import sys
from unittest import mock

import celery
import celery.utils.time as celery_time
from celery import Celery
from celery.exceptions import Retry

SEED = 20250612
RANDOM_CONFIGS = 1200
DELAYS_CAP = 30  # delays recorded for retries 1..min(count, 30)
RETRIES_LIMIT = 1001  # the core refuses more than 1000 retries; probing stops here
EXPECTED_VERSION = "5.2.6"  # Debian 12's python3-celery


# ---------------------------------------------------------------- mulberry32


class Mulberry32:
    """The 32-bit mulberry32 generator, bit for bit as in generate.js."""

    def __init__(self, seed):
        self.state = seed & 0xFFFFFFFF

    def next(self):
        self.state = (self.state + 0x6D2B79F5) & 0xFFFFFFFF
        t = self.state
        t = ((t ^ (t >> 15)) * (t | 1)) & 0xFFFFFFFF
        t ^= (t + (((t ^ (t >> 7)) * (t | 61)) & 0xFFFFFFFF)) & 0xFFFFFFFF
        return ((t ^ (t >> 14)) & 0xFFFFFFFF) / 4294967296

    def int(self, lo, hi):
        return lo + int(self.next() * (hi - lo + 1))

    def pick(self, xs):
        return xs[int(self.next() * len(xs))]

    def chance(self, p):
        return self.next() < p


# ---------------------------------------------------------------- Celery calls

APP = Celery("policy-oracle", set_as_current=False)


class Boom(Exception):
    """The failure every task raises; autoretry_for names it."""


def make_task(index, config):
    # A task per configuration: autoretry reads the options when the task is
    # created, as it does for a decorated function in an application.
    def run(self):
        raise Boom()

    return APP.task(bind=True, autoretry_for=(Boom,), name="oracle.task%d" % index,
                    shared=False, **config)(run)


def countdown(task, retries):
    """The countdown of the retry after `retries` earlier retries, or None
    when Celery gives up (Task.retry re-raises the original exception)."""
    task.push_request(retries=retries, is_eager=True, called_directly=False, id="oracle")
    try:
        task.run()
    except Retry as r:
        return r.when
    except Boom:
        return None
    finally:
        task.pop_request()
    raise AssertionError("the task neither retried nor failed")


class Draw:
    """random.randrange patched to one extreme, counting its calls."""

    def __init__(self, highest):
        self.highest = highest
        self.calls = 0

    def __call__(self, *args):
        if len(args) != 1 or not isinstance(args[0], int) or args[0] < 1:
            raise AssertionError("unexpected randrange%r" % (args,))
        self.calls += 1
        return args[0] - 1 if self.highest else 0


def to_ms(seconds):
    ms = seconds * 1000
    if ms != int(ms):
        raise AssertionError("countdown %r is not whole milliseconds" % (seconds,))
    return int(ms)


def one_retry(task, retries):
    """(highest, lowest, drew) for the retry after `retries` earlier ones."""
    values = []
    drew = False
    for highest in (True, False):
        draw = Draw(highest)
        with mock.patch.object(celery_time.random, "randrange", draw):
            values.append(countdown(task, retries))
        drew = drew or draw.calls > 0
    return values[0], values[1], drew


def oracle(index, config):
    task = make_task(index, config)
    count = 0
    delays, lows, highs, jittered = [], [], [], False
    while count < RETRIES_LIMIT:
        high, low, drew = one_retry(task, count) if count < DELAYS_CAP else (
            countdown(task, count), None, False)
        if high is None:
            break
        count += 1
        if count <= DELAYS_CAP:
            delays.append(to_ms(high))
            lows.append(to_ms(low))
            highs.append(to_ms(high))
            jittered = jittered or drew
    if count >= RETRIES_LIMIT:
        raise AssertionError("%r retries without limit" % (config,))
    case = {"config": config, "retries": count, "delays_ms": delays}
    if jittered:
        case["min_ms"] = lows
        case["max_ms"] = highs
    return case


# ---------------------------------------------------------------- configurations

# What Celery users write (docs/policies.md, the celery row), and the corners.
CURATED = [
    {},
    {"max_retries": 3, "retry_backoff": 1800, "retry_backoff_max": 7200, "retry_jitter": False},
    {"max_retries": 3, "retry_backoff": 1800},
    {"retry_backoff": True},
    {"retry_backoff": True, "retry_jitter": False},
    {"max_retries": 0},
    {"max_retries": 0, "retry_backoff": True},
    {"max_retries": 5, "default_retry_delay": 0},
    {"max_retries": 5, "default_retry_delay": 60},
    {"max_retries": 5, "retry_backoff": False, "default_retry_delay": 30},
    {"max_retries": 5, "retry_backoff": 0, "default_retry_delay": 30},
    {"max_retries": 10, "retry_backoff": 5, "retry_backoff_max": 60, "retry_jitter": False},
    {"max_retries": 10, "retry_backoff": 5, "retry_backoff_max": 60},
    {"max_retries": 30, "retry_backoff": 1, "retry_backoff_max": 1, "retry_jitter": False},
    {"max_retries": 40, "retry_backoff": True, "retry_backoff_max": 86400, "retry_jitter": False},
    {"max_retries": 1000, "retry_backoff": 2, "retry_jitter": True},
    {"max_retries": 3, "retry_backoff": 2.7, "retry_jitter": False},
    {"max_retries": 3, "retry_backoff": 1.0, "retry_jitter": False},
    {"max_retries": 3, "retry_backoff": 0.5, "retry_jitter": False},
    {"max_retries": 3, "retry_backoff": 0.5, "retry_jitter": False, "default_retry_delay": 7},
    {"max_retries": 4, "retry_backoff_max": 10, "retry_jitter": False},
    {"max_retries": 4, "retry_jitter": True, "default_retry_delay": 15},
]

FRACTIONS = [0.1, 0.25, 0.5, 0.9, 0.999, 1.0, 1.5, 2.5, 2.7, 10.5, 59.9]


def random_max_retries(rng):
    r = rng.next()
    if r < 0.6:
        return rng.int(0, 12)
    if r < 0.9:
        return rng.int(13, 40)
    return rng.int(41, 1000)


def random_backoff(rng):
    """A retry_backoff value, or None for no key."""
    r = rng.next()
    if r < 0.15:
        return None
    if r < 0.30:
        return True
    if r < 0.35:
        return False
    if r < 0.38:
        return 0
    if r < 0.45:
        return rng.pick(FRACTIONS)
    if r < 0.80:
        return rng.int(1, 10)
    if r < 0.95:
        return rng.int(11, 3600)
    return rng.int(3601, 86400)


def random_config(rng):
    config = {}
    if rng.chance(0.9):
        config["max_retries"] = random_max_retries(rng)
    backoff = random_backoff(rng)
    if backoff is not None:
        config["retry_backoff"] = backoff
    if rng.chance(0.6):
        config["retry_backoff_max"] = rng.pick([rng.int(1, 60), rng.int(61, 3600),
                                                rng.int(3601, 7 * 86400)])
    if rng.chance(0.6):
        config["retry_jitter"] = rng.chance(0.5)
    if rng.chance(0.5):
        config["default_retry_delay"] = rng.pick([0, rng.int(1, 600), rng.int(601, 86400)])
    return config


# ---------------------------------------------------------------- output


def main(out):
    if celery.__version__ != EXPECTED_VERSION:
        raise SystemExit("expected celery %s, found %s (Debian 12: apt-get install python3-celery)"
                         % (EXPECTED_VERSION, celery.__version__))
    rng = Mulberry32(SEED)
    configs = [("curated", c) for c in CURATED]
    seen = {json.dumps(c, sort_keys=True) for _, c in configs}
    while len(configs) < len(CURATED) + RANDOM_CONFIGS:
        config = random_config(rng)
        key = json.dumps(config, sort_keys=True)
        if key not in seen:
            seen.add(key)
            configs.append(("random", config))
    cases = []
    for index, (tag, config) in enumerate(configs):
        case = oracle(index, config)
        case["tag"] = tag
        cases.append(case)
    lines = ["{"]
    lines.append('  "about": %s,' % json.dumps(
        "Reference retry plans from Celery's own autoretry, Task.retry and "
        "get_exponential_backoff_interval. Generated by tests/data/policy-oracles/celery/"
        "generate.py; do not edit by hand. config: the task options as written; retries: how "
        "many retries Celery makes; delays_ms: the countdown before retry 1..min(retries, %d) "
        "(with jitter: the highest draw, i.e. the countdown before jitter); min_ms/max_ms: "
        "the countdown with random.randrange at its lowest and highest value, present when "
        "Celery draws jitter." % DELAYS_CAP))
    lines.append('  "library": "celery",')
    lines.append('  "version": %s,' % json.dumps(celery.__version__))
    lines.append('  "seed": %d,' % SEED)
    lines.append('  "delays_cap": %d,' % DELAYS_CAP)
    lines.append('  "cases": [')
    for i, case in enumerate(cases):
        lines.append("    " + json.dumps(case, separators=(",", ":"))
                     + ("," if i + 1 < len(cases) else ""))
    lines.append("  ]")
    lines.append("}")
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    jittered = sum(1 for c in cases if "min_ms" in c)
    print("celery %s: %d configs (%d curated, %d with jitter) -> %s"
          % (celery.__version__, len(cases), len(CURATED), jittered, out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: generate.py OUT.json")
    main(sys.argv[1])
