#!/usr/bin/env bash
# Installs the Debian packages the build needs, when they are missing.
# Sourced by .ci/scenarios and .ci/test; safe to run on its own.
set -euo pipefail

# chromium: the HTML report's browser test (tests/cli/test_report_browser.sh).
REHEARSE_PACKAGES=(g++ cmake make pkg-config python3 chromium
  libgtest-dev libgmock-dev librapidcheck-dev
  nlohmann-json3-dev libfmt-dev libbenchmark-dev)
# Time zones (docs/semantics.md §3): the date/tz library and the system tz database.
REHEARSE_PACKAGES+=(libhowardhinnant-date-dev tzdata)
# yaml-cpp: reads retry settings pasted as YAML, e.g. a Kubernetes Job (model/yaml_document.*).
REHEARSE_PACKAGES+=(libyaml-cpp-dev)
# .ci/check-function-length and .ci/check-format.
REHEARSE_PACKAGES+=(universal-ctags clang-format-14)

# clang-14 and libclang-rt-14-dev (the libFuzzer, ASan and UBSan runtimes):
# the fuzz targets (.ci/fuzz, docs/fuzzing.md).
REHEARSE_PACKAGES+=(clang-14 libclang-rt-14-dev)
# lld-14: links the sanitized trees (every test binary, each mutant's rehearse)
# several times faster than GNU ld.
REHEARSE_PACKAGES+=(lld-14)

# GNU parallel: four `check --shard K/4` runs merged (tests/cli/test_check_shards.sh,
# docs/check-ci.md); the test fails, not skips, without it.
REHEARSE_PACKAGES+=(parallel)
# patch: applies the mutant zoo's patches in the mutation build (docs/mutants.md).
REHEARSE_PACKAGES+=(patch)
# python3-simpy3 (SimPy 3): the independent peer model whose run and retry
# counts must equal ours (bench_simpy_* tests, docs/performance.md).
REHEARSE_PACKAGES+=(python3-simpy3)
# python3-celery and ruby-sidekiq: the policy oracle generators call Celery's and
# Sidekiq's own retry code (.ci/oracles, tests/data/policy-oracles/README.md).
REHEARSE_PACKAGES+=(python3-celery ruby-sidekiq)

rehearse_missing_packages() {
  local missing=()
  for p in "${REHEARSE_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  echo "${missing[@]:-}"
}

rehearse_install_deps() {
  local missing
  missing=$(rehearse_missing_packages)
  if [ -z "$missing" ]; then
    return 0
  fi
  echo "rehearse: installing missing Debian packages: $missing" >&2
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      SUDO=sudo
    else
      echo "rehearse: missing packages and not root: $missing" >&2
      echo "rehearse: install them with: apt-get install -y $missing" >&2
      return 1
    fi
  else
    SUDO=
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! $SUDO apt-get update -q >&2 || ! $SUDO apt-get install -y -q --no-install-recommends $missing >&2; then
    echo "rehearse: apt-get could not install: $missing" >&2
    echo "rehearse: these Debian 12 packages are required: ${REHEARSE_PACKAGES[*]}" >&2
    return 1
  fi
  missing=$(rehearse_missing_packages)
  if [ -n "$missing" ]; then
    echo "rehearse: still missing after apt-get: $missing" >&2
    return 1
  fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  rehearse_install_deps
fi
