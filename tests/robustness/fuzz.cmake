# Runs one libFuzzer target (tests/robustness/CMakeLists.txt, `make fuzz`).
#   cmake -DFUZZER=<binary> -DNAME=<name> -DSOURCE_DIR=... -DWORK_DIR=... -DRUNS=300000 -P fuzz.cmake
#   cmake ... -DSECONDS=600 -P fuzz.cmake
# 1. Replays every input in fuzz/regressions/<name>/ (inputs that once failed).
# 2. Fuzzes from the seed corpus fuzz/corpus/<name>/, writing new inputs to
#    WORK_DIR only, so the repository stays clean. Two modes:
#    - RUNS (ctest, `make test`): a fixed seed, a fresh work corpus and a fixed
#      number of inputs, so CI tries (nearly) the same inputs on every run,
#      not a random draw (docs/decisions.md).
#    - SECONDS (`make fuzz`): a random seed for that long, the work corpus kept
#      between runs: exploration, which finds what the fixed runs cannot.
# A failing input is left in WORK_DIR/<name>/crashes/: copy it into
# fuzz/regressions/<name>/, fix the bug and commit both.
set(_regressions ${SOURCE_DIR}/fuzz/regressions/${NAME})
set(_seeds ${SOURCE_DIR}/fuzz/corpus/${NAME})
set(_work ${WORK_DIR}/${NAME})
file(MAKE_DIRECTORY ${_work}/corpus ${_work}/crashes ${_seeds})
set(ENV{ASAN_OPTIONS} "detect_leaks=1:abort_on_error=0")
set(ENV{UBSAN_OPTIONS} "print_stacktrace=1:halt_on_error=1")

file(GLOB _inputs ${_regressions}/*)
list(FILTER _inputs EXCLUDE REGEX "README")
if(_inputs)
  execute_process(COMMAND ${FUZZER} ${_inputs} RESULT_VARIABLE _rc OUTPUT_VARIABLE _log ERROR_VARIABLE _log)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${NAME}: a regression input fails again:\n${_log}")
  endif()
  list(LENGTH _inputs _count)
  message(STATUS "${NAME}: ${_count} regression inputs pass")
endif()

set(_corpus ${_work}/corpus)
if(DEFINED RUNS)
  set(_corpus ${_work}/fixed-run-corpus)  # emptied: the explored corpus is kept apart
  file(REMOVE_RECURSE ${_corpus})
  file(MAKE_DIRECTORY ${_corpus})
  # The time cap guards a machine far slower than ours (CI's, 2026-11-27, ran
  # 12 times slower): what it cuts is a prefix of the same deterministic
  # sequence.
  set(_budget -seed=1 -runs=${RUNS} -max_total_time=60)
  set(_what "${RUNS} inputs from seed 1")
else()
  set(_budget -max_total_time=${SECONDS})
  set(_what "${SECONDS} s")
endif()
execute_process(
  COMMAND ${FUZZER} ${_budget} -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
          -artifact_prefix=${_work}/crashes/ ${_corpus} ${_seeds}
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _log ERROR_VARIABLE _log)
file(WRITE ${_work}/fuzz.log "${_log}")
if(NOT _rc EQUAL 0)
  file(GLOB _crashes ${_work}/crashes/*)
  string(LENGTH "${_log}" _length)
  math(EXPR _from "${_length} - 4000")
  if(_from LESS 0)
    set(_from 0)
  endif()
  string(SUBSTRING "${_log}" ${_from} -1 _tail)
  message(FATAL_ERROR "${NAME}: libFuzzer found a failing input: ${_crashes}\n"
                      "Copy it into fuzz/regressions/${NAME}/, fix the bug, commit both.\n${_tail}")
endif()
string(REGEX MATCH "stat::number_of_executed_units: *[0-9]+" _runs "${_log}")
message(STATUS "${NAME}: no failure in ${_what} (${_runs})")
