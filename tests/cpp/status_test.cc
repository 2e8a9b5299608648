// The error builders of status.h: one message format, and the location they
// attach (GetErrorLocation) that the Python bindings turn into
// gpucost.InvalidInputError's fields.
#include "gpucost/status.h"

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gpucost/io/billing.h"
#include "gpucost/io/focus.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace gpucost {
namespace {

using ::gpucost::testing::StatusIs;

TEST(ErrorLocation, RowError) {
  const absl::Status status = RowError("usage", 17, "share", "1.5 is outside (0, 1]");
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument,
                               "usage: row 17, column 'share': 1.5 is outside (0, 1]"));
  const std::optional<ErrorLocation> at = GetErrorLocation(status);
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->table, "usage");
  EXPECT_EQ(at->row, 17);
  EXPECT_EQ(at->line, std::nullopt);
  EXPECT_EQ(at->column, "share");
  EXPECT_EQ(at->parameter, std::nullopt);
  EXPECT_EQ(at->reason, "1.5 is outside (0, 1]");
}

TEST(ErrorLocation, LineError) {
  const absl::Status status = LineError("bill.csv", 12, "BilledCost", "'abc' is not a number");
  EXPECT_EQ(status.message(), "bill.csv: line 12, column 'BilledCost': 'abc' is not a number");
  const std::optional<ErrorLocation> at = GetErrorLocation(status);
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->table, "bill.csv");
  EXPECT_EQ(at->row, std::nullopt);
  EXPECT_EQ(at->line, 12);
  EXPECT_EQ(at->column, "BilledCost");
  EXPECT_EQ(at->reason, "'abc' is not a number");
}

TEST(ErrorLocation, TableAndParameterErrors) {
  const absl::Status table = TableError("costs", "missing required column 'cost'");
  EXPECT_EQ(table.message(), "costs: missing required column 'cost'");
  std::optional<ErrorLocation> at = GetErrorLocation(table);
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->table, "costs");
  EXPECT_EQ(at->row, std::nullopt);
  EXPECT_EQ(at->column, std::nullopt);
  EXPECT_EQ(at->reason, "missing required column 'cost'");

  const absl::Status parameter = ParameterError("alpha", "1.5 is outside [0, 1]");
  EXPECT_EQ(parameter.message(), "parameter 'alpha': 1.5 is outside [0, 1]");
  at = GetErrorLocation(parameter);
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->table, std::nullopt);
  EXPECT_EQ(at->parameter, "alpha");
  EXPECT_EQ(at->reason, "1.5 is outside [0, 1]");
}

TEST(ErrorLocation, NamesComeBackAsTheyWentIn) {
  const std::string column("it's: a\0column", 14);
  const std::optional<ErrorLocation> at = GetErrorLocation(RowError("t", -1, column, ""));
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->column, column);
  EXPECT_EQ(at->row, -1);
  EXPECT_EQ(at->reason, "");
}

TEST(ErrorLocation, TravelsWithCopiesNotWithRebuiltMessages) {
  absl::StatusOr<int> failed = RowError("usage", 3, "device", "-1 is negative");
  const absl::Status copy = failed.status();
  EXPECT_EQ(GetErrorLocation(copy)->row, 3);
  const absl::Status rebuilt = absl::InvalidArgumentError(std::string("wrapped: ") + std::string(copy.message()));
  EXPECT_EQ(GetErrorLocation(rebuilt), std::nullopt);
  EXPECT_EQ(GetErrorLocation(absl::OkStatus()), std::nullopt);
  EXPECT_EQ(GetErrorLocation(absl::InvalidArgumentError("usage: row 3, column 'device': -1")), std::nullopt);
}

TEST(ErrorLocation, FromAParser) {
  io::BillingOptions options;
  options.source = "bill.csv";
  const absl::StatusOr<io::CostLines> lines =
      io::ReadFocusCsv("ChargePeriodStart,ChargePeriodEnd,BilledCost,EffectiveCost,ResourceId\n"
                       "2025-03-01T10:00:00Z,2025-03-01T11:00:00Z,1,1,i-1\n"
                       "2025-03-01T10:00:00Z,2025-03-01T11:00:00Z,1,abc,i-1\n",
                       options);
  ASSERT_THAT(lines, StatusIs(absl::StatusCode::kInvalidArgument,
                              "bill.csv: line 3, column 'EffectiveCost': 'abc' is not a number"));
  const std::optional<ErrorLocation> at = GetErrorLocation(lines.status());
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->table, "bill.csv");
  EXPECT_EQ(at->line, 3);
  EXPECT_EQ(at->column, "EffectiveCost");
  EXPECT_EQ(at->reason, "'abc' is not a number");
}

}  // namespace
}  // namespace gpucost
