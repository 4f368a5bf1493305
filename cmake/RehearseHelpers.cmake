# Shared build helpers: warnings as PRIVATE target options, one-line tests.

function(rehearse_set_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
    -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual
    -Wnull-dereference -Wimplicit-fallthrough)
  if(REHEARSE_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# Precompiled standard, fmt and nlohmann/json headers (REHEARSE_PCH): they are
# most of every translation unit's parsing; under the sanitizers code
# generation dominates, so a unit compiles about 15% faster, not twice as
# fast. Off by default: a tree without them is what shows a source file that
# forgot an include it relies on.
set(REHEARSE_PCH_HEADERS <algorithm> <cstdint> <functional> <map> <memory> <optional> <set>
    <string> <string_view> <utility> <vector> <fmt/format.h> <nlohmann/json.hpp>)

function(rehearse_use_pch target)
  if(REHEARSE_PCH)
    target_precompile_headers(${target} PRIVATE ${REHEARSE_PCH_HEADERS})
  endif()
endfunction()

# Test binaries link rehearse::sim and GoogleTest alike, so one header
# precompiled with their flags serves every test that uses the simulator.
function(_rehearse_test_pch name deps)
  if(NOT REHEARSE_PCH OR NOT "rehearse::sim" IN_LIST deps)
    return()
  endif()
  if(NOT TARGET rehearse_test_pch)
    file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/rehearse_test_pch.cpp CONTENT "// precompiled header host\n")
    add_library(rehearse_test_pch OBJECT ${CMAKE_BINARY_DIR}/rehearse_test_pch.cpp)
    target_link_libraries(rehearse_test_pch PRIVATE rehearse_test_support rehearse::sim)
    _rehearse_test_options(rehearse_test_pch)
    target_precompile_headers(rehearse_test_pch PRIVATE ${REHEARSE_PCH_HEADERS} <gtest/gtest.h>)
  endif()
  target_precompile_headers(${name} REUSE_FROM rehearse_test_pch)
endfunction()

function(_rehearse_test_options target)
  rehearse_set_warnings(${target})
  # gtest/rapidcheck macros trip a few of our stricter warnings.
  target_compile_options(${target} PRIVATE -Wno-old-style-cast -Wno-conversion -Wno-null-dereference)
endfunction()

# rehearse_add_test(NAME SOURCES a.cpp b.cpp DEPS rehearse::model [LABELS l])
# Every test binary uses the shared main (tests/support/test_main.cpp), which
# fails when the binary ran zero tests or RapidCheck is configured to run zero
# cases, so a filter or RC_PARAMS typo cannot turn a suite green by skipping it.
function(rehearse_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE rehearse_test_support ${ARG_DEPS})
  _rehearse_test_options(${name})
  _rehearse_test_pch(${name} "${ARG_DEPS}")
  add_test(NAME ${name} COMMAND ${name} --gtest_brief=1)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "REHEARSE_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  if(ARG_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}")
  endif()
endfunction()
