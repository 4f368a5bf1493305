# Layers (docs/layers.md, "Layers"): each folder of sim/ is a build
# target that may use only the folders below it. A target's sources are
# checked before it compiles (cmake/RehearseLayerCheck.cmake), so an include
# that goes up a layer fails the build, naming the line.
set(REHEARSE_LAYER_CHECK_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/RehearseLayerCheck.cmake)

# rehearse_layer_check(TARGET FOLDER [BELOW folder...]): FOLDER's sources may
# include from FOLDER itself and the BELOW folders (paths from the project root).
function(rehearse_layer_check target folder)
  cmake_parse_arguments(ARG "" "" "BELOW" ${ARGN})
  set(allowed ${folder} ${ARG_BELOW})
  list(JOIN allowed "," allowed_arg)
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${folder}/*.cpp
       ${PROJECT_SOURCE_DIR}/${folder}/*.hpp)
  string(MAKE_C_IDENTIFIER "${folder}" name)
  set(stamp ${CMAKE_CURRENT_BINARY_DIR}/${name}.layer.stamp)
  set(script ${REHEARSE_LAYER_CHECK_SCRIPT})
  add_custom_command(OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DLAYER=${folder} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}/${folder}
            -DALLOWED=${allowed_arg} -DSTAMP=${stamp} -P ${script}
    DEPENDS ${sources} ${script}
    COMMENT "Checking that ${folder} includes only from ${allowed_arg}"
    VERBATIM)
  add_custom_target(${target}_layer_check DEPENDS ${stamp})
  add_dependencies(${target} ${target}_layer_check)
endfunction()

# rehearse_sim_layer(NAME [BELOW layer...]): sim/NAME as the object library
# rehearse_sim_NAME, over rehearse::model and the BELOW layers of sim/.
function(rehearse_sim_layer name)
  cmake_parse_arguments(ARG "" "" "BELOW" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${name}/*.cpp
       ${CMAKE_CURRENT_SOURCE_DIR}/${name}/*.hpp)
  set(target rehearse_sim_${name})
  add_library(${target} OBJECT ${sources})
  set(below_targets "")
  set(below_folders model)
  foreach(layer IN LISTS ARG_BELOW)
    list(APPEND below_targets rehearse_sim_${layer})
    list(APPEND below_folders sim/${layer})
  endforeach()
  target_link_libraries(${target} PUBLIC rehearse::model ${below_targets})
  rehearse_set_warnings(${target})
  if(REHEARSE_PCH)
    if(TARGET rehearse_sim_kernel AND NOT name STREQUAL "kernel")
      target_precompile_headers(${target} REUSE_FROM rehearse_sim_kernel)
    else()
      rehearse_use_pch(${target})
    endif()
  endif()
  rehearse_layer_check(${target} sim/${name} BELOW ${below_folders})
endfunction()
