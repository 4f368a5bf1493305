# The mutant zoo (docs/mutants.md): for each mutant of
# tests/mutants/mutants.json, a full `rehearse` command linked with a core
# whose listed translation units are patched. Only in the `mutants` preset
# (REHEARSE_BUILD_MUTANTS=ON); the production targets are never touched.
#
# How a mutant binary is made, without rebuilding the core per mutant:
#   1. At build time, cmake/RehearseMutantPatch.cmake copies the model/*.cpp
#      files the patch names into <build>/tests/mutants/<name>/model/ and
#      applies the patch there (patch -p1, no fuzz). A patch that no longer
#      applies fails the build and names the patch and the file.
#   2. The patched files become a small OBJECT library (one per mutant).
#   3. The mutant's executable is the CLI's objects plus those objects, linked
#      against rehearse::sim (and so the unpatched static rehearse_model).
#      Object files are always linked; an archive member is pulled only for a
#      symbol still undefined. The patched file defines every symbol of the
#      original, so the original member is never pulled (were one left
#      undefined, the member would come in and the link would fail on
#      duplicate symbols: loud, never a silent production core).
#   4. Each mutant binary carries the string "REHEARSE_MUTANT=<name>" (a tiny
#      generated source); the production `rehearse` never does, which the
#      kill-matrix test checks.
# Patches may touch model/*.cpp only (a header change would need every
# including unit recompiled: not supported, see docs/mutants.md).

# REHEARSE_MUTANTS_BASE (the `mutants-ci` preset): the binary directory of an
# already built tree of the same sources, build type and flags (build/asan). The
# mutants then link that tree's rehearse_model / rehearse_sim archives and the
# kill matrix uses its `rehearse`, so this tree compiles only the CLI and the
# patched units (build the `rehearse_mutants` target, not `all`).
set(REHEARSE_MUTANTS_BASE "" CACHE PATH
    "A built tree of the same sources whose libraries and rehearse the mutants reuse")

set(REHEARSE_MUTANTS_DIR ${PROJECT_SOURCE_DIR}/tests/mutants)
set(REHEARSE_MUTANTS_TABLE ${REHEARSE_MUTANTS_DIR}/mutants.json)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${REHEARSE_MUTANTS_TABLE})
file(READ ${REHEARSE_MUTANTS_TABLE} _rm_table)

# What the mutants link: this tree's libraries, or the base tree's.
if(REHEARSE_MUTANTS_BASE)
  set(_rm_base_model ${REHEARSE_MUTANTS_BASE}/model/librehearse_model.a)
  set(_rm_base_sim ${REHEARSE_MUTANTS_BASE}/sim/librehearse_sim.a)
  set(_rm_production ${REHEARSE_MUTANTS_BASE}/sim/cli/rehearse)
  foreach(f IN ITEMS ${_rm_base_model} ${_rm_base_sim} ${_rm_production})
    if(NOT EXISTS ${f})
      message(FATAL_ERROR "REHEARSE_MUTANTS_BASE=${REHEARSE_MUTANTS_BASE}: ${f} is missing; "
                          "build that tree first (e.g. cmake --build --preset asan)")
    endif()
  endforeach()
  find_package(Threads REQUIRED)
  add_library(rehearse_mutant_base_model STATIC IMPORTED)
  set_target_properties(rehearse_mutant_base_model PROPERTIES
    IMPORTED_LOCATION ${_rm_base_model}
    INTERFACE_INCLUDE_DIRECTORIES ${PROJECT_SOURCE_DIR}
    INTERFACE_COMPILE_FEATURES cxx_std_20
    INTERFACE_LINK_LIBRARIES "fmt::fmt;nlohmann_json::nlohmann_json;date::date-tz;yaml-cpp")
  add_library(rehearse_mutant_base_sim STATIC IMPORTED)
  set_target_properties(rehearse_mutant_base_sim PROPERTIES
    IMPORTED_LOCATION ${_rm_base_sim}
    INTERFACE_LINK_LIBRARIES "rehearse_mutant_base_model;Threads::Threads")
  set(_rm_model_lib rehearse_mutant_base_model)
  set(_rm_sim_lib rehearse_mutant_base_sim)
else()
  set(_rm_model_lib rehearse::model)
  set(_rm_sim_lib rehearse::sim)
  set(_rm_production $<TARGET_FILE:rehearse>)
endif()

# The CLI's sources once, as objects every mutant executable reuses.
file(GLOB _rm_cli_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/sim/cli/*.cpp)
add_library(rehearse_mutant_cli OBJECT ${_rm_cli_sources})
target_link_libraries(rehearse_mutant_cli PRIVATE ${_rm_sim_lib})
target_compile_definitions(rehearse_mutant_cli PRIVATE REHEARSE_VERSION="${PROJECT_VERSION}")
rehearse_set_warnings(rehearse_mutant_cli)
# The commands' own code (arguments, reports) is little of what a run
# executes: compiled quickly, as the patched units below.
target_compile_options(rehearse_mutant_cli PRIVATE -O0 -g0)
rehearse_use_pch(rehearse_mutant_cli)

# The model/*.cpp files a unified diff changes (its "+++ b/<path>" lines).
function(_rm_patched_files patch out_var)
  file(STRINGS ${patch} lines REGEX "^\\+\\+\\+ ")
  set(files "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^\\+\\+\\+ (b/)?([^\t ]+).*$" "\\2" path "${line}")
    if(NOT path MATCHES "^model/[A-Za-z0-9_]+\\.cpp$")
      message(FATAL_ERROR "mutant patch ${patch} changes '${path}': a mutant may patch "
                          "model/*.cpp files only (docs/mutants.md)")
    endif()
    list(APPEND files ${path})
  endforeach()
  if(NOT files)
    message(FATAL_ERROR "mutant patch ${patch} changes no file (no '+++ b/model/...' line)")
  endif()
  list(REMOVE_DUPLICATES files)
  set(${out_var} ${files} PARENT_SCOPE)
endfunction()

function(_rm_add_mutant name patch_name)
  set(patch ${REHEARSE_MUTANTS_DIR}/${patch_name})
  if(NOT EXISTS ${patch})
    message(FATAL_ERROR "mutant '${name}': ${patch} does not exist (tests/mutants/mutants.json)")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${patch})
  _rm_patched_files(${patch} files)
  set(out_dir ${CMAKE_BINARY_DIR}/tests/mutants/${name})
  set(outputs "")
  set(originals "")
  foreach(f IN LISTS files)
    list(APPEND outputs ${out_dir}/${f})
    list(APPEND originals ${PROJECT_SOURCE_DIR}/${f})
  endforeach()
  string(REPLACE ";" "," files_arg "${files}")
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND ${CMAKE_COMMAND} -DNAME=${name} -DPATCH=${patch} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
            -DOUT_DIR=${out_dir} -DFILES=${files_arg}
            -P ${PROJECT_SOURCE_DIR}/cmake/RehearseMutantPatch.cmake
    DEPENDS ${patch} ${originals} ${PROJECT_SOURCE_DIR}/cmake/RehearseMutantPatch.cmake
    COMMENT "Patching mutant ${name} (${patch_name})"
    VERBATIM)
  set(marker ${out_dir}/mutant_marker.cpp)
  file(CONFIGURE OUTPUT ${marker} CONTENT
       "// Generated: marks a mutant binary (cmake/RehearseMutants.cmake).\n\
extern \"C\" __attribute__((used)) const char rehearse_mutant_marker[] =\n\
    \"REHEARSE_MUTANT=${name}\";\n")
  add_library(rehearse_mutant_${name} OBJECT ${outputs} ${marker})
  target_link_libraries(rehearse_mutant_${name} PRIVATE ${_rm_model_lib})
  # The patched copies include "model/..." headers from the source tree.
  target_include_directories(rehearse_mutant_${name} PRIVATE ${PROJECT_SOURCE_DIR})
  rehearse_set_warnings(rehearse_mutant_${name})
  # Each patched unit is compiled once per mutant, so its compile time is
  # the zoo's build time: without optimisation and debug info it halves
  # (the unit's code is a small part of what a run executes; the sanitizers,
  # which decide what the objects may link with, stay).
  target_compile_options(rehearse_mutant_${name} PRIVATE -O0 -g0)
  add_executable(rehearse_mutant_${name}_cli $<TARGET_OBJECTS:rehearse_mutant_${name}>
                                             $<TARGET_OBJECTS:rehearse_mutant_cli>)
  target_link_libraries(rehearse_mutant_${name}_cli PRIVATE ${_rm_sim_lib})
  # A mutant is judged by the invariants, never debugged from its binary: the
  # base tree's debug info would make each link write 200 MB and take twice as long.
  target_link_options(rehearse_mutant_${name}_cli PRIVATE -Wl,--strip-debug)
  set_target_properties(rehearse_mutant_${name}_cli PROPERTIES
    OUTPUT_NAME rehearse RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/mutants/bin/${name})
  set_property(GLOBAL APPEND PROPERTY REHEARSE_MUTANT_TARGETS rehearse_mutant_${name}_cli)
endfunction()

string(JSON _rm_count LENGTH "${_rm_table}" mutants)
math(EXPR _rm_last "${_rm_count} - 1")
foreach(i RANGE ${_rm_last})
  string(JSON _rm_name GET "${_rm_table}" mutants ${i} name)
  string(JSON _rm_patch GET "${_rm_table}" mutants ${i} patch)
  if(NOT _rm_name MATCHES "^[a-z0-9_]+$")
    message(FATAL_ERROR "tests/mutants/mutants.json: mutant name '${_rm_name}' (lower case, "
                        "digits and _ only)")
  endif()
  _rm_add_mutant(${_rm_name} ${_rm_patch})
endforeach()

get_property(_rm_targets GLOBAL PROPERTY REHEARSE_MUTANT_TARGETS)
add_custom_target(rehearse_mutants ALL DEPENDS ${_rm_targets})

# The kill matrix (LABELS mutants): every mutant against the bundled
# scenarios (and a bounded swarm when `rehearse check` exists); the
# production `rehearse` of this build must pass them and carry no mutant.
if(REHEARSE_MUTANTS_BASE)
  set(_rm_production_files ${_rm_base_model} ${_rm_base_sim})
else()
  set(_rm_production_files $<TARGET_FILE:rehearse_model> $<TARGET_FILE:rehearse_sim>)
endif()
set(_rm_production_args "")
foreach(f IN LISTS _rm_production_files)
  list(APPEND _rm_production_args --production-file ${f})
endforeach()
if(TARGET rehearse OR REHEARSE_MUTANTS_BASE)
  enable_testing()
  set(REHEARSE_MUTANTS_SWARM_SEEDS 0 CACHE STRING
      "Seeds per scenario of the kill matrix's swarm (0: scenarios only)")
  set(REHEARSE_MUTANTS_ONLY "" CACHE STRING
      "Comma-separated mutant names the kill matrix runs (empty: all)")
  option(REHEARSE_MUTANTS_FIRST_KILL
         "Judge each mutant first on the scenarios that killed it last time (its killed_on)" OFF)
  set(_rm_first_kill "")
  if(REHEARSE_MUTANTS_FIRST_KILL)
    set(_rm_first_kill --first-kill)
  endif()
  add_test(NAME mutants_kill_matrix
           COMMAND python3 ${REHEARSE_MUTANTS_DIR}/kill_matrix.py
                   --table ${REHEARSE_MUTANTS_TABLE}
                   --bin-dir ${CMAKE_BINARY_DIR}/tests/mutants/bin
                   --rehearse ${_rm_production}
                   ${_rm_production_args}
                   --scenarios ${PROJECT_SOURCE_DIR}/scenarios
                   --seeds ${REHEARSE_MUTANTS_SWARM_SEEDS}
                   --only "${REHEARSE_MUTANTS_ONLY}"
                   ${_rm_first_kill}
                   --jobs 2)
  set_tests_properties(mutants_kill_matrix PROPERTIES LABELS mutants TIMEOUT 3600)
endif()
