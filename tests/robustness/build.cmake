# Configures and builds gpucost in a build folder of its own, for the
# sanitizer and fuzzing tests (tests/robustness/CMakeLists.txt). Incremental:
# a second run rebuilds only what changed.
#   cmake -DSOURCE_DIR=... -DBUILD_DIR=... -DGENERATOR=... [-DMAKE_PROGRAM=...]
#         [-DCXX=<compiler>] -DBUILD_TYPE=Debug -DSANITIZE=address,undefined
#         -DFUZZERS=OFF -DTESTS=ON -DTARGETS=gpucost_tests[,target...] [-DWERROR=OFF]
#         [-DFLAGS="-O1 -g1"] -P build.cmake
# (FLAGS replaces the build type's optimisation and debug flags.)
# (TARGETS is comma-separated: a semicolon would split the ctest command.)
if(NOT DEFINED WERROR)
  set(WERROR ON)
endif()
set(_args -S ${SOURCE_DIR} -B ${BUILD_DIR} -G ${GENERATOR} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
  -DGPUCOST_SANITIZE=${SANITIZE} -DGPUCOST_BUILD_FUZZERS=${FUZZERS} -DGPUCOST_BUILD_TESTS=${TESTS}
  -DGPUCOST_INSTALL=OFF -DGPUCOST_DEVELOPMENT_CHECKS=ON -DGPUCOST_WERROR=${WERROR})
if(MAKE_PROGRAM)
  list(APPEND _args -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()
if(CXX)
  list(APPEND _args -DCMAKE_CXX_COMPILER=${CXX})
endif()
if(DEFINED FLAGS)
  string(TOUPPER ${BUILD_TYPE} _type)
  list(APPEND _args "-DCMAKE_CXX_FLAGS_${_type}=${FLAGS} -DNDEBUG")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} ${_args} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "configuring ${BUILD_DIR} failed:\n${_out}")
endif()
set(_build ${CMAKE_COMMAND} --build ${BUILD_DIR} -j 2)
string(REPLACE "," ";" _targets "${TARGETS}")
foreach(_target ${_targets})
  list(APPEND _build --target ${_target})
endforeach()
execute_process(COMMAND ${_build} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "building ${BUILD_DIR} failed:\n${_out}")
endif()
