#!/bin/sh
# The downstream check (tests/CMakeLists.txt, docs/library.md): install the
# built tree into a fresh prefix, then configure, build and run
# tests/downstream against it as a separate project. Fails at the first step
# that fails.
#   run.sh BUILD_DIR SOURCE_DIR WORK_DIR CXX LAUNCHER BUILD_TYPE CXX_FLAGS LINKER_FLAGS
set -eu
build=$1 src=$2 work=$3 cxx=$4 launcher=$5 type=$6 cxxflags=$7 ldflags=$8
started=$(date +%s)
rm -rf "$work"
mkdir -p "$work"
step() { echo "downstream: [$(( $(date +%s) - started ))s] $*"; }

step "install $build into $work/prefix"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log" 2>&1 || {
  cat "$work/install.log"; exit 1; }

# The same compiler, flags (sanitizers too) and compiler cache as the tree.
set -- -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE="$type" -DCMAKE_CXX_FLAGS="$cxxflags" -DCMAKE_EXE_LINKER_FLAGS="$ldflags" \
  -DMY_SCENARIOS_DIR="$src/scenarios"
if [ -n "$launcher" ]; then set -- "$@" -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher"; fi

step "the core alone: find_package(rehearse) without COMPONENTS testing, build, run"
cmake -S "$src/tests/downstream" -B "$work/core-only" -DDOWNSTREAM_CORE_ONLY=ON "$@" > "$work/core-only.log" 2>&1 || {
  cat "$work/core-only.log"; exit 1; }
cmake --build "$work/core-only" -j2 >> "$work/core-only.log" 2>&1 || { cat "$work/core-only.log"; exit 1; }
ctest --test-dir "$work/core-only" --output-on-failure

step "configure and build tests/downstream"
cmake -S "$src/tests/downstream" -B "$work/build" "$@" > "$work/configure.log" 2>&1 || {
  cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" -j2 > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }

# This checks the packaging, not the core: fewer RapidCheck cases than the
# main tree's own properties (tests/testing/) run, unless RC_PARAMS says otherwise.
step "run its tests"
RC_PARAMS=${RC_PARAMS:-max_success=25} ctest --test-dir "$work/build" --output-on-failure
echo "downstream: ok in $(( $(date +%s) - started ))s"
