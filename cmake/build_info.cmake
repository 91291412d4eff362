# SPDX-License-Identifier: Apache-2.0
# Writes OUTPUT, the C++ definition of the commit and day a `gpuq` binary was built from
# (src/app/build_info.h), at every build of gpuq, but rewrites the file only when its text
# changes, so a build with nothing new compiles and links nothing.
#   cmake -DSOURCE_DIR=... -DOUTPUT=... -P cmake/build_info.cmake
# The commit is git's (12 hex digits, "-dirty" when tracked files differ from it), or "unknown"
# outside a git checkout (an unpacked source archive). The day is UTC, or SOURCE_DATE_EPOCH's
# when it is set (reproducible builds): string(TIMESTAMP) reads it.
set(commit "unknown")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE head_failed ERROR_QUIET)
  if(NOT head_failed AND head)
    set(commit "${head}")
    execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" diff --quiet HEAD --
                    RESULT_VARIABLE dirty ERROR_QUIET)
    if(dirty)
      set(commit "${commit}-dirty")
    endif()
  endif()
endif()
string(TIMESTAMP day "%Y-%m-%d" UTC)
set(text "// Written by cmake/build_info.cmake at build time; not in the source tree.
#include \"app/build_info.h\"

namespace gpuq::app {
const char* const kBuildCommit = \"${commit}\";
const char* const kBuildDate = \"${day}\";
}  // namespace gpuq::app
")
set(old "")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUTPUT}" "${text}")
endif()
