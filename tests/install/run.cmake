# The installed package is relocatable: installs the build tree into one
# prefix, moves it to another, then builds tests/install there twice, with
# find_package(gpucost CONFIG) and with pkg-config, and runs both.
file(REMOVE_RECURSE ${WORK_DIR})
set(first ${WORK_DIR}/installed-here)
set(prefix ${WORK_DIR}/moved/elsewhere)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${first}
  RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "cmake --install failed: ${rc}")
endif()
file(MAKE_DIRECTORY ${WORK_DIR}/moved)
file(RENAME ${first} ${prefix})
# Nothing installed may name the first prefix or the build tree.
file(GLOB_RECURSE installed ${prefix}/*.cmake ${prefix}/*.pc)
foreach(f IN LISTS installed)
  file(READ ${f} text)
  foreach(path IN ITEMS ${first} ${BUILD_DIR} ${SOURCE_DIR})
    string(FIND "${text}" "${path}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${f} names ${path}: the installed package is not relocatable")
    endif()
  endforeach()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
  message(STATUS "${out}")
endfunction()

# CMake consumer.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install -B ${WORK_DIR}/build -G ${GENERATOR}
  -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/consumer)

# pkg-config consumer: one compiler line from gpucost.pc.
find_program(PKG_CONFIG pkg-config REQUIRED)
file(GLOB pc_dirs ${prefix}/lib*/pkgconfig ${prefix}/lib/*/pkgconfig)
list(JOIN pc_dirs ":" pc_path)
set(ENV{PKG_CONFIG_PATH} "${pc_path}")
execute_process(COMMAND ${PKG_CONFIG} --modversion gpucost OUTPUT_VARIABLE version
  OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs gpucost OUTPUT_VARIABLE flags
  OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc2)
if(rc OR rc2)
  message(FATAL_ERROR "pkg-config does not find gpucost.pc in ${pc_path}")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
run(${CXX} -O1 "-DEXPECTED_VERSION=\"${version}\"" ${SOURCE_DIR}/tests/install/main.cc ${flags}
  -o ${WORK_DIR}/consumer-pkgconfig)
run(${WORK_DIR}/consumer-pkgconfig)
