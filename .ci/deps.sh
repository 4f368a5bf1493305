#!/usr/bin/env bash
# Installs the Debian packages the build needs, when they are missing, then
# Node.js and npm when either command is missing, then the exporter's locked
# npm packages (tools/bullmq-export) when they are not installed.
# Sourced by .ci/scenarios and .ci/test; safe to run on its own.
set -euo pipefail

# The repository root, wherever this is sourced or run from.
REHEARSE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

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
# redis-server: the BullMQ end-to-end test runs a real BullMQ worker and the
# exporter on a private Redis (tests/cli/test_bullmq_real.sh,
# docs/bullmq-export.md); the test fails, not skips, without it.
REHEARSE_PACKAGES+=(redis-server)
# Node.js and npm are not in this list: a nodejs from NodeSource (which brings
# its own npm) conflicts with Debian's npm package. rehearse_install_node
# installs Debian's nodejs and npm only when `node` or `npm` is missing.

rehearse_missing_packages() {
  local missing=()
  for p in "${REHEARSE_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  echo "${missing[@]:-}"
}

# rehearse_apt_install PACKAGE...: apt-get install, through sudo when not root.
rehearse_apt_install() {
  local sudo=
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo=sudo
    else
      echo "rehearse: missing packages and not root: $*" >&2
      echo "rehearse: install them with: apt-get install -y $*" >&2
      return 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q >&2 && $sudo apt-get install -y -q --no-install-recommends "$@" >&2
}

rehearse_install_packages() {
  local missing
  missing=$(rehearse_missing_packages)
  if [ -z "$missing" ]; then
    return 0
  fi
  echo "rehearse: installing missing Debian packages: $missing" >&2
  # shellcheck disable=SC2086 # one word per package
  if ! rehearse_apt_install $missing; then
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

# Node.js and npm (tools/bullmq-export, tests/cli/test_bullmq_real.sh):
# Debian's, only when either command is missing, so that an installed
# nodejs (NodeSource's, with its npm) is left alone.
rehearse_install_node() {
  if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
    return 0
  fi
  echo "rehearse: node or npm is missing: installing Debian's nodejs and npm" >&2
  if ! rehearse_apt_install nodejs npm ||
    ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "rehearse: could not install node and npm (Debian: apt-get install nodejs npm)" >&2
    return 1
  fi
}

# The BullMQ exporter's npm packages, exactly as package-lock.json locks them.
rehearse_install_bullmq_export() {
  local dir="$REHEARSE_ROOT/tools/bullmq-export"
  if [ -d "$dir/node_modules/bullmq" ]; then
    return 0
  fi
  echo "rehearse: installing the locked npm packages of tools/bullmq-export" >&2
  if ! npm ci --prefix "$dir" --no-audit --no-fund >&2; then
    echo "rehearse: npm ci --prefix tools/bullmq-export failed (is the npm registry reachable?)" >&2
    return 1
  fi
}

rehearse_install_deps() {
  rehearse_install_packages || return 1
  rehearse_install_node || return 1
  rehearse_install_bullmq_export || return 1
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  rehearse_install_deps
fi
