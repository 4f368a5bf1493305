# The include check of one layer (cmake -P; cmake/RehearseLayers.cmake runs it
# as a step of the layer's build). Every quoted include of the .cpp and .hpp
# files in SOURCE_DIR must start with one of the folders in ALLOWED: the
# layer's own and those below it. Anything else fails the build, naming the
# file, the line and what the layer may include.
#
#   cmake -DLAYER=sim/world -DSOURCE_DIR=<dir> -DALLOWED=model,sim/kernel,sim/world
#         [-DSTAMP=<file>] -P RehearseLayerCheck.cmake
foreach(var IN ITEMS LAYER SOURCE_DIR ALLOWED)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "RehearseLayerCheck.cmake: -D${var}=... is required")
  endif()
endforeach()
string(REPLACE "," ";" allowed "${ALLOWED}")
file(GLOB files ${SOURCE_DIR}/*.cpp ${SOURCE_DIR}/*.hpp)
if(NOT files)
  message(FATAL_ERROR "layer ${LAYER}: no .cpp or .hpp file in ${SOURCE_DIR}")
endif()

set(problems "")
foreach(file IN LISTS files)
  file(READ ${file} text)
  # One list element per line: what a CMake list would read as a separator, an
  # escape or a bracket is neutralised first (includes hold none of these).
  string(REPLACE ";" "," text "${text}")
  string(REPLACE "\\" "/" text "${text}")
  string(REPLACE "[" "(" text "${text}")
  string(REPLACE "]" ")" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(number 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    if(NOT line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\"")
      continue()
    endif()
    set(included ${CMAKE_MATCH_1})
    set(ok FALSE)
    foreach(folder IN LISTS allowed)
      string(LENGTH "${folder}/" length)
      string(SUBSTRING "${included}" 0 ${length} head)
      if(head STREQUAL "${folder}/")
        set(ok TRUE)
      endif()
    endforeach()
    if(NOT ok)
      string(APPEND problems "\n  ${file}:${number}: includes \"${included}\"")
    endif()
  endforeach()
endforeach()

if(problems)
  string(REPLACE ";" ", " allowed_words "${allowed}")
  message(FATAL_ERROR "layer ${LAYER} includes from a layer above it or beside it:${problems}\n"
                      "  ${LAYER} may include only from: ${allowed_words} "
                      "(docs/layers.md, \"Layers\")")
endif()
if(DEFINED STAMP)
  file(WRITE ${STAMP} "")
endif()
