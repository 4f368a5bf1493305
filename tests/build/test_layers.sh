#!/bin/bash
# The layer rule holds in the build (cmake/RehearseLayers.cmake): a project of
# three layers (tests/build/layers) builds its bottom and top layers, and
# building the middle one, which includes a header of the layer above it,
# fails naming the file, the line and what the layer may include.
#   test_layers.sh SOURCE_DIR
source="$1"
R=true
. "$source/tests/cli/lib.sh"
fixture="$source/tests/build/layers"

if cmake -S "$fixture" -B "$work/b" -DREHEARSE_CMAKE_DIR="$source/cmake" >"$work/out" 2>&1; then ok; else bad "configure: $(tail -5 "$work/out")"; fi
if cmake --build "$work/b" --target kernel >"$work/out" 2>&1; then ok; else bad "kernel: $(tail -5 "$work/out")"; fi
if cmake --build "$work/b" --target check >"$work/out" 2>&1; then ok; else bad "check: $(tail -5 "$work/out")"; fi
if cmake --build "$work/b" --target world >"$work/out" 2>&1; then
  bad "world built although sim/world/world.cpp includes sim/check/search.hpp"
else
  ok
fi
contains "names the line" "$work/out" 'sim/world/world.cpp:3: includes "sim/check/search.hpp"'
contains "says what is allowed" "$work/out" "sim/world may include only from: sim/world, sim/kernel"
# Nothing of the world compiled: the check runs before the layer's sources.
if [ -z "$(find "$work/b" -name 'world.cpp.o')" ]; then ok; else bad "world.cpp compiled before the check"; fi
finish "layers"
