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

# rehearse_add_test(NAME SOURCES a.cpp b.cpp DEPS rehearse::model [LABELS l])
# Every test binary uses the shared main (tests/support/test_main.cpp), which
# fails when the binary ran zero tests or RapidCheck is configured to run zero
# cases, so a filter or RC_PARAMS typo cannot turn a suite green by skipping it.
function(rehearse_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE rehearse_test_support ${ARG_DEPS})
  rehearse_set_warnings(${name})
  # gtest/rapidcheck macros trip a few of our stricter warnings.
  target_compile_options(${name} PRIVATE -Wno-old-style-cast -Wno-conversion -Wno-null-dereference)
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
