#include "gpucost/analyses/idle.h"

#include <string>
#include <string_view>
#include <vector>

#include "gmock/gmock.h"
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

// Day 5 after kT0 (2026-03-01, a Sunday) is Friday 2026-03-06.
int64_t Friday(int hour, int minute = 0) { return At(5 * 24 + hour, minute); }

class Idle : public ::testing::Test {
 protected:
  absl::StatusOr<IdleResult> Run(const IdleOptions& options = {}, std::vector<std::string_view> exempt = {}) {
    return FindIdle(costs_.columns(), samples_.columns(), inventory_.columns(), exempt, options);
  }
  void Hourly(const std::string& r, int64_t from, int64_t to, double cost) {
    for (int64_t t = from; t < to; t += kNanosPerHour) costs_.Add(r, t, t + kNanosPerHour, cost);
  }
  CostTable costs_;
  InventoryTable inventory_;
  SampleTable samples_;
};

// A forgotten weekend instance: a job ends Friday 20:00, the instance stays
// billed until Monday 08:00 with nobody on it.
TEST_F(Idle, ForgottenWeekendInstanceIsOneTerminateSpan) {
  inventory_.AddResource("i-w", 2);
  Hourly("i-w", Friday(18), Friday(24 + 24 + 24 + 8), 10.0);
  for (int d = 0; d < 2; ++d) {
    samples_.AddSeries(Friday(18), Friday(20), "i-w", d, "train", 1.0, 0.9, 30 * kGiB);
    samples_.AddSeries(Friday(20), Friday(72 + 8), "i-w", d, "", 1.0, 0.0, 0.0);
  }
  GPUCOST_ASSERT_OK_AND_ASSIGN(IdleResult r, Run());
  ASSERT_EQ(r.spans.size(), 1u);
  EXPECT_EQ(r.spans.kind[0], static_cast<int8_t>(IdleKind::kTerminate));
  EXPECT_EQ(r.spans.device[0], -1);
  EXPECT_EQ(r.spans.devices[0], 2);
  // Trimmed to the first idle minute, not the first low window (19:54).
  EXPECT_EQ(r.spans.start[0], Friday(20));
  EXPECT_EQ(r.spans.end[0], Friday(80));
  EXPECT_DOUBLE_EQ(r.spans.busy_ns[0], 0.0);
  EXPECT_DOUBLE_EQ(r.spans.observed_ns[0], 2.0 * 60 * kNanosPerHour);
  EXPECT_EQ(r.holders.size(), 0u);
  EXPECT_EQ(r.diagnostics.devices_billed, 2);
  EXPECT_EQ(r.diagnostics.devices_unobserved, 0);

  // The policy: the first 2 h window below 5 % ends at 21:54 (6 busy
  // minutes at 0.9 = 4.5 %), terminate 30 minutes later, idle until the
  // billing ends Monday 08:00.
  ASSERT_EQ(r.decisions.size(), 2u);
  EXPECT_EQ(r.decisions.decision[0], static_cast<int8_t>(PolicyDecision::kAlert));
  EXPECT_EQ(r.decisions.time[0], Friday(21, 54));
  EXPECT_EQ(r.decisions.window_start[0], Friday(19, 54));
  EXPECT_DOUBLE_EQ(r.decisions.util[0], 6 * 0.9 / 120);
  EXPECT_EQ(r.decisions.decision[1], static_cast<int8_t>(PolicyDecision::kTerminate));
  EXPECT_EQ(r.decisions.time[1], Friday(22, 24));
  EXPECT_EQ(r.decisions.until[1], Friday(80));
}

// A pod holds a GPU and does nothing while its neighbour trains.
TEST_F(Idle, PodHoldingAnIdleGpuIsReleaseWithItsHolder) {
  inventory_.AddResource("i-p", 2);
  Hourly("i-p", At(10), At(16), 8.0);
  samples_.AddSeries(At(10), At(16), "i-p", 0, "train", 1.0, 0.8, 30 * kGiB);
  samples_.AddSeries(At(10), At(16), "i-p", 1, "stuck", 1.0, 0.0, 2 * kGiB);
  GPUCOST_ASSERT_OK_AND_ASSIGN(IdleResult r, Run());
  ASSERT_EQ(r.spans.size(), 1u);
  EXPECT_EQ(r.spans.kind[0], static_cast<int8_t>(IdleKind::kRelease));
  EXPECT_EQ(r.spans.device[0], 1);
  EXPECT_EQ(r.spans.start[0], At(10));
  EXPECT_EQ(r.spans.end[0], At(16));
  ASSERT_EQ(r.holders.size(), 1u);
  EXPECT_EQ(r.consumer_names[r.holders.consumer[0]], "stuck");
  EXPECT_DOUBLE_EQ(r.holders.held_ns[0], 6.0 * kNanosPerHour);
  EXPECT_DOUBLE_EQ(r.holders.used_ns[0], 0.0);
  // The instance averages 40 %: no alert.
  EXPECT_EQ(r.decisions.size(), 0u);
}

TEST_F(Idle, ExemptHolderIsReportedAndNeverAlerted) {
  inventory_.AddResource("i-e", 1);
  Hourly("i-e", At(10), At(16), 4.0);
  samples_.AddSeries(At(10), At(16), "i-e", 0, "waiting-on-data", 1.0, 0.0, 2 * kGiB);
  GPUCOST_ASSERT_OK_AND_ASSIGN(IdleResult r, Run({}, {"waiting-on-data"}));
  ASSERT_EQ(r.spans.size(), 1u);
  EXPECT_EQ(r.spans.kind[0], static_cast<int8_t>(IdleKind::kExempt));
  EXPECT_EQ(r.decisions.size(), 0u);
  // Not exempt: the same pod is a release span and the instance is alerted
  // after 2 h, then terminated after the grace period.
  GPUCOST_ASSERT_OK_AND_ASSIGN(IdleResult plain, Run());
  EXPECT_EQ(plain.spans.kind[0], static_cast<int8_t>(IdleKind::kRelease));
  ASSERT_EQ(plain.decisions.size(), 2u);
  EXPECT_EQ(plain.decisions.time[0], At(12));
  EXPECT_EQ(plain.decisions.time[1], At(12, 30));
  EXPECT_EQ(plain.decisions.until[1], At(16));
}

// No sample at all on a billed device: not idle (nothing says it was free),
// counted as unobserved; its instance has telemetry, so no kNoTelemetry span.
TEST_F(Idle, UnobservedDeviceIsNotIdle) {
  inventory_.AddResource("i-u", 2);
  Hourly("i-u", At(0), At(4), 6.0);
  samples_.AddSeries(At(0), At(4), "i-u", 0, "busy", 1.0, 0.7, 10 * kGiB);
  GPUCOST_ASSERT_OK_AND_ASSIGN(IdleResult r, Run());
  EXPECT_EQ(r.spans.size(), 0u);
  EXPECT_EQ(r.diagnostics.devices_unobserved, 1);
}

// A billed instance with no sample of any device: one kNoTelemetry span over
// the whole resource, and the policy never alerts on it.
TEST_F(Idle, InstanceWithoutTelemetryIsUnobservedNotTerminated) {
  inventory_.AddResource("i-d", 2);
  Hourly("i-d", At(0), At(4), 6.0);
  GPUCOST_ASSERT_OK_AND_ASSIGN(IdleResult r, Run());
  ASSERT_EQ(r.spans.size(), 1u);
  EXPECT_EQ(r.spans.kind[0], static_cast<int8_t>(IdleKind::kNoTelemetry));
  EXPECT_EQ(r.spans.device[0], -1);
  EXPECT_EQ(r.spans.devices[0], 2);
  EXPECT_EQ(r.spans.start[0], At(0));
  EXPECT_EQ(r.spans.end[0], At(4));
  EXPECT_EQ(r.decisions.size(), 0u);
  EXPECT_EQ(IdleKindName(IdleKind::kNoTelemetry), "no-telemetry");
}

TEST_F(Idle, ActivityDuringGraceCancels) {
  inventory_.AddResource("i-c", 1);
  Hourly("i-c", At(0), At(6), 2.0);
  samples_.AddSeries(At(0), At(2, 10), "i-c", 0, "", 1.0, 0.0, 0.0);
  samples_.AddSeries(At(2, 10), At(2, 20), "i-c", 0, "job", 1.0, 0.9, kGiB);
  samples_.AddSeries(At(2, 20), At(6), "i-c", 0, "", 1.0, 0.0, 0.0);
  GPUCOST_ASSERT_OK_AND_ASSIGN(IdleResult r, Run());
  ASSERT_GE(r.decisions.size(), 2u);
  EXPECT_EQ(r.decisions.decision[0], static_cast<int8_t>(PolicyDecision::kAlert));
  EXPECT_EQ(r.decisions.time[0], At(2));
  EXPECT_EQ(r.decisions.decision[1], static_cast<int8_t>(PolicyDecision::kCancel));
  EXPECT_EQ(r.decisions.time[1], At(2, 11));
  // A fresh window starting after the cancel, below 5 % once it holds at
  // most 6 of the busy minutes (02:14-02:19): alert at 04:14, terminate at
  // 04:44.
  ASSERT_EQ(r.decisions.size(), 4u);
  EXPECT_EQ(r.decisions.time[2], At(4, 14));
  EXPECT_EQ(r.decisions.decision[3], static_cast<int8_t>(PolicyDecision::kTerminate));
  EXPECT_EQ(r.decisions.time[3], At(4, 44));
  EXPECT_EQ(r.decisions.until[3], At(6));
}

TEST_F(Idle, ShortLowStretchesAreNotIdle) {
  inventory_.AddResource("i-s", 1);
  Hourly("i-s", At(0), At(3), 2.0);
  samples_.AddSeries(At(0), At(1), "i-s", 0, "job", 1.0, 0.9, kGiB);
  samples_.AddSeries(At(1), At(2, 30), "i-s", 0, "job", 1.0, 0.0, kGiB);  // 90 min low
  samples_.AddSeries(At(2, 30), At(3), "i-s", 0, "job", 1.0, 0.9, kGiB);
  GPUCOST_ASSERT_OK_AND_ASSIGN(IdleResult r, Run());
  EXPECT_EQ(r.spans.size(), 0u);
  IdleOptions hour;
  hour.window_ns = kNanosPerHour;
  GPUCOST_ASSERT_OK_AND_ASSIGN(IdleResult r1, Run(hour));
  ASSERT_EQ(r1.spans.size(), 1u);
  EXPECT_EQ(r1.spans.start[0], At(1));
  EXPECT_EQ(r1.spans.end[0], At(2, 30));
}

TEST_F(Idle, UnbilledTimeIsNeverIdle) {
  inventory_.AddResource("i-g", 1);
  Hourly("i-g", At(0), At(3), 2.0);
  Hourly("i-g", At(5), At(6), 2.0);  // a gap 03:00-05:00
  samples_.AddSeries(At(0), At(6), "i-g", 0, "", 1.0, 0.0, 0.0);
  GPUCOST_ASSERT_OK_AND_ASSIGN(IdleResult r, Run());
  ASSERT_EQ(r.spans.size(), 1u);
  EXPECT_EQ(r.spans.start[0], At(0));
  EXPECT_EQ(r.spans.end[0], At(3));
  EXPECT_EQ(r.diagnostics.samples_outside_billing, 120);
}

TEST_F(Idle, BadInputNamesTableRowAndColumn) {
  inventory_.AddResource("i-b", 1);
  Hourly("i-b", At(0), At(3), 2.0);
  samples_.AddSeries(At(0), At(3), "i-b", 0, "job", 1.0, 0.5, 0.0);
  samples_.share[17] = 1.5;
  EXPECT_THAT(Run(), StatusIs(absl::StatusCode::kInvalidArgument,
                              HasSubstr("usage: row 17, column 'share': 1.5 is outside (0, 1]")));
  samples_.share[17] = 1.0;
  samples_.device[3] = 4;
  EXPECT_THAT(Run(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("usage: row 3, column 'device'")));
  samples_.device[3] = 0;
  costs_.end[1] = costs_.start[1];
  EXPECT_THAT(Run(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("costs: row 1, column 'end'")));
  costs_.end[1] = costs_.start[1] + kNanosPerHour;
  ASSERT_THAT(Run(), IsOk());
  IdleOptions odd;
  odd.window_ns = 90 * kNanosPerSecond;
  EXPECT_THAT(Run(odd), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("parameter 'window'")));
  IdleOptions negative;
  negative.threshold = -0.1;
  EXPECT_THAT(Run(negative), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("parameter 'threshold'")));
}

}  // namespace
}  // namespace gpucost
