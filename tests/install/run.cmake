# The installed package is relocatable: installs the build tree into one
# prefix, moves it to another, then builds tests/install there twice, with
# find_package(gpucost CONFIG) and with pkg-config, and runs both; then
# builds the showback example against it and checks its tables.
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

# The showback example (docs/examples/cpp/showback, walked through in
# docs/cpp.md), built against the moved prefix and run on its sample data
# from its own folder (the paths it prints are relative). The tables are
# computed by hand (the example's README.md draws the scrapes):
#   g5.12xlarge i-...0001: 5.672 for the hour, 4 GPUs: 1.418 a GPU-hour.
#     GPUs 0 and 1: ml/llm-finetune-0, 4 scrapes x 15 min each: 2 GPU-h, 2.836
#     GPU 2: serving/chat-...: 1 GPU-h, 1.418
#     GPU 3: research/nb-alice at 10:00 and 10:15 (0.5 GPU-h, 0.709), free at
#            10:30 and 10:45 (0.5 GPU-h held by nobody: idle, 0.709)
#   g5.xlarge i-...0002: 1.006, one GPU time-sliced by two pods at every
#     scrape, share 1/2 each: serving/embed-... and research/nb-bob 0.5 GPU-h,
#     0.503 each
#   by namespace: ml 2.836 (2 h); research 0.709 + 0.503 = 1.212 (0.5 + 0.5 h);
#     serving 1.418 + 0.503 = 1.921 (1 + 0.5 h); __idle__ 0.709 (0.5 h).
#   total 6.678 = 5.672 + 1.006, the bill's two GPU lines (the volume's 0.011
#     and the tax's 0.40 are not GPU cost); 5 GPU-hours = 4 + 1 GPUs x 1 h.
set(showback ${SOURCE_DIR}/docs/examples/cpp/showback)
run(${CMAKE_COMMAND} -S ${showback} -B ${WORK_DIR}/showback -G ${GENERATOR}
  -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/showback)
set(nodes --node ip-10-0-1-17.us-west-2.compute.internal=i-0c5e8a1f2b3d40001
  --node ip-10-0-2-33.us-west-2.compute.internal=i-0c5e8a1f2b3d40002)
function(showback expected_rc expected)
  execute_process(COMMAND ${WORK_DIR}/showback/showback ${ARGN} WORKING_DIRECTORY ${showback}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  list(JOIN ARGN " " command)
  if(NOT rc STREQUAL expected_rc OR NOT out STREQUAL expected)
    # STATUS prints the tables as they are (FATAL_ERROR reflows its text).
    message(STATUS "stdout:\n${out}\nexpected:\n${expected}\nstderr:\n${err}")
    message(FATAL_ERROR "showback ${command}: exit ${rc} (expected ${expected_rc}), or stdout not as expected (above)")
  endif()
  message(STATUS "showback ${command}:\n${out}${err}")
  set(stderr "${err}" PARENT_SCOPE)
endfunction()
set(footer "\nlines unobserved (no scrape of their node): 0; samples of nodes not on the bill: 0\n")
# The CUR 2.0 bill, its format told by its header; by namespace, idle kept.
set(table [=[
namespace         currency          cost  gpu_hours    idle_cost
__idle__          USD             0.7090       0.50       0.7090
ml                USD             2.8360       2.00       0.0000
research          USD             1.2120       1.00       0.0000
serving           USD             1.9210       1.50       0.0000
total             USD             6.6780       5.00       0.7090
]=])
showback(0 "data/cur2.csv: 4 lines, 2 of GPU instances (5 GPUs); 24 scrape samples\n\n${table}${footer}"
  --bill data/cur2.csv ${nodes} data/dcgm)
# The same hour as FOCUS, by pod: the same money, each pod's part above.
set(table [=[
pod                    currency          cost  gpu_hours    idle_cost
__idle__               USD             0.7090       0.50       0.7090
chat-5d8f7c9b4-q2xkz   USD             1.4180       1.00       0.0000
embed-6c4b9d7f8-x7mpl  USD             0.5030       0.50       0.0000
llm-finetune-0         USD             2.8360       2.00       0.0000
nb-alice               USD             0.7090       0.50       0.0000
nb-bob                 USD             0.5030       0.50       0.0000
total                  USD             6.6780       5.00       0.7090
]=])
showback(0 "data/focus.csv: 4 lines, 2 of GPU instances (5 GPUs); 24 scrape samples\n\n${table}${footer}"
  --bill data/focus.csv --format focus --by pod ${nodes} data/dcgm)
# An error is the library's message and exit status 1, no table: a node the
# --node table lacks.
showback(1 "" --bill data/cur2.csv --node ip-10-0-1-17.us-west-2.compute.internal=i-0c5e8a1f2b3d40001 data/dcgm)
if(NOT stderr MATCHES "node 'ip-10-0-2-33.us-west-2.compute.internal' is not in the nodes table")
  message(FATAL_ERROR "showback: the unknown node's error is not the library's:\n${stderr}")
endif()

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
