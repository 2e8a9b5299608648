// Instants and durations outside the range the engine accepts are bad input,
// named by table, row and column, never undefined arithmetic (issue 8; the
// allocate fuzzer found the overflows these bounds close).
#include <cstdint>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gpucost/allocate.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"
#include "testing/tables.h"

namespace gpucost {
namespace {

using ::gpucost::testing::At;
using ::gpucost::testing::CostTable;
using ::gpucost::testing::InventoryTable;
using ::gpucost::testing::IsOk;
using ::gpucost::testing::kGiB;
using ::gpucost::testing::SampleTable;
using ::gpucost::testing::StatusIs;
using ::testing::HasSubstr;

class InstantRange : public ::testing::Test {
 protected:
  void SetUp() override {
    costs_.Add("i-1", At(10), At(11), 8.0);
    inventory_.AddResource("i-1", 1, 40 * kGiB);
    samples_.AddSeries(At(10), At(10, 5), "i-1", 0, "a", 1.0, 0.5, kGiB);
  }
  absl::Status Run(const AllocationPolicy& policy = {}) {
    return Allocate(costs_.columns(), samples_.columns(), inventory_.columns(), nullptr, policy).status();
  }
  CostTable costs_;
  InventoryTable inventory_;
  SampleTable samples_;
};

TEST_F(InstantRange, BoundsAreWholeDaysAndFitInt64) {
  static_assert(kMaxInstant % kNanosPerDay == 0);
  static_assert(kMaxInstant - kMinInstant > 0);
  static_assert(kMaxInstant <= std::numeric_limits<int64_t>::max() - kMaxDuration);
  EXPECT_TRUE(InstantInRange(0, TimeUnit::kNanosecond));
  EXPECT_FALSE(InstantInRange(-1, TimeUnit::kNanosecond));
  EXPECT_FALSE(InstantInRange(kMaxInstant, TimeUnit::kNanosecond));
  EXPECT_TRUE(InstantInRange(kMaxInstant / kNanosPerSecond - 1, TimeUnit::kSecond));
  EXPECT_FALSE(InstantInRange(std::numeric_limits<int64_t>::max(), TimeUnit::kSecond));
  EXPECT_TRUE(DurationInRange(kMaxDuration, TimeUnit::kNanosecond));
  EXPECT_FALSE(DurationInRange(kMaxDuration + 1, TimeUnit::kNanosecond));
  EXPECT_FALSE(DurationInRange(std::numeric_limits<int64_t>::max(), TimeUnit::kSecond));
  EXPECT_FALSE(DurationInRange(0, TimeUnit::kSecond));
}

TEST_F(InstantRange, AcceptsTheWholeRange) {
  costs_.Add("i-1", kMinInstant, kMaxInstant - 1, 1.0);
  samples_.Add(kMaxInstant - 1, "i-1", 0, "a", 1.0, 0.5, kGiB);
  EXPECT_THAT(Run(), IsOk());
}

TEST_F(InstantRange, CostLineOutsideTheRange) {
  costs_.Add("i-1", std::numeric_limits<int64_t>::min() + 1, At(10), 1.0);
  EXPECT_THAT(Run(), StatusIs(absl::StatusCode::kInvalidArgument,
                              HasSubstr("costs: row 1, column 'start': instant outside 1970-01-01..2200-01-01")));
  costs_.start[1] = At(10);
  costs_.end[1] = kMaxInstant;
  EXPECT_THAT(Run(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("costs: row 1, column 'end'")));
}

TEST_F(InstantRange, SampleOutsideTheRange) {
  samples_.timestamp[2] = std::numeric_limits<int64_t>::max() - 1;
  EXPECT_THAT(Run(), StatusIs(absl::StatusCode::kInvalidArgument,
                              HasSubstr("usage: row 2, column 'timestamp': instant outside")));
  samples_.timestamp[2] = -60 * kNanosPerSecond;
  EXPECT_THAT(Run(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("usage: row 2, column 'timestamp'")));
}

TEST_F(InstantRange, SampleInSecondsThatWouldOverflowNanoseconds) {
  std::vector<int64_t> seconds;
  for (int64_t t : samples_.timestamp) seconds.push_back(t / kNanosPerSecond);
  seconds[1] = std::numeric_limits<int64_t>::max() / 2;  // wraps when scaled to ns
  SampleColumns s = samples_.columns();
  s.timestamp = seconds;
  s.time_unit = TimeUnit::kSecond;
  EXPECT_THAT(Allocate(costs_.columns(), s, inventory_.columns(), nullptr, {}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("usage: row 1, column 'timestamp'")));
}

TEST_F(InstantRange, DurationLongerThanTenYears) {
  samples_.duration = std::vector<int64_t>(samples_.timestamp.size(), 60 * kNanosPerSecond);
  (*samples_.duration)[4] = std::numeric_limits<int64_t>::max();
  EXPECT_THAT(Run(), StatusIs(absl::StatusCode::kInvalidArgument,
                              HasSubstr("usage: row 4, column 'duration'")));
  (*samples_.duration)[4] = kMaxDuration;
  EXPECT_THAT(Run(), IsOk());
}

TEST_F(InstantRange, IntervalLongerThanTenYears) {
  AllocationPolicy policy;
  policy.interval_seconds = 1e12;
  EXPECT_THAT(Run(policy), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'interval'")));
  policy.interval_seconds = std::numeric_limits<double>::infinity();
  EXPECT_THAT(Run(policy), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'interval'")));
}

}  // namespace
}  // namespace gpucost
