#!/usr/bin/env bash
# Goal: `rehearse cron next|explain` in a time zone (--tz ZONE or a CRON_TZ=
# prefix; docs/cron.md "Time zones"): each instant also as local time with its
# offset, the slots a gap or a fold placed marked, the zone's transitions in
# the window, the same in --json; bad zones exit 2 naming the zone; without a
# zone the output is the UTC list it always was; --version names the tz database.
# Method: exact output for cases derived by hand from the published transitions
# (instants UTC, local readings in the comments):
#   Europe/Berlin     2026-03-29T01:00Z 02:00 CET  -> 03:00 CEST (gap)
#                     2026-10-25T01:00Z 03:00 CEST -> 02:00 CET  (fold)
#                     2024-03-31T01:00Z and 2024-10-27T01:00Z the same
#   America/New_York  2026-03-08T07:00Z 02:00 EST  -> 03:00 EDT  (gap)
#                     2026-11-01T06:00Z 02:00 EDT  -> 01:00 EST  (fold)
# and the rules of docs/semantics.md §3: a time in a gap runs once, shifted by
# the gap; a time in a fold runs in the first pass only, unless the hour is *.
set -u
R="$1"
. "$(dirname "$0")/lib.sh"

# same NAME WANT_RC WANT_STDOUT ARGS...: exit code and the whole stdout.
same() {
  local name="$1" want_rc="$2" want_out="$3"
  shift 3
  local out rc
  out=$("$R" "$@" 2>"$work/err")
  rc=$?
  if [ "$rc" = "$want_rc" ] && [ "$out" = "$want_out" ]; then
    ok
  else
    bad "$name: exit $rc (expected $want_rc), stdout:
$out
expected:
$want_out
stderr: $(head -c 400 "$work/err")"
  fi
}
# json NAME PYTHON-EXPR ARGS...: the expression over the parsed stdout `d`
# and the exit code `rc` is true.
json() {
  local name="$1" expr="$2"
  shift 2
  local out rc
  out=$("$R" "$@" 2>/dev/null)
  rc=$?
  if python3 -c 'import json, sys; d = json.loads(sys.argv[1]); rc = int(sys.argv[3]); sys.exit(0 if eval(sys.argv[2]) else 1)' "$out" "$expr" "$rc" 2>/dev/null; then
    ok
  else
    bad "$name: '$expr' is not true of exit $rc, stdout: $(printf '%s' "$out" | head -c 900)"
  fi
}
# refused NAME TEXT... -- ARGS...: exit 2, stderr holds every TEXT.
refused() {
  local name="$1"
  shift
  local texts=()
  while [ "$1" != "--" ]; do texts+=("$1"); shift; done
  shift
  expect_rc "$name" 2 "$@"
  for t in "${texts[@]}"; do contains "$name" "$work/err" "$t"; done
}

# ---- cron next: the gap ----
# 02:30 does not exist on 2026-03-29: it runs at 03:30 CEST (01:30Z), once.
same berlin-gap 0 "2026-03-27T01:30:00Z  2026-03-27 02:30:00 +01:00
2026-03-28T01:30:00Z  2026-03-28 02:30:00 +01:00
-- 2026-03-29T01:00:00Z Europe/Berlin springs forward: 02:00 -> 03:00 (+01:00 -> +02:00)
2026-03-29T01:30:00Z  2026-03-29 03:30:00 +02:00  shifted: 02:30 does not exist
2026-03-30T00:30:00Z  2026-03-30 02:30:00 +02:00" \
  cron next '30 2 * * *' --tz Europe/Berlin --from 2026-03-27T00:00:00Z --count 4
# 02:00, 02:20 and 02:40 are skipped: one run, for 02:00, at 03:00 CEST, the
# transition's own instant (the transition line comes first).
same berlin-gap-several 0 "-- 2026-03-29T01:00:00Z Europe/Berlin springs forward: 02:00 -> 03:00 (+01:00 -> +02:00)
2026-03-29T01:00:00Z  2026-03-29 03:00:00 +02:00  shifted: 02:00 does not exist
2026-03-30T00:00:00Z  2026-03-30 02:00:00 +02:00" \
  cron next '*/20 2 * * *' --tz Europe/Berlin --from 2026-03-28T23:00:00Z --count 2
# An hourly job: 01:30 CET, then 03:30 CEST, which is real (02:30 has no run of its own).
same berlin-gap-hourly 0 "2026-03-29T00:30:00Z  2026-03-29 01:30:00 +01:00
-- 2026-03-29T01:00:00Z Europe/Berlin springs forward: 02:00 -> 03:00 (+01:00 -> +02:00)
2026-03-29T01:30:00Z  2026-03-29 03:30:00 +02:00" \
  cron next '30 * * * *' --tz Europe/Berlin --from 2026-03-29T00:00:00Z --count 2
# The prefix form: 2026-03-08 02:30 EST does not exist, 03:30 EDT is 07:30Z.
same new-york-gap-prefix 0 "2026-03-07T07:30:00Z  2026-03-07 02:30:00 -05:00
-- 2026-03-08T07:00:00Z America/New_York springs forward: 02:00 -> 03:00 (-05:00 -> -04:00)
2026-03-08T07:30:00Z  2026-03-08 03:30:00 -04:00  shifted: 02:30 does not exist" \
  cron next 'CRON_TZ=America/New_York 30 2 * * *' --from 2026-03-07T00:00:00Z --count 2

# ---- cron next: the fold ----
# 02:30 happens at 00:30Z (CEST) and 01:30Z (CET): a named hour runs in the first pass only.
same berlin-fold-once 0 "2026-10-24T00:30:00Z  2026-10-24 02:30:00 +02:00
2026-10-25T00:30:00Z  2026-10-25 02:30:00 +02:00  first pass of the fold
-- 2026-10-25T01:00:00Z Europe/Berlin falls back: 03:00 -> 02:00 (+02:00 -> +01:00)
2026-10-26T01:30:00Z  2026-10-26 02:30:00 +01:00" \
  cron next '30 2 * * *' --tz Europe/Berlin --from 2026-10-24T00:00:00Z --count 3
# An hour field of * runs in both passes: two real hours.
same berlin-fold-twice 0 "2026-10-25T00:30:00Z  2026-10-25 02:30:00 +02:00  first pass of the fold
-- 2026-10-25T01:00:00Z Europe/Berlin falls back: 03:00 -> 02:00 (+02:00 -> +01:00)
2026-10-25T01:30:00Z  2026-10-25 02:30:00 +01:00  second pass of the fold
2026-10-25T02:30:00Z  2026-10-25 03:30:00 +01:00" \
  cron next '30 * * * *' --tz Europe/Berlin --from 2026-10-25T00:00:00Z --count 3
# New York repeats 01:00-02:00: 01:30 EDT (05:30Z) runs, 01:30 EST (06:30Z) does not.
same new-york-fold-once 0 "2026-10-31T05:30:00Z  2026-10-31 01:30:00 -04:00
2026-11-01T05:30:00Z  2026-11-01 01:30:00 -04:00  first pass of the fold
-- 2026-11-01T06:00:00Z America/New_York falls back: 02:00 -> 01:00 (-04:00 -> -05:00)
2026-11-02T06:30:00Z  2026-11-02 01:30:00 -05:00" \
  cron next '30 1 * * *' --tz America/New_York --from 2026-10-31T00:00:00Z --count 3
same new-york-fold-twice 0 "2026-11-01T05:00:00Z  2026-11-01 01:00:00 -04:00  first pass of the fold
-- 2026-11-01T06:00:00Z America/New_York falls back: 02:00 -> 01:00 (-04:00 -> -05:00)
2026-11-01T06:00:00Z  2026-11-01 01:00:00 -05:00  second pass of the fold
2026-11-01T07:00:00Z  2026-11-01 02:00:00 -05:00" \
  cron next '0 * * * *' --tz America/New_York --from 2026-11-01T04:30:00Z --count 3

# ---- cron next: every transition inside the printed window, in time order ----
# 12:00 local on the 1st: 11:00Z under CET, 10:00Z under CEST.
same berlin-year-transitions 0 "2026-01-01T11:00:00Z  2026-01-01 12:00:00 +01:00
2026-02-01T11:00:00Z  2026-02-01 12:00:00 +01:00
2026-03-01T11:00:00Z  2026-03-01 12:00:00 +01:00
-- 2026-03-29T01:00:00Z Europe/Berlin springs forward: 02:00 -> 03:00 (+01:00 -> +02:00)
2026-04-01T10:00:00Z  2026-04-01 12:00:00 +02:00
2026-05-01T10:00:00Z  2026-05-01 12:00:00 +02:00
2026-06-01T10:00:00Z  2026-06-01 12:00:00 +02:00
2026-07-01T10:00:00Z  2026-07-01 12:00:00 +02:00
2026-08-01T10:00:00Z  2026-08-01 12:00:00 +02:00
2026-09-01T10:00:00Z  2026-09-01 12:00:00 +02:00
2026-10-01T10:00:00Z  2026-10-01 12:00:00 +02:00
-- 2026-10-25T01:00:00Z Europe/Berlin falls back: 03:00 -> 02:00 (+02:00 -> +01:00)
2026-11-01T11:00:00Z  2026-11-01 12:00:00 +01:00
2026-12-01T11:00:00Z  2026-12-01 12:00:00 +01:00" \
  cron next '0 12 1 * *' --tz Europe/Berlin --from 2026-01-01T00:00:00Z --count 12
# The window ends at the last instant: the 03-29 transition is after 03-28 09:00.
same berlin-window-ends 0 "2026-03-27T08:00:00Z  2026-03-27 09:00:00 +01:00
2026-03-28T08:00:00Z  2026-03-28 09:00:00 +01:00" \
  cron next '0 9 * * *' --tz Europe/Berlin --from 2026-03-27T00:00:00Z --count 2
same utc-zone 0 "2026-03-29T02:30:00Z  2026-03-29 02:30:00 +00:00" \
  cron next '30 2 * * *' --tz UTC --from 2026-03-29T00:00:00Z --count 1
# Without a zone: the plain UTC list, as before.
same no-zone-unchanged 0 "2026-03-29T02:30:00Z
2026-03-30T02:30:00Z" cron next '30 2 * * *' --from 2026-03-29T00:00:00Z --count 2

# ---- cron next --json ----
json next-json-gap 'rc == 0 and d["tz"] == "Europe/Berlin" and d["next"] == ["2026-03-28T01:30:00Z", "2026-03-29T01:30:00Z"] and d["slots"][0] == {"at": "2026-03-28T01:30:00Z", "local": "2026-03-28T02:30:00", "offset": "+01:00", "dst_rule": None, "shifted_from": None} and d["slots"][1] == {"at": "2026-03-29T01:30:00Z", "local": "2026-03-29T03:30:00", "offset": "+02:00", "dst_rule": "gap", "shifted_from": "2026-03-29T02:30:00"} and d["transitions"] == [{"at": "2026-03-29T01:00:00Z", "kind": "gap", "local_before": "2026-03-29T02:00:00", "local_after": "2026-03-29T03:00:00", "offset_before": "+01:00", "offset_after": "+02:00"}]' \
  cron next '30 2 * * *' --tz Europe/Berlin --from 2026-03-27T12:00:00Z --count 2 --json
json next-json-fold 'rc == 0 and [s["dst_rule"] for s in d["slots"]] == ["fold_first", "fold_second", None] and [s["offset"] for s in d["slots"]] == ["-04:00", "-05:00", "-05:00"] and [t["kind"] for t in d["transitions"]] == ["fold"]' \
  cron next 'CRON_TZ=America/New_York 0 * * * *' --from 2026-11-01T04:30:00Z --count 3 --json
json next-json-no-zone 'rc == 0 and set(d) == {"expression", "from", "next"}' \
  cron next '30 2 * * *' --from 2026-03-27T12:00:00Z --count 2 --json

# ---- cron explain --tz ----
"$R" cron explain '30 2 * * *' --tz Europe/Berlin --from 2026-01-01T00:00:00Z >"$work/explain" 2>&1
for line in "zone:          Europe/Berlin (tz database " \
  "in a fold:     runs once, in the first pass: the hour field \"2\" names wall-clock hours" \
  "transitions:   2 in the 12 months from 2026-01-01T00:00:00Z to 2027-01-01T00:00:00Z" \
  "  2026-03-29T01:00:00Z springs forward: 02:00 -> 03:00 (+01:00 -> +02:00)" \
  "    effect:    02:30 does not exist; runs once, shifted, at 03:30 +02:00" \
  "    before:    2026-03-28T01:30:00Z  2026-03-28 02:30:00 +01:00" \
  "    after:     2026-03-29T01:30:00Z  2026-03-29 03:30:00 +02:00  shifted: 02:30 does not exist" \
  "  2026-10-25T01:00:00Z falls back: 03:00 -> 02:00 (+02:00 -> +01:00)" \
  "    effect:    02:30 happens twice; runs once, in the first pass (+02:00)" \
  "    before:    2026-10-25T00:30:00Z  2026-10-25 02:30:00 +02:00  first pass of the fold" \
  "    after:     2026-10-26T01:30:00Z  2026-10-26 02:30:00 +01:00"; do
  contains explain-berlin-daily "$work/explain" "$line"
done
# The window's default start is the firing count's: 2024-01-01.
"$R" cron explain 'CRON_TZ=America/New_York 30 * * * *' >"$work/explain" 2>&1
for line in "in a fold:     runs in both passes: the hour field is *" \
  "transitions:   2 in the 12 months from 2024-01-01T00:00:00Z to 2025-01-01T00:00:00Z" \
  "  2024-03-10T07:00:00Z springs forward: 02:00 -> 03:00 (-05:00 -> -04:00)" \
  "    effect:    02:30 does not exist; no run of its own: the next run, at 03:30 -04:00, stands for it" \
  "  2024-11-03T06:00:00Z falls back: 02:00 -> 01:00 (-04:00 -> -05:00)" \
  "    effect:    01:30 happens twice; runs in both passes (-04:00 and -05:00)" \
  "    before:    2024-11-03T05:30:00Z  2024-11-03 01:30:00 -04:00  first pass of the fold" \
  "    after:     2024-11-03T06:30:00Z  2024-11-03 01:30:00 -05:00  second pass of the fold"; do
  contains explain-new-york-hourly "$work/explain" "$line"
done
"$R" cron explain '0 9 * * *' --tz Europe/Berlin --from 2026-01-01T00:00:00Z >"$work/explain" 2>&1
contains explain-unaffected "$work/explain" "    effect:    unaffected: no time of the expression falls in 02:00-03:00"
"$R" cron explain '0 9 * * *' --tz Asia/Kolkata >"$work/explain" 2>&1
contains explain-no-dst "$work/explain" "transitions:   none in the 12 months from 2024-01-01T00:00:00Z to 2025-01-01T00:00:00Z (the offset stays +05:30)"
# Without a zone the explanation has no zone section.
"$R" cron explain '30 2 * * *' >"$work/explain" 2>&1
lacks explain-no-zone "$work/explain" "zone:"
json explain-json 'rc == 0 and d["tz"] == "Europe/Berlin" and not d["zone"]["fires_twice_in_fold"] and d["zone"]["window"] == {"from": "2026-01-01T00:00:00Z", "until": "2027-01-01T00:00:00Z"} and [t["kind"] for t in d["zone"]["transitions"]] == ["gap", "fold"] and d["zone"]["transitions"][0]["slot_after"]["dst_rule"] == "gap" and d["zone"]["transitions"][0]["slot_after"]["at"] == "2026-03-29T01:30:00Z" and d["zone"]["transitions"][1]["slot_before"]["dst_rule"] == "fold_first" and d["zone"]["transitions"][1]["affected_readings"] == 1 and "first pass" in d["zone"]["fold_rule"]' \
  cron explain '30 2 * * *' --tz Europe/Berlin --from 2026-01-01T00:00:00Z --json
json explain-json-no-zone 'rc == 0 and "tz" not in d and "zone" not in d' cron explain '30 2 * * *' --json

# ---- bad zones: exit 2, the zone named, what was expected said ----
refused tz-unknown 'Mars/Olympus' 'IANA name' -- cron next '0 9 * * *' --tz Mars/Olympus
refused tz-empty 'empty time zone name' 'IANA name' -- cron next '0 9 * * *' --tz ''
refused tz-posix 'CET-1CEST,M3.5.0,M10.5.0/3' 'POSIX TZ strings are not read' -- cron next '0 9 * * *' --tz 'CET-1CEST,M3.5.0,M10.5.0/3'
refused tz-prefix-unknown 'Nowhere/Else' 'IANA name' -- cron next 'CRON_TZ=Nowhere/Else 0 9 * * *'
refused tz-explain-unknown 'Mars/Olympus' 'IANA name' -- cron explain '0 9 * * *' --tz Mars/Olympus
refused tz-explain-prefix 'Nowhere/Else' -- cron explain 'CRON_TZ=Nowhere/Else 0 9 * * *'
refused tz-two-zones '"UTC"' '"Europe/Berlin"' 'name one zone' -- cron next 'CRON_TZ=UTC 0 9 * * *' --tz Europe/Berlin
refused explain-from-needs-zone '--from needs a zone' -- cron explain '0 9 * * *' --from 2026-01-01T00:00:00Z
json tz-json-error 'rc == 2 and d["error"]["code"] == "invalid_argument" and "Mars/Olympus" in d["error"]["message"]' \
  cron next '0 9 * * *' --tz Mars/Olympus --json
# The same zone in both places is one zone.
same tz-same-twice 0 "2026-01-01T09:00:00Z  2026-01-01 09:00:00 +00:00" \
  cron next 'CRON_TZ=UTC 0 9 * * *' --tz UTC --from 2026-01-01T00:00:00Z --count 1

# ---- --help ----
for sub in next explain; do
  expect_rc "help-$sub" 0 cron "$sub" --help
  contains "help-$sub" "$work/out" "--tz ZONE"
  contains "help-$sub" "$work/out" "CRON_TZ=ZONE"
done

# ---- --version: the tz database's version too ----
expect_rc version 0 --version
tz_version=$(sed -n 2p "$work/out" | sed -n 's/^tz database \([0-9]\{4\}[a-z]\{1,2\}\)$/\1/p')
if [ -n "$tz_version" ]; then ok; else bad "version: no 'tz database YYYYx' line: $(cat "$work/out")"; fi
# Debian's database keeps its version in tzdata.zi's first line.
if [ -r /usr/share/zoneinfo/tzdata.zi ] && [ -z "${TZDIR:-}" ]; then
  contains version-system /usr/share/zoneinfo/tzdata.zi "# version $tz_version"
fi
json version-json "rc == 0 and d['tz_database'] == '$tz_version' and 'version' in d" --version --json
json next-json-tz-database "rc == 0 and d['tz_database'] == '$tz_version'" \
  cron next '0 9 * * *' --tz UTC --from 2026-01-01T00:00:00Z --count 1 --json

finish "cli cron zone"
