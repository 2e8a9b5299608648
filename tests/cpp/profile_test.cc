#include "gpucost/analyses/profile.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"
#include "testing/tables.h"

namespace gpucost {
namespace {

using ::gpucost::testing::At;
using ::gpucost::testing::InventoryTable;
using ::gpucost::testing::kGiB;
using ::gpucost::testing::SampleTable;
using ::gpucost::testing::StatusIs;
using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

int RowOf(const UsageProfile& p, const std::string& consumer, int64_t period = 0) {
  for (size_t i = 0; i < p.size(); ++i) {
    if (p.consumer_names[p.consumer[i]] == consumer && p.period[i] == period) return static_cast<int>(i);
  }
  return -1;
}

TEST(Profile, HeldUsedMemoryPressureAndFieldsPerDay) {
  InventoryTable inventory;
  inventory.AddResource("i-1", 1, 40 * kGiB);
  SampleTable samples;
  // A 3/7 MIG slice from 23:00 to 01:00, 16 GiB used: pressure, since its
  // part of the device is 3/7 * 40 = 17.1 GiB and 16 >= 0.85 * 17.1.
  samples.AddSeries(At(23), At(25), "i-1", 0, "mig", 3.0 / 7, 0.5, 16 * kGiB);
  // A whole-GPU pod on a device of a resource the inventory lacks.
  samples.AddSeries(At(1), At(2), "i-x", 0, "ghost", 1.0, 0.5, kGiB);
  samples.AddSeries(At(1), At(2), "i-1", 0, "", 1.0, 0.0, 0.0);
  std::vector<double> tensor(samples.timestamp.size(), 0.25);
  tensor[0] = kNaN;  // not reported
  tensor[1] = 0.75;
  std::vector<ProfileField> fields = {{"tensor_active", tensor}};
  ProfileOptions options;
  options.freq = PeriodFreq::kDay;
  GPUCOST_ASSERT_OK_AND_ASSIGN(UsageProfile p, ProfileUsage(samples.columns(), inventory.columns(), fields, options));
  ASSERT_EQ(p.size(), 2u);  // mig on day 0 and day 1
  EXPECT_EQ(p.samples_no_consumer, 60);
  EXPECT_EQ(p.samples_unknown_resource, 60);
  const int day0 = RowOf(p, "mig", At(0));
  const int day1 = RowOf(p, "mig", At(24));
  ASSERT_GE(day0, 0);
  ASSERT_GE(day1, 0);
  EXPECT_EQ(p.samples[day0], 60);
  EXPECT_DOUBLE_EQ(p.held_ns[day0], 3.0 / 7 * kNanosPerHour);
  EXPECT_DOUBLE_EQ(p.used_ns[day0], 0.5 * 3.0 / 7 * kNanosPerHour);
  EXPECT_DOUBLE_EQ(p.mem_peak[day0], 16 * kGiB);
  EXPECT_DOUBLE_EQ(p.mem_capacity[day0], 40 * kGiB);
  EXPECT_DOUBLE_EQ(p.mem_pressure_ns[day0], p.held_ns[day0]);
  EXPECT_EQ(p.first[day0], At(23));
  EXPECT_EQ(p.last[day0], At(24));
  // 59 reported values on day 0 (one NaN): one at 0.75, 58 at 0.25.
  const double w = 3.0 / 7 * 60 * kNanosPerSecond;
  EXPECT_NEAR(p.field_weight[0][day0], 59 * w, 1e-3);
  EXPECT_NEAR(p.field_sum[0][day0] / p.field_weight[0][day0], (0.75 + 58 * 0.25) / 59, 1e-12);
  EXPECT_DOUBLE_EQ(p.field_max[0][day0], 0.75);
  EXPECT_DOUBLE_EQ(p.field_max[0][day1], 0.25);
}

TEST(Profile, BadFieldValueNamesRowAndColumn) {
  InventoryTable inventory;
  inventory.AddResource("i-1", 1);
  SampleTable samples;
  samples.AddSeries(At(0), At(1), "i-1", 0, "a", 1.0, 0.5, 0.0);
  std::vector<double> power(samples.timestamp.size(), 100.0);
  power[9] = std::numeric_limits<double>::infinity();
  std::vector<ProfileField> fields = {{"power_w", power}};
  EXPECT_THAT(ProfileUsage(samples.columns(), inventory.columns(), fields, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("usage: row 9, column 'power_w'")));
  std::vector<double> short_field(3, 1.0);
  std::vector<ProfileField> bad = {{"power_w", short_field}};
  EXPECT_THAT(ProfileUsage(samples.columns(), inventory.columns(), bad, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("column 'power_w' has 3 values for 60 rows")));
  samples.util[5] = std::nan("");
  EXPECT_THAT(ProfileUsage(samples.columns(), inventory.columns(), {}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("usage: row 5, column 'util'")));
}

}  // namespace
}  // namespace gpucost
