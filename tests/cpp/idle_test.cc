#include "gpucost/analyses/idle.h"

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <tuple>
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
using ::gpucost::testing::kMinute;
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


// The stream equals the whole pass over the same samples, whatever the chunk
// sizes: four days of a small fleet in time order, with busy, held-idle,
// unheld, exempt and silent stretches, scrape jitter, a billing gap and an
// idle weekend-long tail (and, from seed 5, durations of their own; from
// seed 7, stretches of minutes and a level just above the threshold, so that
// idle runs and their busy edges meet the decision points: a margin of one
// window fails there), cut into chunks of a few rows to a day.
class IdleStreamVersusWhole : public ::testing::TestWithParam<std::tuple<int, int64_t, int64_t>> {};

TEST_P(IdleStreamVersusWhole, SameSpansHoldersAndDecisions) {
  const auto [seed, window_min, grace_min] = GetParam();
  std::mt19937_64 rng(seed);
  CostTable costs;
  InventoryTable inventory;
  const std::vector<std::pair<std::string, int>> fleet = {{"i-a", 2}, {"i-b", 2}, {"i-c", 4}, {"i-d", 1}};
  constexpr int kHours = 4 * 24;
  for (const auto& [name, devices] : fleet) {
    inventory.AddResource(name, devices);
    for (int h = 0; h < kHours; ++h) {
      if (name == "i-b" && h >= 30 && h < 40) continue;  // not billed for 10 hours
      if (name == "i-d" && h < 20) continue;             // starts late
      costs.Add(name, At(h), At(h + 1), 3.0);
    }
  }
  // (time, resource, device, consumer, share, util)
  std::vector<std::tuple<int64_t, std::string, int, std::string, double, double>> rows;
  const std::vector<std::string> pods = {"train", "serve", "ci-wait", "notebook"};
  for (const auto& [name, devices] : fleet) {
    for (int d = 0; d < devices; ++d) {
      const int64_t jitter = static_cast<int64_t>(rng() % 1000) * 1'000'000;  // the scrape's offset, ms
      for (int64_t m = 0; m < kHours * 60 + 120;) {
        // Seeds 7 and up: short stretches, so idle runs start and end near many decision points.
        const auto stretch = static_cast<int64_t>(seed >= 7 ? 3 + rng() % 40 : 30 + rng() % 400);
        const int regime = static_cast<int>(rng() % (seed >= 7 ? 7 : 6));
        const std::string pod = pods[rng() % pods.size()];
        for (int64_t k = m; k < std::min<int64_t>(m + stretch, kHours * 60 + 120); ++k) {
          const int64_t t = At(0) + k * kMinute + jitter;
          switch (regime) {
            case 0: rows.emplace_back(t, name, d, pod, 1.0, 0.7); break;          // busy
            case 1: rows.emplace_back(t, name, d, pod, 1.0, 0.0); break;          // held, idle
            case 2: rows.emplace_back(t, name, d, "", 1.0, 0.0); break;           // free
            case 3: break;                                                        // silent
            case 4: rows.emplace_back(t, name, d, pod, 0.5, 0.02 * (k % 3)); break;  // time-sliced, low
            case 6: rows.emplace_back(t, name, d, pod, 1.0, 0.06); break;         // just above the threshold
            default: rows.emplace_back(t, name, d, k % 7 == 0 ? pod : "", 1.0, k % 7 == 0 ? 0.9 : 0.0);
          }
        }
        m += stretch;
      }
    }
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  // Seeds 5 and up: each sample with its own duration, 30 s to 10 min (overlapping the next or leaving gaps).
  const bool durations = seed >= 5;
  auto table = [&](size_t from, size_t to) {
    SampleTable t;
    if (durations) t.duration.emplace();
    for (size_t i = from; i < to; ++i) {
      const auto& [time, r, d, c, share, util] = rows[i];
      t.Add(time, r, d, c, share, util, 0.0);
      if (durations) t.duration->push_back(static_cast<int64_t>(30 + (i * 7919) % 571) * kNanosPerSecond);
    }
    return t;
  };
  IdleOptions options;
  options.window_ns = window_min * kMinute;
  options.grace_ns = grace_min * kMinute;
  const std::vector<std::string_view> exempt = {"ci-wait"};
  SampleTable all = table(0, rows.size());
  GPUCOST_ASSERT_OK_AND_ASSIGN(IdleResult whole, FindIdle(costs.columns(), all.columns(), inventory.columns(),
                                                          exempt, options));
  ASSERT_GT(whole.spans.size(), 20u);
  ASSERT_GT(whole.holders.size(), 5u);
  ASSERT_GT(whole.decisions.size(), 5u);

  for (const size_t chunk_rows : {size_t{97}, size_t{5'000}, rows.size() / 4 + 13}) {
    SCOPED_TRACE(chunk_rows);
    GPUCOST_ASSERT_OK_AND_ASSIGN(IdleStream stream,
                                 IdleStream::Create(costs.columns(), inventory.columns(), exempt, options));
    for (size_t from = 0; from < rows.size(); from += chunk_rows) {
      SampleTable chunk = table(from, std::min(rows.size(), from + chunk_rows));
      ASSERT_THAT(stream.Add(chunk.columns()), IsOk());
    }
    GPUCOST_ASSERT_OK_AND_ASSIGN(IdleResult r, std::move(stream).Finish());
    auto near = [](double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({1.0, std::abs(a), std::abs(b)}); };
    ASSERT_EQ(r.spans.size(), whole.spans.size());
    for (size_t k = 0; k < r.spans.size(); ++k) {
      EXPECT_EQ(r.spans.resource[k], whole.spans.resource[k]) << k;
      EXPECT_EQ(r.spans.device[k], whole.spans.device[k]) << k;
      EXPECT_EQ(r.spans.devices[k], whole.spans.devices[k]) << k;
      EXPECT_EQ(r.spans.kind[k], whole.spans.kind[k]) << k;
      EXPECT_EQ(r.spans.start[k], whole.spans.start[k]) << k;
      EXPECT_EQ(r.spans.end[k], whole.spans.end[k]) << k;
      EXPECT_TRUE(near(r.spans.busy_ns[k], whole.spans.busy_ns[k])) << k;
      EXPECT_TRUE(near(r.spans.observed_ns[k], whole.spans.observed_ns[k])) << k;
    }
    ASSERT_EQ(r.holders.size(), whole.holders.size());
    for (size_t k = 0; k < r.holders.size(); ++k) {
      EXPECT_EQ(r.holders.span[k], whole.holders.span[k]) << k;
      EXPECT_EQ(r.consumer_names[r.holders.consumer[k]], whole.consumer_names[whole.holders.consumer[k]]) << k;
      EXPECT_TRUE(near(r.holders.held_ns[k], whole.holders.held_ns[k])) << k;
      EXPECT_TRUE(near(r.holders.used_ns[k], whole.holders.used_ns[k])) << k;
    }
    ASSERT_EQ(r.decisions.size(), whole.decisions.size());
    for (size_t k = 0; k < r.decisions.size(); ++k) {
      EXPECT_EQ(r.decisions.resource[k], whole.decisions.resource[k]) << k;
      EXPECT_EQ(r.decisions.time[k], whole.decisions.time[k]) << k;
      EXPECT_EQ(r.decisions.decision[k], whole.decisions.decision[k]) << k;
      EXPECT_EQ(r.decisions.window_start[k], whole.decisions.window_start[k]) << k;
      EXPECT_EQ(r.decisions.until[k], whole.decisions.until[k]) << k;
      EXPECT_TRUE(near(r.decisions.util[k], whole.decisions.util[k])) << k;
    }
    const IdleDiagnostics& a = r.diagnostics;
    const IdleDiagnostics& b = whole.diagnostics;
    EXPECT_EQ(std::tie(a.samples_total, a.samples_no_consumer, a.samples_unknown_resource, a.samples_outside_billing,
                       a.devices, a.devices_billed, a.devices_unobserved),
              std::tie(b.samples_total, b.samples_no_consumer, b.samples_unknown_resource, b.samples_outside_billing,
                       b.devices, b.devices_billed, b.devices_unobserved));
  }
}

// (seed, window minutes, grace minutes)
INSTANTIATE_TEST_SUITE_P(SeedsWindowsGraces, IdleStreamVersusWhole,
                         ::testing::Values(std::tuple{1, int64_t{120}, int64_t{30}},
                                           std::tuple{2, int64_t{120}, int64_t{30}},
                                           std::tuple{3, int64_t{30}, int64_t{0}},
                                           std::tuple{4, int64_t{240}, int64_t{60}},
                                           std::tuple{5, int64_t{120}, int64_t{30}},
                                           std::tuple{6, int64_t{60}, int64_t{0}},
                                           std::tuple{7, int64_t{20}, int64_t{10}},
                                           std::tuple{8, int64_t{10}, int64_t{0}},
                                           std::tuple{9, int64_t{30}, int64_t{5}}));

// A chunk that goes back in time is refused, naming its row.
TEST(IdleStream, ChunkBeforeAnEarlierOneIsAnError) {
  CostTable costs;
  InventoryTable inventory;
  inventory.AddResource("i-a", 1);
  costs.Add("i-a", At(0), At(6), 6.0);
  SampleTable later, earlier;
  later.AddSeries(At(2), At(3), "i-a", 0, "train", 1.0, 0.5, 0.0);
  earlier.AddSeries(At(1), At(2), "i-a", 0, "train", 1.0, 0.5, 0.0);
  GPUCOST_ASSERT_OK_AND_ASSIGN(IdleStream stream, IdleStream::Create(costs.columns(), inventory.columns(), {}, {}));
  ASSERT_THAT(stream.Add(later.columns()), IsOk());
  EXPECT_THAT(stream.Add(earlier.columns()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("before the newest sample of an earlier chunk")));
}

}  // namespace
}  // namespace gpucost
