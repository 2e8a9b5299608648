// The CHECK macros of the API examples (docs/examples/cpp/api/): a failed
// check prints the file, the line and the expression and exits 1, so ctest
// (cpp_example_*) fails naming it. Not part of the library.
#ifndef GPUCOST_EXAMPLES_CPP_API_EXAMPLE_CHECK_H_
#define GPUCOST_EXAMPLES_CPP_API_EXAMPLE_CHECK_H_

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/status/status.h"

// CHECK(x): x is true.
#define CHECK(expr)                                                              \
  do {                                                                           \
    if (!(expr)) {                                                               \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #expr); \
      std::exit(1);                                                              \
    }                                                                            \
  } while (false)

// CHECK_OK(s): an absl::Status or absl::StatusOr is OK (prints the error if not).
#define CHECK_OK(expr)                                                                     \
  do {                                                                                     \
    const ::absl::Status example_status_ = ::examples::StatusOf(expr);                     \
    if (!example_status_.ok()) {                                                           \
      std::fprintf(stderr, "%s:%d: CHECK_OK failed: %s\n  %s\n", __FILE__, __LINE__, #expr, \
                   example_status_.ToString().c_str());                                   \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (false)

// CHECK_NEAR(a, b): |a - b| <= 1e-9 * max(1, |b|).
#define CHECK_NEAR(a, b) CHECK(std::abs((a) - (b)) <= 1e-9 * std::fmax(1.0, std::abs(b)))

namespace examples {
inline absl::Status StatusOf(const absl::Status& status) { return status; }
template <typename T>
absl::Status StatusOf(const T& status_or) {
  return status_or.status();
}
}  // namespace examples

#endif  // GPUCOST_EXAMPLES_CPP_API_EXAMPLE_CHECK_H_
