// Status matchers in the spirit of Abseil's status_matchers.h (absent from
// Debian's Abseil 20220623). There is deliberately no EXPECT_NOT_OK: tests
// assert the specific code and message.
#ifndef GPUCOST_TESTS_TESTING_STATUS_MATCHERS_H_
#define GPUCOST_TESTS_TESTING_STATUS_MATCHERS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace gpucost::testing {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) { return s.status(); }

MATCHER(IsOk, "is OK") {
  const absl::Status& s = GetStatus(arg);
  if (!s.ok()) *result_listener << "status: " << s.ToString();
  return s.ok();
}

MATCHER_P2(StatusIs, code, message_matcher,
           "has code " + absl::StatusCodeToString(code)) {
  const absl::Status& s = GetStatus(arg);
  *result_listener << "status: " << s.ToString();
  return s.code() == code &&
         ::testing::Matches(message_matcher)(std::string(s.message()));
}

}  // namespace gpucost::testing

#define GPUCOST_ASSERT_OK_AND_ASSIGN(lhs, expr)                          \
  auto GPUCOST_STATUS_CONCAT_(gpucost_test_, __LINE__) = (expr);         \
  ASSERT_TRUE(GPUCOST_STATUS_CONCAT_(gpucost_test_, __LINE__).ok())      \
      << GPUCOST_STATUS_CONCAT_(gpucost_test_, __LINE__).status();       \
  lhs = std::move(GPUCOST_STATUS_CONCAT_(gpucost_test_, __LINE__)).value()

#endif  // GPUCOST_TESTS_TESTING_STATUS_MATCHERS_H_
