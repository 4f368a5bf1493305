# Applies one mutant's patch to fresh copies of the model files it names
# (called by cmake/RehearseMutants.cmake at build time):
#   cmake -DNAME=.. -DPATCH=.. -DSOURCE_DIR=.. -DOUT_DIR=.. -DFILES=a,b -P this
# No fuzz: a hunk must match its context exactly (line offsets are fine), so
# a patch written against an older core fails instead of landing elsewhere.
string(REPLACE "," ";" files "${FILES}")
file(REMOVE_RECURSE ${OUT_DIR}/model)
foreach(f IN LISTS files)
  get_filename_component(dir ${OUT_DIR}/${f} DIRECTORY)
  file(MAKE_DIRECTORY ${dir})
  file(COPY_FILE ${SOURCE_DIR}/${f} ${OUT_DIR}/${f})
endforeach()
find_program(PATCH_EXE patch)
if(NOT PATCH_EXE)
  message(FATAL_ERROR "mutant ${NAME}: the `patch` program is needed to build mutants "
                      "(Debian package patch)")
endif()
execute_process(
  COMMAND ${PATCH_EXE} -p1 --batch --forward --fuzz=0 --no-backup-if-mismatch
          --reject-file=- -d ${OUT_DIR} -i ${PATCH}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  file(REMOVE_RECURSE ${OUT_DIR}/model)
  message(FATAL_ERROR
          "mutant ${NAME}: ${PATCH} no longer applies to ${files} of this tree: the core "
          "changed since the mutant was written. Re-create the bug on the current file and "
          "regenerate the patch (docs/mutants.md, \"Updating a patch\").\n${out}${err}")
endif()
