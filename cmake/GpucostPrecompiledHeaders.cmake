# Precompiled headers for gpucost's own targets (never for embedding projects:
# PRIVATE). Parsing the standard library and Abseil took about a third of
# each source file's compile time, and GoogleTest or pybind11 as much again
# (docs/decisions.md, "make test on a slow machine"); every build folder that make
# test fills (the package, the wheel, the tests, the sanitizer and fuzzing
# builds) pays it once per target instead of once per file.
option(GPUCOST_PRECOMPILE_HEADERS "Precompile the standard, Abseil, GoogleTest and pybind11 headers" ON)

set(GPUCOST_COMMON_HEADERS <algorithm> <cmath> <cstdint> <limits> <memory> <optional> <span> <string>
  <string_view> <utility> <vector> <absl/status/statusor.h> <absl/container/flat_hash_map.h>
  <absl/strings/str_cat.h>)

# gpucost_precompile_headers(target [header...]): the target's own heavy
# headers first (pybind11 must come before any standard header), then the
# common ones.
function(gpucost_precompile_headers target)
  if(GPUCOST_PRECOMPILE_HEADERS)
    target_precompile_headers(${target} PRIVATE ${ARGN} ${GPUCOST_COMMON_HEADERS})
  endif()
endfunction()

# gpucost_reuse_precompiled_headers(target donor): small programs built with
# the same flags (the C++ API examples, the fuzzers) share one donor's.
function(gpucost_reuse_precompiled_headers target donor)
  if(GPUCOST_PRECOMPILE_HEADERS)
    target_precompile_headers(${target} REUSE_FROM ${donor})
  endif()
endfunction()
