// Helpers for tests of the billing readers: fixture files and cost-line cells.
#ifndef GPUCOST_TESTS_CPP_TESTING_BILLING_LINES_H_
#define GPUCOST_TESTS_CPP_TESTING_BILLING_LINES_H_

#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "gpucost/columns.h"
#include "gtest/gtest.h"

namespace gpucost::testing {

// The bytes of tests/data/billing/`name` (a failure when it is missing or empty).
inline std::string BillingFixture(const std::string& name) {
  std::ifstream in(std::string(GPUCOST_TEST_DATA_DIR) + "/billing/" + name, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  EXPECT_FALSE(buffer.str().empty()) << name;
  return buffer.str();
}

inline double Sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

// The string of column `column` on line `i` ("<null>" for null).
inline std::string At(const EncodedStrings& column, size_t i) {
  const int32_t code = column.codes[i];
  return code == kNullCode ? "<null>" : column.values[code];
}

}  // namespace gpucost::testing

#endif  // GPUCOST_TESTS_CPP_TESTING_BILLING_LINES_H_
