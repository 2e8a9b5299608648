// AllocationPolicy::ordered_chunks: chunks promised never to go back in time
// give the result of chunks in any order, keep the history of earlier
// chunks' rows only at their newest instant, and a chunk that breaks the
// promise is refused with its row.
#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

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
using ::gpucost::testing::IsOk;
using ::gpucost::testing::kGiB;
using ::gpucost::testing::kMinute;
using ::gpucost::testing::SampleTable;
using ::gpucost::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// The rows of `all` with an instant in [from, to), in their order.
SampleTable RowsIn(const SampleTable& all, int64_t from, int64_t to) {
  SampleTable out;
  for (size_t i = 0; i < all.timestamp.size(); ++i) {
    if (all.timestamp[i] < from || all.timestamp[i] >= to) continue;
    out.Add(all.timestamp[i], all.resource_id[i], all.device[i], all.consumer[i], all.share[i], all.util[i],
            all.mem_used[i]);
  }
  return out;
}

// `table`'s rows in a random order.
SampleTable Shuffled(const SampleTable& table, std::mt19937& rng) {
  std::vector<size_t> order(table.timestamp.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  SampleTable out;
  for (size_t i : order) {
    out.Add(table.timestamp[i], table.resource_id[i], table.device[i], table.consumer[i], table.share[i],
            table.util[i], table.mem_used[i]);
  }
  return out;
}

// `chunks` fed to an allocator with and without the promise.
absl::StatusOr<Allocation> Stream(CostTable& costs, InventoryTable& inventory, std::vector<SampleTable>& chunks,
                                  AllocationPolicy policy, bool ordered) {
  policy.ordered_chunks = ordered;
  GPUCOST_ASSIGN_OR_RETURN(auto allocator, Allocator::Create(costs.columns(), inventory.columns(), nullptr, policy));
  for (SampleTable& chunk : chunks) GPUCOST_RETURN_IF_ERROR(allocator->AddSamples(chunk.columns()));
  return allocator->Finish();
}

// Four hours of two nodes, pods coming and going, rows of each hour in
// scrape order (every series at one instant, then the next instant), some
// read twice within their hour, one hour missing.
class OrderedDays : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int h = 0; h < 4; ++h) {
      costs_.Add("i-1", At(h), At(h + 1), 8.0);
      costs_.Add("i-2", At(h), At(h + 1), 4.0);
    }
    inventory_.AddResource("i-1", 2, 40 * kGiB);
    inventory_.AddResource("i-2", 1, 40 * kGiB);
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> util(0, 1);
    for (int64_t t = At(0); t < At(4); t += kMinute) {
      if (t >= At(2) && t < At(2, 20)) continue;  // nothing read for 20 minutes
      const int64_t minute = (t - At(0)) / kMinute;
      samples_.Add(t, "i-1", 0, minute < 90 ? "train-a" : "train-b", 1.0, util(rng), 10 * kGiB);
      samples_.Add(t, "i-1", 1, "nb-c", 0.5, util(rng), 2 * kGiB);
      samples_.Add(t, "i-2", 0, minute % 50 < 30 ? "infer-d" : "", 1.0, util(rng), 0);
      if (minute % 17 == 0) {  // the last row again: dropped within the chunk
        samples_.Add(t, "i-2", 0, samples_.consumer.back(), 1.0, samples_.util.back(), 0);
      }
    }
    policy_.interval_seconds = 60;
  }
  std::vector<SampleTable> Hours() const {
    std::vector<SampleTable> out;
    for (int h = 0; h < 4; ++h) out.push_back(RowsIn(samples_, At(h), At(h + 1)));
    return out;
  }
  CostTable costs_;
  InventoryTable inventory_;
  SampleTable samples_;
  AllocationPolicy policy_;
};

TEST_F(OrderedDays, SameResultAsChunksInAnyOrder) {
  const int64_t saved = internal::MinSamplesPerWorker();
  internal::SetMinSamplesPerWorkerForTesting(1);  // three threads really split the rows
  for (int threads : {1, 3}) {
    policy_.threads = threads;
    std::vector<SampleTable> hours = Hours();
    GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation any, Stream(costs_, inventory_, hours, policy_, false));
    GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation ordered, Stream(costs_, inventory_, hours, policy_, true));
    ASSERT_EQ(ordered.size(), any.size());
    for (size_t i = 0; i < any.size(); ++i) {
      EXPECT_EQ(ordered.keys[0].codes[i], any.keys[0].codes[i]);
      EXPECT_EQ(ordered.cost[i], any.cost[i]) << i;
      EXPECT_EQ(ordered.idle_cost[i], any.idle_cost[i]) << i;
      EXPECT_EQ(ordered.gpu_hours[i], any.gpu_hours[i]) << i;
      EXPECT_EQ(ordered.effective_gpu_hours[i], any.effective_gpu_hours[i]) << i;
      EXPECT_EQ(ordered.mem_gib_hours[i], any.mem_gib_hours[i]) << i;
    }
    EXPECT_EQ(ordered.keys[0].dictionary, any.keys[0].dictionary);
    EXPECT_EQ(ordered.diagnostics.samples_total, any.diagnostics.samples_total);
    EXPECT_EQ(ordered.diagnostics.samples_duplicate, any.diagnostics.samples_duplicate);
    EXPECT_GT(ordered.diagnostics.samples_duplicate, 0);
    EXPECT_EQ(ordered.diagnostics.samples_used, any.diagnostics.samples_used);
    EXPECT_EQ(ordered.diagnostics.lines_unobserved, any.diagnostics.lines_unobserved);
    double total = 0;
    for (double c : ordered.cost) total += c;
    EXPECT_NEAR(total, 48.0, 1e-9);  // every dollar of the bill, once
  }
  internal::SetMinSamplesPerWorkerForTesting(saved);
}

TEST_F(OrderedDays, AChunkGoingBackInTimeIsRefusedWithItsRow) {
  std::vector<SampleTable> hours = Hours();
  // The second hour again (two replicas read one after the other): without
  // the promise its rows are copies, dropped and counted.
  hours.push_back(hours[1]);
  std::vector<SampleTable> once = Hours();
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation base, Stream(costs_, inventory_, once, policy_, false));
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation any, Stream(costs_, inventory_, hours, policy_, false));
  EXPECT_EQ(any.diagnostics.samples_duplicate,
            base.diagnostics.samples_duplicate + static_cast<int64_t>(hours[1].timestamp.size()));
  EXPECT_EQ(any.cost, base.cost);
  // With it, refused at the chunk's first row, and Finish() refuses too.
  policy_.ordered_chunks = true;
  GPUCOST_ASSERT_OK_AND_ASSIGN(auto allocator,
                               Allocator::Create(costs_.columns(), inventory_.columns(), nullptr, policy_));
  int64_t rows = 0;
  for (size_t c = 0; c + 1 < hours.size(); ++c) {
    ASSERT_THAT(allocator->AddSamples(hours[c].columns()), IsOk());
    rows += static_cast<int64_t>(hours[c].timestamp.size());
  }
  EXPECT_FALSE(allocator->WentBackInTime());
  const auto refused = AllOf(HasSubstr(absl::StrCat("usage: row ", rows, ", column 'timestamp'")),
                             HasSubstr("2026-03-01T01:00:00Z is before 2026-03-01T03:59:00Z"),
                             HasSubstr(absl::StrCat("this chunk starts at row ", rows)),
                             HasSubstr("ordered_chunks"));
  EXPECT_THAT(allocator->AddSamples(hours.back().columns()), StatusIs(absl::StatusCode::kInvalidArgument, refused));
  EXPECT_TRUE(allocator->WentBackInTime());  // for that alone: a caller may read its chunks again, unordered
  EXPECT_THAT(allocator->Finish(), StatusIs(absl::StatusCode::kInvalidArgument, refused));
  // Refused for a bad value instead, it did not go back in time.
  GPUCOST_ASSERT_OK_AND_ASSIGN(auto bad_value,
                               Allocator::Create(costs_.columns(), inventory_.columns(), nullptr, policy_));
  SampleTable bad = hours[0];
  bad.util[0] = 1.5;
  EXPECT_THAT(bad_value->AddSamples(bad.columns()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("column 'util'")));
  EXPECT_FALSE(bad_value->WentBackInTime());
}

TEST_F(OrderedDays, AChunkMayShareTheNewestInstantAndItsCopiesThereAreDropped) {
  // The table sorted by time, sliced every 7 rows (instants split between
  // chunks), each slice's last row again at the start of the next.
  std::mt19937 rng(5);
  const SampleTable sorted = Shuffled(samples_, rng);
  std::vector<size_t> order(sorted.timestamp.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sorted.timestamp[a] < sorted.timestamp[b]; });
  std::vector<SampleTable> slices;
  for (size_t lo = 0; lo < order.size(); lo += 7) {
    SampleTable slice;
    const size_t from = lo >= 1 ? lo - 1 : 0;  // the slice before's last row, read again
    for (size_t k = from; k < std::min(order.size(), lo + 7); ++k) {
      const size_t i = order[k];
      slice.Add(sorted.timestamp[i], sorted.resource_id[i], sorted.device[i], sorted.consumer[i], sorted.share[i],
                sorted.util[i], sorted.mem_used[i]);
    }
    slices.push_back(std::move(slice));
  }
  std::vector<SampleTable> hours = Hours();
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation base, Stream(costs_, inventory_, hours, policy_, false));
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation any, Stream(costs_, inventory_, slices, policy_, false));
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation ordered, Stream(costs_, inventory_, slices, policy_, true));
  EXPECT_EQ(ordered.cost, any.cost);
  EXPECT_EQ(ordered.gpu_hours, any.gpu_hours);
  EXPECT_EQ(ordered.diagnostics.samples_duplicate, any.diagnostics.samples_duplicate);
  // The rows read again are dropped, not counted twice: the hours' result.
  ASSERT_EQ(ordered.size(), base.size());
  for (size_t i = 0; i < base.size(); ++i) EXPECT_NEAR(ordered.cost[i], base.cost[i], 1e-12) << i;
  EXPECT_EQ(ordered.diagnostics.samples_duplicate,
            base.diagnostics.samples_duplicate + static_cast<int64_t>(slices.size() - 1));
  // A row a nanosecond before the newest instant of the chunks before: refused.
  std::vector<SampleTable> chunks = {RowsIn(samples_, At(0), At(1)), RowsIn(samples_, At(1), At(2))};
  chunks[1].timestamp[1] = At(0, 59) - 1;
  EXPECT_THAT(Stream(costs_, inventory_, chunks, policy_, true),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(absl::StrCat("row ", chunks[0].timestamp.size() + 1, ", column 'timestamp'")),
                             HasSubstr("2026-03-01T00:58:59.999999999Z is before 2026-03-01T00:59:00Z"))));
  // Rows of one chunk in any order are fine: only earlier chunks bound them.
  std::vector<SampleTable> shuffled = Hours();
  shuffled[2] = Shuffled(shuffled[2], rng);
  EXPECT_THAT(Stream(costs_, inventory_, shuffled, policy_, true).status(), IsOk());
}

// One series, its gaps drawn around the bounds [30 s, 120 s] of a 60 s
// interval, equal to them too, in three time-ordered chunks: Finish()'s
// check on the whole series says what it says from the history.
TEST(OrderedChunks, SpacingCheckWithoutHistoryAgreesWithIt) {
  const std::vector<int64_t> gaps_s = {20, 29, 30, 31, 45, 60, 90, 119, 120, 121, 150, 300};
  std::mt19937 rng(11);
  int refused = 0, exact = 0;
  for (int trial = 0; trial < 400; ++trial) {
    CostTable costs;
    costs.Add("i-1", At(0), At(48), 10.0);
    InventoryTable inventory;
    inventory.AddResource("i-1", 1);
    const int count = 2 + static_cast<int>(rng() % 12);
    // Mostly gaps of one or two kinds, so medians land on and across the bounds.
    const int64_t a = gaps_s[rng() % gaps_s.size()], b = gaps_s[rng() % gaps_s.size()];
    SampleTable all;
    int64_t t = At(0);
    for (int k = 0; k < count; ++k) {
      all.Add(t, "i-1", 0, "job", 1, 1, 0);
      if (rng() % 5 == 0) all.Add(t, "i-1", 0, "job", 1, 1, 0);  // read twice
      t += (rng() % 3 == 0 ? b : rng() % 7 == 0 ? gaps_s[rng() % gaps_s.size()] : a) * kNanosPerSecond;
    }
    // Three chunks cut at instants, so no instant is in two of them.
    std::vector<int64_t> cuts = {all.timestamp[rng() % all.timestamp.size()],
                                 all.timestamp[rng() % all.timestamp.size()]};
    std::sort(cuts.begin(), cuts.end());
    std::vector<SampleTable> chunks = {RowsIn(all, At(0), cuts[0]), RowsIn(all, cuts[0], cuts[1]),
                                       RowsIn(all, cuts[1], At(48))};
    if (trial % 2 == 1) {  // rows out of time order within their chunk (the series is gathered and sorted)
      for (SampleTable& chunk : chunks) chunk = Shuffled(chunk, rng);
    }
    AllocationPolicy policy;
    policy.interval_seconds = 60;
    const absl::StatusOr<Allocation> any = Stream(costs, inventory, chunks, policy, false);
    const absl::StatusOr<Allocation> ordered = Stream(costs, inventory, chunks, policy, true);
    ASSERT_EQ(ordered.ok(), any.ok()) << trial << ": " << any.status() << " / " << ordered.status();
    if (any.ok()) {
      EXPECT_EQ(ordered->cost, any->cost);
      continue;
    }
    ++refused;
    const std::string message(ordered.status().message());
    if (message.find("has a sample every") != std::string::npos) {
      EXPECT_EQ(ordered.status(), any.status()) << trial;
      ++exact;
    } else {
      // The median outside the bounds, and which side, without its value.
      EXPECT_THAT(message, AllOf(HasSubstr("(resource_id 'i-1', device 0, consumer 'job') has a median spacing "),
                                 HasSubstr("but the interval is 60 s (given)")));
      const bool under = message.find("under 30 s") != std::string::npos;
      EXPECT_TRUE(under || message.find("over 120 s") != std::string::npos) << message;
      EXPECT_THAT(std::string(any.status().message()), HasSubstr("has a sample every")) << trial;
    }
  }
  EXPECT_GT(refused, 50);  // both kinds of message were reached
  EXPECT_GT(exact, 0);
}

}  // namespace
}  // namespace gpucost
