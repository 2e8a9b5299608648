#include "gpucost/allocate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "engine/series_scan.h"
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
using ::gpucost::testing::RowOf;
using ::gpucost::testing::SampleTable;
using ::gpucost::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// SEMANTICS 7: i-1 with two 40 GiB devices, one line [10:00, 11:00) at 8.00.
class WorkedExample : public ::testing::Test {
 protected:
  void SetUp() override {
    costs_.Add("i-1", At(10), At(11), 8.0);
    inventory_.AddResource("i-1", 2, 40 * kGiB);
    samples_.AddSeries(At(10), At(11), "i-1", 0, "train-a", 1.0, 0.9, 20 * kGiB);
    samples_.AddSeries(At(10), At(10, 30), "i-1", 1, "nb-b", 1.0, 0.2, 10 * kGiB);
    samples_.AddSeries(At(10, 30), At(11), "i-1", 1, "", 1.0, 0.0, 0.0);
  }
  absl::StatusOr<Allocation> Run(AllocationPolicy policy) {
    return Allocate(costs_.columns(), samples_.columns(), inventory_.columns(), nullptr, policy);
  }
  CostTable costs_;
  InventoryTable inventory_;
  SampleTable samples_;
};

TEST_F(WorkedExample, AllocatedKeep) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Run({}));
  ASSERT_EQ(a.size(), 3u);
  // Sorted by consumer: "__idle__" < "nb-b" < "train-a".
  EXPECT_EQ(a.keys[0].dictionary[a.keys[0].codes[0]], "__idle__");
  EXPECT_EQ(a.keys[0].dictionary[a.keys[0].codes[1]], "nb-b");
  EXPECT_EQ(a.keys[0].dictionary[a.keys[0].codes[2]], "train-a");
  EXPECT_DOUBLE_EQ(a.cost[0], 2.0);
  EXPECT_DOUBLE_EQ(a.idle_cost[0], 2.0);
  EXPECT_DOUBLE_EQ(a.gpu_hours[0], 0.5);
  EXPECT_DOUBLE_EQ(a.effective_gpu_hours[0], 0.0);
  EXPECT_TRUE(std::isnan(a.cost_per_effective_gpu_hour[0]));
  EXPECT_DOUBLE_EQ(a.cost[1], 2.0);
  EXPECT_DOUBLE_EQ(a.gpu_hours[1], 0.5);
  EXPECT_DOUBLE_EQ(a.effective_gpu_hours[1], 0.1);
  EXPECT_DOUBLE_EQ(a.mem_gib_hours[1], 5.0);
  EXPECT_DOUBLE_EQ(a.cost_per_effective_gpu_hour[1], 20.0);
  EXPECT_DOUBLE_EQ(a.cost[2], 4.0);
  EXPECT_DOUBLE_EQ(a.idle_cost[2], 0.0);
  EXPECT_DOUBLE_EQ(a.gpu_hours[2], 1.0);
  EXPECT_DOUBLE_EQ(a.effective_gpu_hours[2], 0.9);
  EXPECT_DOUBLE_EQ(a.mem_gib_hours[2], 20.0);
  EXPECT_FALSE(a.has_list_cost);

  const Diagnostics& d = a.diagnostics;
  EXPECT_EQ(d.lines_total, 1);
  EXPECT_EQ(d.lines_unattributed, 0);
  EXPECT_EQ(d.lines_oversubscribed, 0);
  EXPECT_EQ(d.samples_total, 120);
  EXPECT_EQ(d.samples_no_consumer, 30);
  EXPECT_EQ(d.samples_used, 90);
  EXPECT_EQ(d.samples_unknown_resource + d.samples_outside_lines, 0);
}

TEST_F(WorkedExample, UsedKeep) {
  AllocationPolicy policy;
  policy.basis = Basis::kUsed;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Run(policy));
  EXPECT_NEAR(a.cost[RowOf(a, "train-a")], 3.6, 1e-12);
  EXPECT_NEAR(a.cost[RowOf(a, "nb-b")], 0.4, 1e-12);
  EXPECT_NEAR(a.cost[RowOf(a, "__idle__")], 4.0, 1e-12);
  EXPECT_NEAR(a.gpu_hours[RowOf(a, "__idle__")], 0.5, 1e-12);
}

TEST_F(WorkedExample, AllocatedShare) {
  AllocationPolicy policy;
  policy.idle = IdleMode::kShare;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Run(policy));
  ASSERT_EQ(a.size(), 2u);  // no __idle__ row: the line had consumers
  EXPECT_EQ(RowOf(a, "__idle__"), -1);
  EXPECT_NEAR(a.cost[RowOf(a, "train-a")], 16.0 / 3.0, 1e-12);
  EXPECT_NEAR(a.idle_cost[RowOf(a, "train-a")], 4.0 / 3.0, 1e-12);
  EXPECT_NEAR(a.cost[RowOf(a, "nb-b")], 8.0 / 3.0, 1e-12);
  EXPECT_NEAR(a.idle_cost[RowOf(a, "nb-b")], 2.0 / 3.0, 1e-12);
}

TEST_F(WorkedExample, UsedShare) {
  AllocationPolicy policy;
  policy.basis = Basis::kUsed;
  policy.idle = IdleMode::kShare;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Run(policy));
  EXPECT_NEAR(a.cost[RowOf(a, "train-a")], 7.2, 1e-12);
  EXPECT_NEAR(a.cost[RowOf(a, "nb-b")], 0.8, 1e-12);
  EXPECT_NEAR(a.idle_cost[RowOf(a, "train-a")], 3.6, 1e-12);
}

TEST_F(WorkedExample, BlendedKeep) {
  AllocationPolicy policy;
  policy.basis = Basis::kBlended;  // alpha 0.5
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Run(policy));
  // train-a: 0.5 * 3600/7200 + 0.5 * (20 GiB * 1 h) / (80 GiB * 1 h) = 0.375.
  EXPECT_NEAR(a.cost[RowOf(a, "train-a")], 3.0, 1e-12);
  // nb-b: 0.5 * 0.25 + 0.5 * (10 GiB * 0.5 h) / (80 GiB * 1 h) = 0.15625.
  EXPECT_NEAR(a.cost[RowOf(a, "nb-b")], 1.25, 1e-12);
  EXPECT_NEAR(a.cost[RowOf(a, "__idle__")], 3.75, 1e-12);
}

TEST_F(WorkedExample, BlendedAlphaOneIsAllocated) {
  AllocationPolicy policy;
  policy.basis = Basis::kBlended;
  policy.alpha = 1.0;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Run(policy));
  EXPECT_NEAR(a.cost[RowOf(a, "train-a")], 4.0, 1e-12);
}

TEST_F(WorkedExample, StreamingInShuffledChunksEqualsOneShot) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation whole, Run({}));
  // Shuffle the samples, then feed them in chunks of 7.
  std::vector<size_t> order(samples_.timestamp.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(42));
  SampleTable shuffled;
  for (size_t i : order) {
    shuffled.Add(samples_.timestamp[i], samples_.resource_id[i], samples_.device[i], samples_.consumer[i],
                 samples_.share[i], samples_.util[i], samples_.mem_used[i]);
  }
  // Chunks out of time order: the interval is given (inferred from the
  // first chunk it would be wrong, and refused).
  AllocationPolicy policy;
  policy.interval_seconds = 60;
  GPUCOST_ASSERT_OK_AND_ASSIGN(auto allocator,
                               Allocator::Create(costs_.columns(), inventory_.columns(), nullptr, policy));
  GPUCOST_ASSERT_OK_AND_ASSIGN(auto inferring,
                               Allocator::Create(costs_.columns(), inventory_.columns(), nullptr, {}));
  absl::Status inferred_status;
  const size_t n = shuffled.timestamp.size();
  for (size_t lo = 0; lo < n; lo += 7) {
    SampleTable chunk;
    for (size_t i = lo; i < std::min(n, lo + 7); ++i) {
      chunk.Add(shuffled.timestamp[i], shuffled.resource_id[i], shuffled.device[i], shuffled.consumer[i],
                shuffled.share[i], shuffled.util[i], shuffled.mem_used[i]);
    }
    ASSERT_THAT(allocator->AddSamples(chunk.columns()), IsOk());
    inferred_status = inferring->AddSamples(chunk.columns());
  }
  if (inferred_status.ok()) inferred_status = inferring->Finish().status();
  EXPECT_THAT(inferred_status, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("inferred from the first chunk")));
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation streamed, allocator->Finish());
  ASSERT_EQ(streamed.size(), whole.size());
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_EQ(streamed.keys[0].dictionary[streamed.keys[0].codes[i]],
              whole.keys[0].dictionary[whole.keys[0].codes[i]]);
    EXPECT_NEAR(streamed.cost[i], whole.cost[i], 1e-12);
    EXPECT_NEAR(streamed.gpu_hours[i], whole.gpu_hours[i], 1e-12);
    EXPECT_NEAR(streamed.mem_gib_hours[i], whole.mem_gib_hours[i], 1e-9);
  }
  EXPECT_EQ(streamed.diagnostics.samples_total, whole.diagnostics.samples_total);
  EXPECT_EQ(streamed.diagnostics.samples_used, whole.diagnostics.samples_used);
}

TEST_F(WorkedExample, ByResourceAndPeriod) {
  AllocationPolicy policy;
  policy.by = {"period", "resource_id"};
  policy.freq = PeriodFreq::kDay;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Run(policy));
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(a.keys.size(), 2u);
  EXPECT_TRUE(a.keys[0].is_period());
  EXPECT_EQ(a.keys[0].period[0], At(0));
  EXPECT_EQ(a.keys[1].dictionary[a.keys[1].codes[0]], "i-1");
  EXPECT_DOUBLE_EQ(a.cost[0], 8.0);
  EXPECT_DOUBLE_EQ(a.idle_cost[0], 2.0);
  EXPECT_DOUBLE_EQ(a.gpu_hours[0], 2.0);  // 1.5 held + 0.5 idle
}

TEST(Allocate, LabelsGroupConsumersAndMarkSpecialRows) {
  CostTable costs;
  costs.Add("i-1", At(0), At(1), 10.0);
  costs.Add("vol-9", At(0), At(1), 3.0);  // no inventory: unattributed
  InventoryTable inventory;
  inventory.AddResource("i-1", 4);
  SampleTable samples;
  samples.AddSeries(At(0), At(1), "i-1", 0, "a", 1, 1, 0);
  samples.AddSeries(At(0), At(1), "i-1", 1, "b", 1, 1, 0);
  samples.AddSeries(At(0), At(1), "i-1", 2, "stray", 1, 1, 0);
  std::vector<std::string_view> consumers = {"a", "b"}, teams = {"ml", "ml"};
  EncodedStrings c = EncodeStrings(std::span<const std::string_view>(consumers));
  EncodedStrings t = EncodeStrings(std::span<const std::string_view>(teams));
  WorkloadColumns workloads{c.view(), {{"team", t.view()}}};
  AllocationPolicy policy;
  policy.by = {"team"};
  GPUCOST_ASSERT_OK_AND_ASSIGN(
      Allocation a, Allocate(costs.columns(), samples.columns(), inventory.columns(), &workloads, policy));
  ASSERT_EQ(a.size(), 4u);
  EXPECT_NEAR(a.cost[RowOf(a, "ml")], 5.0, 1e-12);
  EXPECT_NEAR(a.cost[RowOf(a, "__unlabelled__")], 2.5, 1e-12);
  EXPECT_NEAR(a.cost[RowOf(a, "__idle__")], 2.5, 1e-12);
  EXPECT_NEAR(a.cost[RowOf(a, "__unattributed__")], 3.0, 1e-12);
  EXPECT_EQ(a.idle_cost[RowOf(a, "__unattributed__")], 0.0);
  EXPECT_EQ(a.gpu_hours[RowOf(a, "__unattributed__")], 0.0);
  EXPECT_EQ(a.diagnostics.lines_unattributed, 1);
}

TEST(Allocate, OversubscribedLineIsNormalised) {
  CostTable costs;
  costs.Add("i-1", At(0), At(1), 6.0);
  InventoryTable inventory;
  inventory.AddResource("i-1", 1);
  SampleTable samples;  // three time-sliced pods, each reported with share 1
  for (const char* pod : {"p1", "p2", "p3"}) samples.AddSeries(At(0), At(1), "i-1", 0, pod, 1, 0.5, 0);
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a,
                               Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, {}));
  EXPECT_EQ(a.diagnostics.lines_oversubscribed, 1);
  EXPECT_NEAR(a.cost[RowOf(a, "p1")], 2.0, 1e-12);
  EXPECT_NEAR(a.cost[RowOf(a, "__idle__")], 0.0, 1e-12);
  EXPECT_NEAR(a.gpu_hours[RowOf(a, "__idle__")], 0.0, 1e-12);
}

TEST(Allocate, MigSlicesFillingAGpuAreNotOversubscribed) {
  CostTable costs;
  costs.Add("i-1", At(0), At(1), 7.0);
  InventoryTable inventory;
  inventory.AddResource("i-1", 1);
  SampleTable samples;  // 3g + 2g + 1g + 1g slices: 7/7 up to rounding
  samples.AddSeries(At(0), At(1), "i-1", 0, "a", 3.0 / 7, 0.5, 0);
  samples.AddSeries(At(0), At(1), "i-1", 0, "b", 2.0 / 7, 0.5, 0);
  samples.AddSeries(At(0), At(1), "i-1", 0, "c", 1.0 / 7, 0.5, 0);
  samples.AddSeries(At(0), At(1), "i-1", 0, "d", 1.0 / 7, 0.5, 0);
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a,
                               Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, {}));
  EXPECT_EQ(a.diagnostics.lines_oversubscribed, 0);
  EXPECT_NEAR(a.cost[RowOf(a, "a")], 3.0, 1e-12);
  EXPECT_NEAR(a.cost[RowOf(a, "__idle__")], 0.0, 1e-12);
}

TEST(Allocate, SampleCrossingLineBordersSplitsItsOverlap) {
  CostTable costs;  // two half-hour lines and a separate GPU-SKU line over the hour
  costs.Add("i-1", At(0), At(0, 30), 1.0);
  costs.Add("i-1", At(0, 30), At(1), 1.0);
  costs.Add("i-1", At(0), At(1), 4.0);
  InventoryTable inventory;
  inventory.AddResource("i-1", 1);
  SampleTable samples;  // one 20-minute sample from 00:20 to 00:40
  samples.Add(At(0, 20), "i-1", 0, "job", 1, 1, 0);
  samples.duration = std::vector<int64_t>{20 * kMinute};
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a,
                               Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, {}));
  // 10 of 30 min on each half-hour line, 20 of 60 on the hour line.
  EXPECT_NEAR(a.cost[RowOf(a, "job")], 1.0 / 3 + 1.0 / 3 + 4.0 / 3, 1e-12);
  EXPECT_NEAR(a.gpu_hours[RowOf(a, "job")], 2 * 20.0 / 60, 1e-12);  // counted per line
  EXPECT_NEAR(a.cost[RowOf(a, "__idle__")] + a.cost[RowOf(a, "job")], 6.0, 1e-12);
}

TEST(Allocate, SamplesOutsideLinesAndUnknownResourcesAreCounted) {
  CostTable costs;
  costs.Add("i-1", At(0), At(1), 1.0);
  InventoryTable inventory;
  inventory.AddResource("i-1", 1);
  inventory.AddResource("i-2", 1);  // no cost line
  SampleTable samples;
  samples.Add(At(2), "i-1", 0, "late", 1, 1, 0);     // outside every line
  samples.Add(At(0), "i-2", 0, "nolines", 1, 1, 0);  // known resource, no line
  samples.Add(At(0), "i-9", 7, "ghost", 1, 1, 0);    // not in the inventory (device unchecked)
  samples.Add(At(0), "i-1", 0, "", 1, 0, 0);          // no consumer
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a,
                               Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, {}));
  EXPECT_EQ(a.diagnostics.samples_total, 4);
  EXPECT_EQ(a.diagnostics.samples_outside_lines, 2);
  EXPECT_EQ(a.diagnostics.samples_unknown_resource, 1);
  EXPECT_EQ(a.diagnostics.samples_no_consumer, 1);
  EXPECT_EQ(a.diagnostics.samples_used, 0);
  ASSERT_EQ(a.size(), 1u);  // only the idle row
  EXPECT_DOUBLE_EQ(a.cost[0], 1.0);
}

TEST(Allocate, ConsumerWithZeroUseStillGetsARow) {
  CostTable costs;
  costs.Add("i-1", At(0), At(1), 1.0);
  InventoryTable inventory;
  inventory.AddResource("i-1", 1);
  SampleTable samples;
  samples.AddSeries(At(0), At(1), "i-1", 0, "sleeper", 1, 0.0, 0);
  AllocationPolicy policy;
  policy.basis = Basis::kUsed;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a,
                               Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, policy));
  ASSERT_NE(RowOf(a, "sleeper"), -1);
  EXPECT_EQ(a.cost[RowOf(a, "sleeper")], 0.0);
  EXPECT_NEAR(a.gpu_hours[RowOf(a, "sleeper")], 1.0, 1e-12);
  EXPECT_NEAR(a.cost[RowOf(a, "__idle__")], 1.0, 1e-12);
}

TEST(Allocate, ListCostIsProratedLikeCost) {
  CostTable costs;
  costs.Add("i-1", At(0), At(1), 2.0);
  costs.list_cost = {5.0};
  InventoryTable inventory;
  inventory.AddResource("i-1", 2);
  SampleTable samples;
  samples.AddSeries(At(0), At(1), "i-1", 0, "job", 1, 1, 0);
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a,
                               Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, {}));
  ASSERT_TRUE(a.has_list_cost);
  EXPECT_NEAR(a.list_cost[RowOf(a, "job")], 2.5, 1e-12);
  EXPECT_NEAR(a.list_cost[RowOf(a, "__idle__")], 2.5, 1e-12);
}

TEST(Allocate, MonthStartPeriods) {
  CostTable costs;
  costs.Add("i-1", At(-1), At(0), 1.0);  // Feb 28 23:00, counts in February
  costs.Add("i-1", At(0), At(1), 2.0);
  InventoryTable inventory;
  inventory.AddResource("i-1", 1);
  SampleTable samples;
  AllocationPolicy policy;
  policy.by = {"period"};
  policy.freq = PeriodFreq::kMonthStart;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a,
                               Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, policy));
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a.keys[0].period[0], DaysFromCivil(2026, 2, 1) * kNanosPerDay);
  EXPECT_EQ(a.keys[0].period[1], DaysFromCivil(2026, 3, 1) * kNanosPerDay);
  EXPECT_DOUBLE_EQ(a.cost[0], 1.0);
  EXPECT_DOUBLE_EQ(a.cost[1], 2.0);
}

TEST(Allocate, ThreadCountDoesNotChangeTheResult) {
  // The engine's own threshold (2^18 samples a worker) on 864,000 samples;
  // under ThreadSanitizer 2^15 on a sixth of them.
  const int resources = ::gpucost::testing::kThreadSanitizer ? 25 : 150;
  struct Threshold {
    int64_t saved = internal::MinSamplesPerWorker();
    explicit Threshold(int64_t rows) { internal::SetMinSamplesPerWorkerForTesting(rows); }
    ~Threshold() { internal::SetMinSamplesPerWorkerForTesting(saved); }
  } threshold(::gpucost::testing::kThreadSanitizer ? 1 << 15 : 1 << 18);
  CostTable costs;
  InventoryTable inventory;
  SampleTable samples;
  for (int r = 0; r < resources; ++r) {
    const std::string id = "i-" + std::to_string(r);
    inventory.AddResource(id, 4);
    for (int h = 0; h < 24; ++h) costs.Add(id, At(h), At(h + 1), 10.0 + r);
    for (int d = 0; d < 4; ++d) {
      const std::string who = (d == 3) ? "" : "pod-" + std::to_string((r * 4 + d) % 37);
      samples.AddSeries(At(0), At(24), id, d, who, d == 2 ? 0.5 : 1.0, 0.1 * d, d * kGiB);
    }
  }
  // Shuffle a block so that runs are short too.
  std::shuffle(samples.timestamp.begin() + 1000, samples.timestamp.begin() + 5000, std::mt19937(1));
  ASSERT_GT(samples.timestamp.size(), 3u * internal::MinSamplesPerWorker());
  AllocationPolicy policy;
  policy.by = {"consumer", "period"};
  policy.freq = PeriodFreq::kHour;
  policy.threads = 1;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation one,
                               Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, policy));
  for (int threads : {2, 3}) {
    policy.threads = threads;
    GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation many,
                                 Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, policy));
    ASSERT_EQ(many.size(), one.size());
    for (size_t i = 0; i < one.size(); ++i) {
      ASSERT_EQ(many.keys[0].codes[i], one.keys[0].codes[i]);
      EXPECT_NEAR(many.cost[i], one.cost[i], 1e-12 * std::abs(one.cost[i]) + 1e-12);
      EXPECT_NEAR(many.gpu_hours[i], one.gpu_hours[i], 1e-12 * one.gpu_hours[i] + 1e-12);
      EXPECT_NEAR(many.mem_gib_hours[i], one.mem_gib_hours[i], 1e-12 * one.mem_gib_hours[i] + 1e-12);
    }
    EXPECT_EQ(many.diagnostics.samples_used, one.diagnostics.samples_used);
    EXPECT_EQ(many.diagnostics.samples_no_consumer, one.diagnostics.samples_no_consumer);
  }
  // The first bad row is reported whatever the split.
  const size_t first_bad = samples.util.size() * 4 / 5;
  samples.util[samples.util.size() - 2] = 2.0;
  samples.util[first_bad] = -1.0;
  policy.threads = 3;
  EXPECT_THAT(Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, policy),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("row " + std::to_string(first_bad) + ", column 'util'")));
}

// ---- SEMANTICS 6: every bad input, with its code, table, row and column ----

class BadInput : public WorkedExample {
 protected:
  absl::Status RunStatus(AllocationPolicy policy = {}) { return Run(std::move(policy)).status(); }
};

auto IsBad(const std::string& table, const std::string& row_and_column) {
  return StatusIs(absl::StatusCode::kInvalidArgument,
                  AllOf(HasSubstr(table + ": "), HasSubstr(row_and_column)));
}

TEST_F(BadInput, MissingRequiredColumn) {
  samples_.util.clear();
  EXPECT_THAT(RunStatus(), IsBad("usage", "missing required column 'util'"));
}

TEST_F(BadInput, EndNotAfterStart) {
  costs_.end[0] = costs_.start[0];
  EXPECT_THAT(RunStatus(), IsBad("costs", "row 0, column 'end'"));
}

TEST_F(BadInput, NonFiniteCost) {
  costs_.cost[0] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THAT(RunStatus(), IsBad("costs", "row 0, column 'cost'"));
  costs_.cost[0] = std::numeric_limits<double>::infinity();
  EXPECT_THAT(RunStatus(), IsBad("costs", "row 0, column 'cost'"));
}

TEST_F(BadInput, ShareOutsideUnitInterval) {
  samples_.share[5] = 0.0;
  EXPECT_THAT(RunStatus(), IsBad("usage", "row 5, column 'share'"));
  samples_.share[5] = 1.5;
  EXPECT_THAT(RunStatus(), IsBad("usage", "row 5, column 'share'"));
}

TEST_F(BadInput, UtilOutsideUnitIntervalOrNaN) {
  samples_.util[61] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THAT(RunStatus(), IsBad("usage", "row 61, column 'util'"));
  samples_.util[61] = -0.1;
  EXPECT_THAT(RunStatus(), IsBad("usage", "row 61, column 'util'"));
  samples_.util[61] = 1.01;
  EXPECT_THAT(RunStatus(), IsBad("usage", "row 61, column 'util'"));
}

TEST_F(BadInput, NegativeOrNaNMemUsed) {
  samples_.mem_used[100] = -1;  // on a free device: still checked
  EXPECT_THAT(RunStatus(), IsBad("usage", "row 100, column 'mem_used'"));
  samples_.mem_used[100] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THAT(RunStatus(), IsBad("usage", "row 100, column 'mem_used'"));
}

// Found by allocate_fuzzer: a finite 1.8e308 bytes times a half hour in ns is
// inf, and the blended fraction inf/inf turned a line's cost into NaN.
TEST_F(BadInput, MemoryBeyondAnyDevice) {
  samples_.mem_used[100] = 1.7e308;
  EXPECT_THAT(RunStatus(), IsBad("usage", "row 100, column 'mem_used'"));
  samples_.mem_used[100] = 0x1p64;  // the largest accepted
  inventory_.mem_capacity[0] = 0x1p65;
  EXPECT_THAT(RunStatus(), IsBad("inventory", "row 0, column 'mem_capacity'"));
}

TEST_F(BadInput, NonPositiveDurationOrInterval) {
  samples_.duration = std::vector<int64_t>(samples_.timestamp.size(), 60 * kNanosPerSecond);
  (*samples_.duration)[3] = 0;
  EXPECT_THAT(RunStatus(), IsBad("usage", "row 3, column 'duration'"));
  samples_.duration.reset();
  AllocationPolicy policy;
  policy.interval_seconds = 0;
  EXPECT_THAT(RunStatus(policy), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'interval'")));
}

TEST_F(BadInput, DeviceOutsideInventory) {
  samples_.device[7] = 2;
  EXPECT_THAT(RunStatus(), IsBad("usage", "row 7, column 'device'"));
}

TEST_F(BadInput, DuplicateInventoryDevice) {
  inventory_.device[1] = 0;
  EXPECT_THAT(RunStatus(), IsBad("inventory", "row 1, column 'device'"));
}

TEST_F(BadInput, AlphaOutsideUnitInterval) {
  AllocationPolicy policy;
  policy.basis = Basis::kBlended;
  policy.alpha = 1.5;
  EXPECT_THAT(RunStatus(policy), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'alpha'")));
}

TEST(ParsePolicy, UnknownBasisIdleOrFreq) {
  EXPECT_THAT(ParseBasis("usage"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'basis'")));
  EXPECT_THAT(ParseIdleMode("drop"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'idle'")));
  EXPECT_THAT(ParsePeriodFreq("W"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'freq'")));
  EXPECT_THAT(ParseBasis("blended"), IsOk());
}

TEST_F(BadInput, ReservedConsumerName) {
  samples_.consumer[9] = "__idle__";
  EXPECT_THAT(RunStatus(), IsBad("usage", "row 9, column 'consumer'"));
}

TEST_F(BadInput, ReservedLabelValue) {
  std::vector<std::string_view> consumers = {"train-a"}, teams = {"__unlabelled__"};
  EncodedStrings c = EncodeStrings(std::span<const std::string_view>(consumers));
  EncodedStrings t = EncodeStrings(std::span<const std::string_view>(teams));
  WorkloadColumns workloads{c.view(), {{"team", t.view()}}};
  auto result = Allocate(costs_.columns(), samples_.columns(), inventory_.columns(), &workloads, {});
  EXPECT_THAT(result, IsBad("workloads", "row 0, column 'team'"));
}

TEST_F(BadInput, PeriodWithoutFreqAndUnknownBy) {
  AllocationPolicy policy;
  policy.by = {"period"};
  EXPECT_THAT(RunStatus(policy), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'freq'")));
  policy.by = {"team"};
  EXPECT_THAT(RunStatus(policy), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'team'")));
}

TEST_F(BadInput, ErrorIsStickyInTheStreamingAllocator) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(auto allocator,
                               Allocator::Create(costs_.columns(), inventory_.columns(), nullptr, {}));
  samples_.share[2] = 2.0;
  EXPECT_THAT(allocator->AddSamples(samples_.columns()), IsBad("usage", "row 2, column 'share'"));
  EXPECT_THAT(allocator->Finish(), IsBad("usage", "row 2, column 'share'"));
}

TEST_F(BadInput, RowNumbersCountAcrossChunks) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(auto allocator,
                               Allocator::Create(costs_.columns(), inventory_.columns(), nullptr, {}));
  ASSERT_THAT(allocator->AddSamples(samples_.columns()), IsOk());
  samples_.util[4] = 7;
  EXPECT_THAT(allocator->AddSamples(samples_.columns()), IsBad("usage", "row 124, column 'util'"));
}


// ---- SEMANTICS 2-5: unobserved lines, currencies, quantities, primary lines,
// intervals, the join table ----

TEST(Allocate, LineNoSampleOverlapsIsUnobservedUnderEitherIdleMode) {
  CostTable costs;
  costs.Add("i-1", At(0), At(1), 3.0);
  costs.Add("i-1", At(1), At(2), 5.0);  // nothing measured this hour
  InventoryTable inventory;
  inventory.AddResource("i-1", 2);
  SampleTable samples;
  samples.AddSeries(At(0), At(1), "i-1", 0, "job", 1, 0.5, 0);
  for (IdleMode idle : {IdleMode::kKeep, IdleMode::kShare}) {
    AllocationPolicy policy;
    policy.idle = idle;
    GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a,
                                 Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, policy));
    const int row = RowOf(a, "__unobserved__");
    ASSERT_NE(row, -1);
    EXPECT_DOUBLE_EQ(a.cost[row], 5.0);
    EXPECT_DOUBLE_EQ(a.idle_cost[row], 0.0);
    EXPECT_DOUBLE_EQ(a.gpu_hours[row], 2.0);  // C / 3600: 2 devices for an hour
    EXPECT_DOUBLE_EQ(a.effective_gpu_hours[row], 0.0);
    EXPECT_DOUBLE_EQ(a.mem_gib_hours[row], 0.0);
    EXPECT_EQ(a.diagnostics.lines_unobserved, 1);
    double total = 0;
    for (double c : a.cost) total += c;
    EXPECT_NEAR(total, 8.0, 1e-12);
    if (idle == IdleMode::kKeep) {  // the observed line's idle half only
      EXPECT_DOUBLE_EQ(a.cost[RowOf(a, "__idle__")], 1.5);
      EXPECT_DOUBLE_EQ(a.gpu_hours[RowOf(a, "__idle__")], 1.0);
    }
  }
}

TEST(Allocate, FreeDeviceSamplesMakeALineObservedAndIdle) {
  CostTable costs;
  costs.Add("i-1", At(0), At(1), 3.0);
  costs.Add("i-1", At(1), At(2), 5.0);
  InventoryTable inventory;
  inventory.AddResource("i-1", 1);
  SampleTable samples;
  samples.Add(At(1, 30), "i-1", 0, "", 1, 0, 0);  // one free sample in the second hour
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a,
                               Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, {}));
  EXPECT_DOUBLE_EQ(a.cost[RowOf(a, "__idle__")], 5.0);
  EXPECT_DOUBLE_EQ(a.cost[RowOf(a, "__unobserved__")], 3.0);
  EXPECT_EQ(a.diagnostics.lines_unobserved, 1);
}

TEST(Allocate, CurrenciesAreAKeyAndNeverAdded) {
  CostTable costs;
  costs.Add("i-1", At(0), At(1), 10.0);
  costs.Add("i-2", At(0), At(1), 10.0);
  costs.currency = std::vector<std::string>{"USD", "EUR"};
  InventoryTable inventory;
  inventory.AddResource("i-1", 1);
  inventory.AddResource("i-2", 1);
  SampleTable samples;
  samples.AddSeries(At(0), At(1), "i-1", 0, "job", 1, 1, 0);
  samples.AddSeries(At(0), At(1), "i-2", 0, "job", 1, 1, 0);
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a,
                               Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, {}));
  ASSERT_EQ(a.keys.size(), 2u);
  EXPECT_EQ(a.keys[1].name, "currency");
  // __idle__ EUR, __idle__ USD, job EUR, job USD.
  ASSERT_EQ(a.size(), 4u);
  auto key = [&](int k, size_t row) { return a.keys[k].dictionary[a.keys[k].codes[row]]; };
  EXPECT_EQ(key(0, 2), "job");
  EXPECT_EQ(key(1, 2), "EUR");
  EXPECT_EQ(key(0, 3), "job");
  EXPECT_EQ(key(1, 3), "USD");
  EXPECT_DOUBLE_EQ(a.cost[2], 10.0);
  EXPECT_DOUBLE_EQ(a.cost[3], 10.0);
  ASSERT_EQ(a.join.size(), 2u);
  EXPECT_EQ(a.join.currency[0], "USD");
  EXPECT_EQ(a.join.currency[1], "EUR");

  costs.currency->at(1) = "";
  EXPECT_THAT(Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("costs: row 1, column 'currency'")));
}

TEST(Allocate, QuantityHoursBoundsTheLineCapacity) {
  // A daily line of a 2-GPU VM that ran 12 h: C = 2 * 12 h.
  CostTable costs;
  costs.Add("i-1", At(0), At(24), 24.0);
  costs.quantity_hours = std::vector<double>{12.0};
  InventoryTable inventory;
  inventory.AddResource("i-1", 2);
  SampleTable samples;
  samples.AddSeries(At(0), At(6), "i-1", 0, "job", 1, 1, 0);
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a,
                               Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, {}));
  EXPECT_NEAR(a.cost[RowOf(a, "job")], 6.0, 1e-12);  // 6 of 24 GPU-hours
  EXPECT_NEAR(a.cost[RowOf(a, "__idle__")], 18.0, 1e-12);
  EXPECT_NEAR(a.gpu_hours[RowOf(a, "__idle__")], 18.0, 1e-12);
  EXPECT_NEAR(a.join.billed_gpu_hours[0], 24.0, 1e-12);
  // NaN is the whole period.
  costs.quantity_hours = std::vector<double>{std::numeric_limits<double>::quiet_NaN()};
  GPUCOST_ASSERT_OK_AND_ASSIGN(a, Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, {}));
  EXPECT_NEAR(a.cost[RowOf(a, "job")], 3.0, 1e-12);
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity()}) {
    costs.quantity_hours = std::vector<double>{bad};
    EXPECT_THAT(Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, {}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("costs: row 0, column 'quantity_hours'")));
  }
}

TEST(Allocate, PrimaryLinesCountHoursOnce) {
  // GCP bills one VM-hour as GPU, cores and memory lines; the GPU SKU is primary.
  CostTable costs;
  costs.Add("vm-1", At(0), At(1), 5.0);
  costs.Add("vm-1", At(0), At(1), 2.0);
  costs.Add("vm-1", At(0), At(1), 1.0);
  costs.primary = std::vector<uint8_t>{1, 0, 0};
  InventoryTable inventory;
  inventory.AddResource("vm-1", 1);
  SampleTable samples;
  samples.AddSeries(At(0), At(0, 30), "vm-1", 0, "job", 1, 1, 0);
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a,
                               Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, {}));
  EXPECT_NEAR(a.cost[RowOf(a, "job")], 4.0, 1e-12);
  EXPECT_NEAR(a.gpu_hours[RowOf(a, "job")], 0.5, 1e-12);
  EXPECT_NEAR(a.gpu_hours[RowOf(a, "__idle__")], 0.5, 1e-12);
  EXPECT_NEAR(a.cost[RowOf(a, "__idle__")], 4.0, 1e-12);
  EXPECT_EQ(a.diagnostics.lines_primary_overlap, 0);
  EXPECT_EQ(a.join.primary_lines[0], 1);
  EXPECT_NEAR(a.join.billed_gpu_hours[0], 1.0, 1e-12);

  costs.primary = std::vector<uint8_t>{1, 1, 0};  // a reader mistake: counted twice, and reported
  GPUCOST_ASSERT_OK_AND_ASSIGN(a, Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, {}));
  EXPECT_NEAR(a.gpu_hours[RowOf(a, "job")], 1.0, 1e-12);
  EXPECT_EQ(a.diagnostics.lines_primary_overlap, 2);
}

TEST(Allocate, PrimaryOverlapCountsOnlyOverlappingLinesOfOneResource) {
  CostTable costs;
  costs.Add("a", At(0), At(2), 1.0);
  costs.Add("a", At(1), At(3), 1.0);  // overlaps the first
  costs.Add("a", At(3), At(4), 1.0);  // touches, does not overlap
  costs.Add("b", At(0), At(2), 1.0);  // another resource
  InventoryTable inventory;
  inventory.AddResource("a", 1);
  SampleTable samples;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a,
                               Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, {}));
  EXPECT_EQ(a.diagnostics.lines_primary_overlap, 2);
}

TEST(Allocate, JoinTableAccountsForEveryLineAndSample) {
  CostTable costs;
  costs.Add("i-1", At(0), At(1), 1.0);
  costs.Add("i-1", At(1), At(2), 2.0);  // unobserved
  costs.Add("i-3", At(0), At(1), 4.0);  // not in the inventory
  InventoryTable inventory;
  inventory.AddResource("i-1", 1);
  SampleTable samples;
  samples.Add(At(0), "i-1", 0, "job", 0.5, 1, 0);
  samples.Add(At(0, 1), "i-1", 0, "", 1, 0, 0);
  samples.Add(At(5), "i-1", 0, "late", 1, 1, 0);  // outside every line
  samples.Add(At(0), "i-9", 2, "ghost", 1, 1, 0);  // only in the telemetry
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a,
                               Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, {}));
  const JoinTable& j = a.join;
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j.resource_id[0], "i-1");
  EXPECT_EQ(j.resource_id[1], "i-3");
  EXPECT_EQ(j.resource_id[2], "i-9");
  EXPECT_EQ(j.in_inventory[0], 1);
  EXPECT_EQ(j.in_inventory[1], 0);
  EXPECT_EQ(j.lines[0], 2);
  EXPECT_DOUBLE_EQ(j.cost[0], 3.0);
  EXPECT_DOUBLE_EQ(j.cost_observed[0], 1.0);
  EXPECT_DOUBLE_EQ(j.cost_unobserved[0], 2.0);
  EXPECT_DOUBLE_EQ(j.cost_unattributed[1], 4.0);
  EXPECT_DOUBLE_EQ(j.billed_gpu_hours[0], 2.0);
  EXPECT_DOUBLE_EQ(j.billed_gpu_hours[1], 0.0);
  EXPECT_EQ(j.samples[0], 3);
  EXPECT_EQ(j.samples_no_consumer[0], 1);
  EXPECT_EQ(j.samples_outside_lines[0], 1);
  EXPECT_NEAR(j.unjoined_gpu_hours[0], 1.0 / 60, 1e-12);
  EXPECT_EQ(j.samples[2], 1);
  EXPECT_EQ(j.samples_unknown_resource[2], 1);
  EXPECT_NEAR(j.unjoined_gpu_hours[2], 1.0 / 60, 1e-12);
  EXPECT_EQ(j.lines_start[0], At(0));
  EXPECT_EQ(j.lines_end[0], At(2));
  EXPECT_EQ(j.samples_start[0], At(0));
  EXPECT_EQ(j.samples_end[0], At(5, 1));
  EXPECT_EQ(j.samples_start[1], kMissingInstant);
  EXPECT_EQ(j.lines_start[2], kMissingInstant);
}

TEST(Allocate, IntervalIsInferredFromTheSpacing) {
  for (int step_minutes : {1, 5}) {
    CostTable costs;
    costs.Add("i-1", At(0), At(1), 6.0);
    InventoryTable inventory;
    inventory.AddResource("i-1", 1);
    SampleTable samples;
    for (int m = 0; m < 30; m += step_minutes) samples.Add(At(0, m), "i-1", 0, "job", 1, 1, 0);
    GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a,
                                 Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, {}));
    EXPECT_NEAR(a.cost[RowOf(a, "job")], 3.0, 1e-12) << step_minutes;
    ASSERT_TRUE(a.diagnostics.interval_seconds.has_value());
    EXPECT_DOUBLE_EQ(*a.diagnostics.interval_seconds, 60.0 * step_minutes);
  }
}

TEST(Allocate, SeriesSpacingDisagreeingWithTheIntervalIsRefused) {
  CostTable costs;
  costs.Add("i-1", At(0), At(1), 6.0);
  InventoryTable inventory;
  inventory.AddResource("i-1", 1);
  SampleTable samples;
  for (int k = 0; k < 12; ++k) samples.Add(At(0) + k * 5 * kNanosPerSecond, "i-1", 0, "job", 1, 1, 0);
  AllocationPolicy policy;
  policy.interval_seconds = 60;
  EXPECT_THAT(Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, policy),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("usage: row 0"), HasSubstr("'i-1', device 0, consumer 'job'"),
                             HasSubstr("every 5 s"), HasSubstr("interval is 60 s (given)"))));
  // With durations there is no interval, and nothing to check.
  samples.duration = std::vector<int64_t>(samples.timestamp.size(), 5 * kNanosPerSecond);
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a,
                               Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, policy));
  EXPECT_FALSE(a.diagnostics.interval_seconds.has_value());
  EXPECT_NEAR(a.cost[RowOf(a, "job")], 0.1, 1e-12);
}

TEST_F(WorkedExample, RowsReadTwiceAreDroppedAndCounted) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation whole, Run({}));
  const size_t n = samples_.timestamp.size();
  // One shot: every third row again, at the end.
  SampleTable twice = samples_;
  for (size_t i = 0; i < n; i += 3) {
    twice.Add(samples_.timestamp[i], samples_.resource_id[i], samples_.device[i], samples_.consumer[i],
              samples_.share[i], samples_.util[i], samples_.mem_used[i]);
  }
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Allocate(costs_.columns(), twice.columns(), inventory_.columns(),
                                                      nullptr, {}));
  ASSERT_EQ(a.size(), whole.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a.cost[i], whole.cost[i], 1e-12);
  EXPECT_EQ(a.diagnostics.samples_duplicate, 40);
  EXPECT_EQ(a.diagnostics.samples_total, 160);
  EXPECT_EQ(a.diagnostics.samples_used + a.diagnostics.samples_no_consumer, 120);
  // A bad row after the copies is still named by its place in the input.
  twice.share.back() = 3.0;
  EXPECT_THAT(Allocate(costs_.columns(), twice.columns(), inventory_.columns(), nullptr, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("row 159, column 'share'")));
  // Same series and instant, another value (two containers of one pod): kept.
  SampleTable containers = samples_;
  containers.Add(samples_.timestamp[0], "i-1", 0, "train-a", 0.5, 0.1, 0);
  GPUCOST_ASSERT_OK_AND_ASSIGN(a, Allocate(costs_.columns(), containers.columns(), inventory_.columns(), nullptr,
                                           {}));
  EXPECT_EQ(a.diagnostics.samples_duplicate, 0);
  EXPECT_NEAR(a.gpu_hours[RowOf(a, "train-a")], 1.0 + 0.5 / 60, 1e-12);
  // A stream: the same file twice (two replicas), in two chunks.
  GPUCOST_ASSERT_OK_AND_ASSIGN(auto allocator, Allocator::Create(costs_.columns(), inventory_.columns(), nullptr, {}));
  ASSERT_THAT(allocator->AddSamples(samples_.columns()), IsOk());
  ASSERT_THAT(allocator->AddSamples(samples_.columns()), IsOk());
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation streamed, allocator->Finish());
  for (size_t i = 0; i < streamed.size(); ++i) EXPECT_NEAR(streamed.cost[i], whole.cost[i], 1e-12);
  EXPECT_EQ(streamed.diagnostics.samples_duplicate, 120);
}

TEST_F(BadInput, UnobservedIsAReservedName) {
  samples_.consumer[0] = "__unobserved__";
  EXPECT_THAT(RunStatus(), IsBad("usage", "row 0, column 'consumer'"));
}

// Rows in any order give the result of the rows in series order: evenly spaced
// series are put in time order by their slot (no comparison sort); a series
// with a gap, and one with a row read twice, take the sorting path.
TEST(Allocate, ShuffledRowsEqualSeriesOrder) {
  CostTable costs;
  InventoryTable inventory;
  SampleTable samples;
  for (int r = 0; r < 6; ++r) {
    const std::string id = "i-" + std::to_string(r);
    inventory.AddResource(id, 2);
    for (int h = 0; h < 6; ++h) costs.Add(id, At(h), At(h + 1), 3.0 + r);
    for (int64_t t = At(0); t < At(6); t += kMinute) {
      const bool in_gap = r == 1 && t >= At(2) && t < At(2) + 3 * kMinute;  // three minutes missing
      if (!in_gap) samples.Add(t, id, 0, "pod-" + std::to_string(r % 4), 1.0, 0.5, kGiB);
    }
    samples.AddSeries(At(1), At(4), id, 1, r == 2 ? "" : "pod-9", 0.5, 0.25, 2 * kGiB);
  }
  samples.Add(samples.timestamp[500], samples.resource_id[500], samples.device[500], samples.consumer[500],
              samples.share[500], samples.util[500], samples.mem_used[500]);  // a row read twice
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation ordered,
                               Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, {}));
  std::vector<size_t> order(samples.timestamp.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  SampleTable shuffled;
  for (size_t i : order) {
    shuffled.Add(samples.timestamp[i], samples.resource_id[i], samples.device[i], samples.consumer[i],
                 samples.share[i], samples.util[i], samples.mem_used[i]);
  }
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a,
                               Allocate(costs.columns(), shuffled.columns(), inventory.columns(), nullptr, {}));
  EXPECT_EQ(a.diagnostics.samples_duplicate, 1);
  EXPECT_EQ(a.diagnostics.samples_duplicate, ordered.diagnostics.samples_duplicate);
  EXPECT_EQ(a.diagnostics.samples_used, ordered.diagnostics.samples_used);
  ASSERT_TRUE(a.diagnostics.interval_seconds.has_value());
  EXPECT_DOUBLE_EQ(*a.diagnostics.interval_seconds, 60.0);
  ASSERT_EQ(a.size(), ordered.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a.keys[0].codes[i], ordered.keys[0].codes[i]);
    EXPECT_NEAR(a.cost[i], ordered.cost[i], 1e-12 * std::abs(ordered.cost[i]) + 1e-12);
    EXPECT_NEAR(a.gpu_hours[i], ordered.gpu_hours[i], 1e-12 * ordered.gpu_hours[i] + 1e-12);
  }
}

TEST(AllocateConsumers, AnyDictionaryOrderGivesOneResult) {
  // The same samples with the consumer dictionary sorted (taken as it is,
  // unhashed), reversed, with a name twice under two codes, and split over
  // two chunks (sorted, then not): one result, rows in name order.
  CostTable costs;
  InventoryTable inventory;
  inventory.AddResource("i-0", 4);
  costs.Add("i-0", At(0), At(2), 8.0);
  const std::vector<std::string> pods = {"a", "b", "c", "d"};
  struct Row {
    int64_t t;
    int device;
    std::string pod;
  };
  std::vector<Row> rows;
  for (int64_t t = At(0); t < At(2); t += kMinute) {
    for (int d = 0; d < 4; ++d) {
      const bool late = t >= At(1);  // b and d start in the second hour, after a free GPU
      const std::string& pod = pods[d];
      rows.push_back({t, d, late || (d % 2 == 0) ? pod : std::string()});
    }
  }
  auto encode = [&](const std::vector<Row>& part, const std::vector<std::string>& dictionary,
                    std::vector<std::string_view>& views, std::vector<int32_t>& codes, SampleTable& table) {
    views.assign(dictionary.begin(), dictionary.end());
    codes.clear();
    table = SampleTable();
    for (const Row& r : part) {
      table.Add(r.t, "i-0", r.device, r.pod, 1, 0.5, 0);
      if (r.pod.empty()) {
        codes.push_back(kNullCode);
        continue;
      }
      // The last code of the name, so that a name twice uses its second code.
      const auto at = std::find(dictionary.rbegin(), dictionary.rend(), r.pod);
      codes.push_back(static_cast<int32_t>(dictionary.rend() - at - 1));
    }
    SampleColumns columns = table.columns();
    columns.consumer = StringColumn{codes, views};
    return columns;
  };
  auto allocate = [&](const std::vector<std::vector<Row>>& parts,
                      const std::vector<std::vector<std::string>>& dictionaries) -> absl::StatusOr<Allocation> {
    GPUCOST_ASSIGN_OR_RETURN(auto allocator, Allocator::Create(costs.columns(), inventory.columns(), nullptr, {}));
    for (size_t k = 0; k < parts.size(); ++k) {
      std::vector<std::string_view> views;
      std::vector<int32_t> codes;
      SampleTable table;
      GPUCOST_RETURN_IF_ERROR(allocator->AddSamples(encode(parts[k], dictionaries[k], views, codes, table)));
    }
    return allocator->Finish();
  };
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation sorted, allocate({rows}, {{"", "a", "b", "c", "d"}}));
  const std::vector<std::vector<Row>> halves = {std::vector<Row>(rows.begin(), rows.begin() + 240),
                                                std::vector<Row>(rows.begin() + 240, rows.end())};
  for (const auto& [parts, dictionaries] :
       std::vector<std::pair<std::vector<std::vector<Row>>, std::vector<std::vector<std::string>>>>{
           {{rows}, {{"d", "c", "b", "a", ""}}},
           {{rows}, {{"a", "b", "b", "c", "d"}}},
           {halves, {{"a", "c"}, {"d", "c", "b", "a"}}}}) {
    GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation other, allocate(parts, dictionaries));
    ASSERT_EQ(other.size(), sorted.size());
    EXPECT_EQ(other.keys[0].dictionary, sorted.keys[0].dictionary);
    for (size_t i = 0; i < sorted.size(); ++i) {
      EXPECT_EQ(other.keys[0].codes[i], sorted.keys[0].codes[i]);
      EXPECT_DOUBLE_EQ(other.cost[i], sorted.cost[i]);
    }
  }
  // a and c held both hours, b and d the second: 2 + 2 + 1 + 1 of 8 GPU-hours, 2 idle.
  EXPECT_DOUBLE_EQ(sorted.cost[RowOf(sorted, "a")], 2.0);
  EXPECT_DOUBLE_EQ(sorted.cost[RowOf(sorted, "b")], 1.0);
  EXPECT_DOUBLE_EQ(sorted.cost[RowOf(sorted, "__idle__")], 2.0);
  EXPECT_TRUE(std::is_sorted(sorted.keys[0].dictionary.begin(), sorted.keys[0].dictionary.end()));
  for (size_t i = 1; i < sorted.size(); ++i) EXPECT_LT(sorted.keys[0].codes[i - 1], sorted.keys[0].codes[i]);
}

}  // namespace
}  // namespace gpucost
