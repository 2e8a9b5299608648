// SEMANTICS 10: down time, by hand.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gpucost/allocate.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"
#include "testing/tables.h"
#include "engine/series_scan.h"

namespace gpucost {
namespace {

using ::gpucost::testing::At;
using ::gpucost::testing::CostTable;
using ::gpucost::testing::InventoryTable;
using ::gpucost::testing::kMinute;
using ::gpucost::testing::RowOf;
using ::gpucost::testing::SampleTable;
using ::gpucost::testing::StatusIs;
using ::testing::HasSubstr;

struct DowntimeTable {
  std::vector<std::string> resource_id;
  std::vector<int64_t> start, end;
  EncodedStrings ids;

  void Add(std::string r, int64_t s, int64_t e) {
    resource_id.push_back(std::move(r));
    start.push_back(s);
    end.push_back(e);
  }
  DowntimeColumns columns() {
    ids = EncodeStrings(resource_id);
    return {.resource_id = ids.view(), .start = start, .end = end};
  }
};

double CostOf(const Allocation& a, const std::string& consumer) {
  const int row = RowOf(a, consumer);
  return row < 0 ? 0.0 : a.cost[row];
}
double HoursOf(const Allocation& a, const std::string& consumer) {
  const int row = RowOf(a, consumer);
  return row < 0 ? 0.0 : a.gpu_hours[row];
}

class Downtime : public ::testing::Test {
 protected:
  void SetUp() override {
    inventory.AddResource("n1", 2);
    policy.interval_seconds = 60;
  }
  absl::StatusOr<Allocation> Run() {
    DowntimeColumns d = down.columns();
    CostColumns c = costs.columns();
    SampleColumns s = samples.columns();
    return Allocate(c, s, inventory.columns(), nullptr, policy, &d);
  }
  CostTable costs;
  SampleTable samples;
  InventoryTable inventory;
  DowntimeTable down;
  AllocationPolicy policy;
};

// $8 for 4 hours of 2 GPUs; down 1 hour of the 4. Job A holds GPU 0 all 4
// hours, GPU 1 is reported free: __down__ $2 (2 GPU-h); the up part is a
// $6 line of 6 GPU-h, of which A held 3 (its busy samples in the window are
// dropped): A $3, idle $3 (3 GPU-h).
TEST_F(Downtime, DownPartGoesToDownAndTheRestIsProratedOnUpTime) {
  costs.Add("n1", At(0), At(4), 8.0);
  samples.AddSeries(At(0), At(4), "n1", 0, "A", 1.0, 1.0, 0.0);
  samples.AddSeries(At(0), At(4), "n1", 1, "", 1.0, 0.0, 0.0);
  down.Add("n1", At(1), At(2));
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Run());
  EXPECT_DOUBLE_EQ(CostOf(a, "__down__"), 2.0);
  EXPECT_DOUBLE_EQ(HoursOf(a, "__down__"), 2.0);
  EXPECT_DOUBLE_EQ(a.idle_cost[RowOf(a, "__down__")], 0.0);
  EXPECT_DOUBLE_EQ(CostOf(a, "A"), 3.0);
  EXPECT_DOUBLE_EQ(HoursOf(a, "A"), 3.0);
  EXPECT_DOUBLE_EQ(CostOf(a, "__idle__"), 3.0);
  EXPECT_DOUBLE_EQ(HoursOf(a, "__idle__"), 3.0);
  const Diagnostics& d = a.diagnostics;
  EXPECT_EQ(d.lines_down, 1);
  EXPECT_EQ(d.samples_in_downtime, 60);
  EXPECT_EQ(d.samples_used, 180);
  EXPECT_EQ(d.samples_no_consumer, 240);  // free samples stay free, down or not
  EXPECT_EQ(d.samples_total, d.samples_duplicate + d.samples_no_consumer + d.samples_unknown_resource +
                                 d.samples_outside_lines + d.samples_used + d.samples_in_downtime);
  ASSERT_EQ(a.join.size(), 1u);
  EXPECT_DOUBLE_EQ(a.join.cost_down[0], 2.0);
  EXPECT_DOUBLE_EQ(a.join.cost_observed[0], 6.0);
  EXPECT_EQ(a.join.samples_in_downtime[0], 60);
}

// A sample whose instant is up counts its overlap with up time only: at
// 00:59:30 for 60 s, 30 s before a window that starts at 01:00.
TEST_F(Downtime, SampleRunningIntoAWindowCountsItsUpPart) {
  costs.Add("n1", At(0), At(2), 4.0);  // $1 a GPU-hour
  samples.Add(At(0, 59) + 30 * kNanosPerSecond, "n1", 0, "A", 1.0, 1.0, 0.0);
  down.Add("n1", At(1), At(2));
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Run());
  EXPECT_DOUBLE_EQ(CostOf(a, "__down__"), 2.0);
  EXPECT_DOUBLE_EQ(HoursOf(a, "A"), 30.0 / 3600);
  EXPECT_DOUBLE_EQ(CostOf(a, "A"), 30.0 / 3600);
  EXPECT_EQ(a.diagnostics.samples_used, 1);
}

// Wholly down: all of it on __down__, never unobserved. Partly down with no
// sample: the up part is unobserved with the up time's GPU-hours. Free
// samples inside a window observe nothing.
TEST_F(Downtime, WhollyDownIsDownAndAnUnseenUpPartIsUnobserved) {
  costs.Add("n1", At(0), At(1), 5.0);  // wholly down
  costs.Add("n1", At(1), At(3), 4.0);  // down [1, 2), up [2, 3) unseen
  samples.AddSeries(At(1), At(2), "n1", 1, "", 1.0, 0.0, 0.0);
  down.Add("n1", At(0), At(2));
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Run());
  EXPECT_DOUBLE_EQ(CostOf(a, "__down__"), 7.0);
  EXPECT_DOUBLE_EQ(HoursOf(a, "__down__"), 4.0);
  EXPECT_DOUBLE_EQ(CostOf(a, "__unobserved__"), 2.0);
  EXPECT_DOUBLE_EQ(HoursOf(a, "__unobserved__"), 2.0);
  EXPECT_EQ(RowOf(a, "__idle__"), -1);
  EXPECT_EQ(a.diagnostics.lines_unobserved, 1);
  EXPECT_EQ(a.diagnostics.lines_down, 2);
  EXPECT_DOUBLE_EQ(a.join.cost_unobserved[0], 2.0);
  EXPECT_DOUBLE_EQ(a.join.cost_down[0], 7.0);
}

// Overlapping windows count once; a busy sample in a window of a resource
// never billed is dropped all the same; money is conserved.
TEST_F(Downtime, WindowsUniteAndMoneyIsConserved) {
  inventory.AddResource("n2", 1);
  costs.Add("n1", At(0), At(4), 8.0);
  samples.AddSeries(At(0), At(4), "n1", 0, "A", 1.0, 0.5, 0.0);
  samples.AddSeries(At(0), At(1), "n2", 0, "B", 1.0, 0.5, 0.0);
  down.Add("n1", At(1), At(2));
  down.Add("n1", At(1, 30), At(2, 30));  // [1, 2:30) in all: 1.5 h of 4
  down.Add("n2", At(0), At(1));
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Run());
  EXPECT_DOUBLE_EQ(CostOf(a, "__down__"), 8.0 * 1.5 / 4);
  EXPECT_EQ(a.diagnostics.samples_in_downtime, 90 + 60);
  EXPECT_EQ(a.diagnostics.samples_outside_lines, 0);
  double total = 0;
  for (double c : a.cost) total += c;
  EXPECT_DOUBLE_EQ(total, 8.0);
}

TEST_F(Downtime, DownHasItsOwnNameInLabelColumns) {
  costs.Add("n1", At(0), At(2), 4.0);
  samples.AddSeries(At(0), At(2), "n1", 0, "A", 1.0, 1.0, 0.0);
  down.Add("n1", At(1), At(2));
  std::vector<std::string> who = {"A"}, team = {"ml"};
  EncodedStrings w = EncodeStrings(who), t = EncodeStrings(team);
  WorkloadColumns workloads{w.view(), {{"team", t.view()}}};
  policy.by = {"team"};
  DowntimeColumns d = down.columns();
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Allocate(costs.columns(), samples.columns(), inventory.columns(),
                                                      &workloads, policy, &d));
  EXPECT_DOUBLE_EQ(CostOf(a, "__down__"), 2.0);
  EXPECT_DOUBLE_EQ(CostOf(a, "ml"), 1.0);
  EXPECT_DOUBLE_EQ(CostOf(a, "__idle__"), 1.0);
}

TEST_F(Downtime, WithoutWindowsNothingChanges) {
  costs.Add("n1", At(0), At(2), 4.0);
  samples.AddSeries(At(0), At(2), "n1", 0, "A", 1.0, 1.0, 0.0);
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation with_table, Run());  // an empty downtime table
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation without,
                               Allocate(costs.columns(), samples.columns(), inventory.columns(), nullptr, policy));
  EXPECT_EQ(with_table.cost, without.cost);
  EXPECT_EQ(with_table.keys[0].dictionary, without.keys[0].dictionary);  // no "__down__" entry
  EXPECT_EQ(without.diagnostics.lines_down, 0);
}

TEST_F(Downtime, BadWindowsAreRefusedByRow) {
  costs.Add("n1", At(0), At(2), 4.0);
  down.Add("n1", At(1), At(2));
  down.Add("n1", At(2), At(1));
  EXPECT_THAT(Run().status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("downtime: row 1, column 'end': end is not after start")));
  samples.Add(At(0), "n1", 0, "__down__", 1.0, 1.0, 0.0);
  down.start[1] = At(0);
  EXPECT_THAT(Run().status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("reserved name")));
}

// Streamed in chunks and split over threads: the same to the bit.
TEST_F(Downtime, SameResultForEveryThreadCountAndChunking) {
  for (int r = 0; r < 8; ++r) {
    const std::string name = absl::StrCat("m", r);
    inventory.AddResource(name, 2);
    costs.Add(name, At(0), At(6), 12.0 + r);
    samples.AddSeries(At(0), At(6), name, 0, absl::StrCat("job", r % 3), 1.0, 0.25 * (r % 4), 0.0);
    samples.AddSeries(At(0), At(6), name, 1, r % 2 ? "" : "x", 1.0, 0.5, 0.0);
    down.Add(name, At(r % 5, 7 * r), At(r % 5 + 1, 3 * r));
  }
  DowntimeColumns d = down.columns();
  const CostColumns c = costs.columns();
  const SampleColumns s = samples.columns();
  const int64_t saved = internal::MinSamplesPerWorker();
  internal::SetMinSamplesPerWorkerForTesting(1);
  policy.threads = 1;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation one, Allocate(c, s, inventory.columns(), nullptr, policy, &d));
  policy.threads = 3;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation three, Allocate(c, s, inventory.columns(), nullptr, policy, &d));
  GPUCOST_ASSERT_OK_AND_ASSIGN(auto streamed, Allocator::Create(c, inventory.columns(), nullptr, policy, &d));
  for (size_t begin = 0; begin < s.size(); begin += 1000) ASSERT_TRUE(streamed->AddSamples(s.Slice(begin, 1000)).ok());
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation chunked, streamed->Finish());
  internal::SetMinSamplesPerWorkerForTesting(saved);
  EXPECT_EQ(one.cost, three.cost);
  EXPECT_EQ(one.gpu_hours, three.gpu_hours);
  EXPECT_EQ(one.cost, chunked.cost);
  EXPECT_EQ(one.diagnostics.samples_in_downtime, chunked.diagnostics.samples_in_downtime);
  EXPECT_GT(one.diagnostics.samples_in_downtime, 0);
}

}  // namespace
}  // namespace gpucost
