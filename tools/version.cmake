# Writes the version header (memra_version.h) with the current git commit. Run by CMake at
# configure time and again at every build (target memra_version), so `memra --version` names the
# commit that was built, not the one that was configured. configure_file() leaves the header
# untouched when the commit did not change, so an unchanged tree rebuilds nothing.
#   cmake -DSOURCE_DIR=... -DVERSION_IN=... -DVERSION_OUT=... -DPROJECT_VERSION=... -P tools/version.cmake
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE MEMRA_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT MEMRA_GIT_COMMIT)
  set(MEMRA_GIT_COMMIT "unknown")
endif()
configure_file(${VERSION_IN} ${VERSION_OUT} @ONLY)
