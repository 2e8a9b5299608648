// The engine gives one result whatever the order of the rows and the number
// of threads (SEMANTICS 4's order invariant), on telemetry shaped like real
// scrapes: MIG GPUs with free slices (several equal free samples of one
// device at one instant), time-sliced GPUs, jobs that start and stop inside
// a series, a few minutes missing, scrape jitter that makes samples straddle
// line borders, rows read twice, an unknown node and samples outside lines.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gpucost/allocate.h"
#include "gtest/gtest.h"
#include "engine/series_scan.h"
#include "testing/status_matchers.h"
#include "testing/tables.h"

namespace gpucost {
namespace {

using ::gpucost::testing::At;
using ::gpucost::testing::CostTable;
using ::gpucost::testing::InventoryTable;
using ::gpucost::testing::kGiB;
using ::gpucost::testing::kMinute;
using ::gpucost::testing::SampleTable;
using ::gpucost::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

enum class Order { kSeries, kNodeScrapes, kTime, kShuffled };

// One sample as generated, with what orders sort it by.
struct Sample {
  int64_t t;
  int node, device, scrape;
  std::string consumer;
  double share, util, mem;
};

struct Fleet {
  CostTable costs;
  InventoryTable inventory;
  std::vector<Sample> samples;  // series order: device after device, each in time

  Fleet(int nodes, int hours) {
    std::mt19937_64 rng(2026);
    std::uniform_real_distribution<double> unit(0, 1);
    const int scrapes = hours * 60;
    // One jitter per node scrape, as every GPU of a node is read at once.
    std::vector<int64_t> jitter(static_cast<size_t>(nodes + 1) * scrapes);
    for (int64_t& j : jitter) j = static_cast<int64_t>(unit(rng) * 4e8);
    int pod = 0;
    // The last node is in no bill and no inventory: its samples are unknown.
    for (int n = 0; n <= nodes; ++n) {
      const std::string id = "i-" + std::to_string(n);
      if (n < nodes) {
        inventory.AddResource(id, 8, 80 * kGiB);
        // The last hour has no line: samples there are outside every line.
        for (int h = 0; h + 1 < hours; ++h) costs.Add(id, At(h), At(h + 1), 20.0 + n % 7 + 0.25 * h);
      }
      for (int d = 0; d < 8; ++d) {
        auto add = [&](int k, const std::string& who, double share, double util, double mem) {
          const int64_t t = At(0) + k * kMinute + jitter[static_cast<size_t>(n) * scrapes + k];
          samples.push_back({t, n, d, k, who, share, util, mem});
        };
        const int kind = (n * 8 + d) % 8;
        const std::string mig_a = "mig-" + std::to_string(pod++), mig_b = "mig-" + std::to_string(pod++);
        std::vector<std::string> sliced;
        for (int k = 0; k < 3; ++k) sliced.push_back("ts-" + std::to_string(pod++));
        // Jobs on whole GPUs start and stop at odd minutes; free in between.
        std::vector<std::pair<int, int>> jobs;
        std::vector<std::string> names;
        for (int k = static_cast<int>(unit(rng) * 50); k < scrapes;) {
          const int length = 7 + static_cast<int>(unit(rng) * 90);
          jobs.emplace_back(k, std::min(scrapes, k + length));
          names.push_back("job-" + std::to_string(pod++));
          k += length + static_cast<int>(unit(rng) * 40);
        }
        size_t job = 0;
        for (int k = 0; k < scrapes; ++k) {
          if (n == 1 && d == 2 && k >= 100 && k < 104) continue;  // four minutes missing
          if (kind == 0) {  // MIG: 3g and 2g held (2g freed mid-series), two free 1g slices
            add(k, mig_a, 3.0 / 7, 0.6, 10 * kGiB);
            const bool held = k < scrapes / 2;
            add(k, held ? mig_b : "", 2.0 / 7, held ? 0.4 : 0.0, held ? 5 * kGiB : 0);
            add(k, "", 1.0 / 7, 0.0, 0);
            add(k, "", 1.0 / 7, 0.0, 0);
          } else if (kind == 1) {  // time-sliced by three pods
            for (const std::string& who : sliced) add(k, who, 1.0 / 3, 0.3, 4 * kGiB);
          } else {
            while (job < jobs.size() && jobs[job].second <= k) ++job;
            if (job < jobs.size() && jobs[job].first <= k) {
              add(k, names[job], 1.0, 0.5 + 0.05 * d, 30 * kGiB);
            } else {
              add(k, "", 1.0, 0.0, 0);
            }
          }
        }
      }
    }
    // Rows read twice: a held sample and a free one.
    samples.push_back(samples[samples.size() / 3]);
    samples.push_back(samples[1]);
  }

  SampleTable InOrder(Order order) const {
    std::vector<size_t> rows(samples.size());
    std::iota(rows.begin(), rows.end(), 0);
    auto by = [&](auto key) {
      std::stable_sort(rows.begin(), rows.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
    };
    switch (order) {
      case Order::kSeries: break;
      case Order::kNodeScrapes: by([&](size_t i) { return std::pair(samples[i].node, samples[i].scrape); }); break;
      case Order::kTime: by([&](size_t i) { return samples[i].scrape; }); break;
      case Order::kShuffled: std::shuffle(rows.begin(), rows.end(), std::mt19937(5)); break;
    }
    SampleTable table;
    for (size_t i : rows) {
      const Sample& s = samples[i];
      table.Add(s.t, "i-" + std::to_string(s.node), s.device, s.consumer, s.share, s.util, s.mem);
    }
    return table;
  }
};

// 12 nodes x 8 GPUs x 12 h: about 120,000 samples, split between threads
// from 16,384 samples per thread (the engine waits for 2^18). Under
// ThreadSanitizer 3 h, from 4,096 a thread.
constexpr int kHours = ::gpucost::testing::kThreadSanitizer ? 3 : 12;

const Fleet& SharedFleet() {
  static const Fleet* fleet = [] {
    internal::SetMinSamplesPerWorkerForTesting(kHours == 12 ? 1 << 14 : 1 << 12);
    return new Fleet(12, kHours);
  }();
  return *fleet;
}

void ExpectSameResult(const Allocation& a, const Allocation& b, double tolerance) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.keys.size(), b.keys.size());
  for (size_t k = 0; k < a.keys.size(); ++k) {
    EXPECT_EQ(a.keys[k].codes, b.keys[k].codes);
    EXPECT_EQ(a.keys[k].dictionary, b.keys[k].dictionary);
    EXPECT_EQ(a.keys[k].period, b.keys[k].period);
  }
  auto near = [&](const std::vector<double>& x, const std::vector<double>& y, const char* what) {
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(x[i])) {
        EXPECT_TRUE(std::isnan(y[i])) << what << " row " << i;
      } else {
        EXPECT_NEAR(x[i], y[i], tolerance * std::abs(x[i]) + 1e-9) << what << " row " << i;
      }
    }
  };
  near(a.cost, b.cost, "cost");
  near(a.idle_cost, b.idle_cost, "idle_cost");
  near(a.gpu_hours, b.gpu_hours, "gpu_hours");
  near(a.effective_gpu_hours, b.effective_gpu_hours, "effective_gpu_hours");
  near(a.mem_gib_hours, b.mem_gib_hours, "mem_gib_hours");
  near(a.cost_per_effective_gpu_hour, b.cost_per_effective_gpu_hour, "cost_per_effective_gpu_hour");
  const Diagnostics& x = a.diagnostics;
  const Diagnostics& y = b.diagnostics;
  EXPECT_EQ(x.samples_total, y.samples_total);
  EXPECT_EQ(x.samples_duplicate, y.samples_duplicate);
  EXPECT_EQ(x.samples_no_consumer, y.samples_no_consumer);
  EXPECT_EQ(x.samples_unknown_resource, y.samples_unknown_resource);
  EXPECT_EQ(x.samples_outside_lines, y.samples_outside_lines);
  EXPECT_EQ(x.samples_used, y.samples_used);
  EXPECT_EQ(x.lines_unobserved, y.lines_unobserved);
  EXPECT_EQ(x.lines_oversubscribed, y.lines_oversubscribed);
  EXPECT_EQ(x.interval_seconds, y.interval_seconds);
  EXPECT_EQ(a.join.samples, b.join.samples);
  EXPECT_EQ(a.join.samples_start, b.join.samples_start);
  EXPECT_EQ(a.join.samples_end, b.join.samples_end);
  near(a.join.unjoined_gpu_hours, b.join.unjoined_gpu_hours, "unjoined_gpu_hours");
}

AllocationPolicy PolicyFor(Basis basis, IdleMode idle, int threads) {
  AllocationPolicy policy;
  policy.basis = basis;
  policy.idle = idle;
  policy.threads = threads;
  policy.by = {"consumer", "period"};
  policy.freq = PeriodFreq::kHour;
  return policy;
}

TEST(AllocateOrders, TheFleetHasEveryShape) {
  SampleTable rows = SharedFleet().InOrder(Order::kSeries);
  Fleet& fleet = const_cast<Fleet&>(SharedFleet());
  GPUCOST_ASSERT_OK_AND_ASSIGN(
      Allocation a, Allocate(fleet.costs.columns(), rows.columns(), fleet.inventory.columns(), nullptr,
                             PolicyFor(Basis::kAllocated, IdleMode::kKeep, 1)));
  const Diagnostics& d = a.diagnostics;
  // Free 1g slices: the second of each instant is a copy of the first.
  EXPECT_GT(d.samples_duplicate, 400 * kHours);
  EXPECT_GT(d.samples_unknown_resource, 0);
  EXPECT_GT(d.samples_outside_lines, 0);
  EXPECT_GT(d.samples_no_consumer, 0);
  ASSERT_TRUE(d.interval_seconds.has_value());
  // Jitter: the inferred interval is a median of uneven spacings, not 60 s.
  EXPECT_NE(*d.interval_seconds, 60.0);
  EXPECT_NEAR(*d.interval_seconds, 60.0, 0.4);
  EXPECT_GT(rows.timestamp.size(), 3u * internal::MinSamplesPerWorker());  // three workers get rows
}

TEST(AllocateOrders, EveryOrderAndThreadCountGivesOneResult) {
  Fleet& fleet = const_cast<Fleet&>(SharedFleet());
  SampleTable series = fleet.InOrder(Order::kSeries);
  GPUCOST_ASSERT_OK_AND_ASSIGN(
      const Allocation reference,
      Allocate(fleet.costs.columns(), series.columns(), fleet.inventory.columns(), nullptr,
               PolicyFor(Basis::kAllocated, IdleMode::kKeep, 1)));
  for (Order order : {Order::kSeries, Order::kNodeScrapes, Order::kTime, Order::kShuffled}) {
    SampleTable rows = fleet.InOrder(order);
    std::optional<Allocation> one_thread;
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(::testing::Message() << "order " << static_cast<int>(order) << ", threads " << threads);
      GPUCOST_ASSERT_OK_AND_ASSIGN(
          Allocation a, Allocate(fleet.costs.columns(), rows.columns(), fleet.inventory.columns(), nullptr,
                                 PolicyFor(Basis::kAllocated, IdleMode::kKeep, threads)));
      ExpectSameResult(a, reference, 1e-9);
      // Rows are split by resource: every thread count adds in one order.
      if (one_thread) {
        EXPECT_EQ(a.cost, one_thread->cost);
        EXPECT_EQ(a.gpu_hours, one_thread->gpu_hours);
      } else {
        one_thread = std::move(a);
      }
    }
  }
}

// Every row is walked by exactly one worker, in row order: as runs where a
// node's rows come together, as a list of its rows where they are shuffled
// (runs of about one row).
TEST(AllocateOrders, EachWorkerWalksItsOwnRowsInRowOrder) {
  const Fleet& fleet = SharedFleet();
  constexpr int kWorkers = 3;
  for (Order order : {Order::kNodeScrapes, Order::kTime, Order::kShuffled}) {
    SCOPED_TRACE(::testing::Message() << "order " << static_cast<int>(order));
    SampleTable table = fleet.InOrder(order);
    const SampleColumns s = table.columns();
    const std::vector<int32_t> devices_of_code(s.resource_id.dictionary.size(), -1);
    const internal::ChunkSeries chunk = internal::ScanChunkSeries(s, devices_of_code, kWorkers);
    ASSERT_EQ(chunk.workers, kWorkers);
    std::vector<int> walked(s.size(), 0);
    for (int w = 0; w < kWorkers; ++w) {
      int64_t previous = -1, rows = 0;
      internal::ForOwnedRows(chunk, s, w, [&](int64_t i) {
        EXPECT_GT(i, previous);
        previous = i;
        ++walked[static_cast<size_t>(i)];
        ++rows;
      });
      EXPECT_EQ(internal::OwnedRowCount(chunk, static_cast<int64_t>(s.size()), w), rows);
      EXPECT_GT(rows, 0);
      EXPECT_EQ(!chunk.rows[w].empty(), order == Order::kShuffled);
    }
    EXPECT_TRUE(std::all_of(walked.begin(), walked.end(), [](int n) { return n == 1; }));
  }
}

TEST(AllocateOrders, EveryBasisAndIdleModeInEveryOrder) {
  Fleet& fleet = const_cast<Fleet&>(SharedFleet());
  SampleTable series = fleet.InOrder(Order::kSeries);
  for (Basis basis : {Basis::kAllocated, Basis::kUsed, Basis::kBlended}) {
    for (IdleMode idle : {IdleMode::kKeep, IdleMode::kShare}) {
      GPUCOST_ASSERT_OK_AND_ASSIGN(const Allocation reference,
                                   Allocate(fleet.costs.columns(), series.columns(), fleet.inventory.columns(),
                                            nullptr, PolicyFor(basis, idle, 1)));
      double total = 0;
      for (double c : reference.cost) total += c;
      double billed = 0;
      for (double c : fleet.costs.cost) billed += c;
      EXPECT_NEAR(total, billed, 1e-9 * billed);  // money in equals money out
      for (Order order : {Order::kNodeScrapes, Order::kTime, Order::kShuffled}) {
        SCOPED_TRACE(::testing::Message() << "basis " << static_cast<int>(basis) << ", idle "
                                          << static_cast<int>(idle) << ", order " << static_cast<int>(order));
        SampleTable rows = fleet.InOrder(order);
        GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Allocate(fleet.costs.columns(), rows.columns(),
                                                            fleet.inventory.columns(), nullptr,
                                                            PolicyFor(basis, idle, 2)));
        ExpectSameResult(a, reference, 1e-9);
      }
    }
  }
}

TEST(AllocateOrders, StreamedInChunksOfAnyOrderEqualsOneShot) {
  Fleet& fleet = const_cast<Fleet&>(SharedFleet());
  SampleTable series = fleet.InOrder(Order::kSeries);
  AllocationPolicy policy = PolicyFor(Basis::kBlended, IdleMode::kKeep, 2);
  GPUCOST_ASSERT_OK_AND_ASSIGN(const Allocation reference,
                               Allocate(fleet.costs.columns(), series.columns(), fleet.inventory.columns(),
                                        nullptr, policy));
  policy.interval_seconds = *reference.diagnostics.interval_seconds;
  for (Order order : {Order::kNodeScrapes, Order::kShuffled}) {
    SampleTable rows = fleet.InOrder(order);
    const SampleColumns all = rows.columns();
    GPUCOST_ASSERT_OK_AND_ASSIGN(auto allocator, Allocator::Create(fleet.costs.columns(),
                                                                   fleet.inventory.columns(), nullptr, policy));
    const size_t chunk = all.size() / 3 + 1;  // three chunks
    for (size_t begin = 0; begin < all.size(); begin += chunk) {
      ASSERT_THAT(allocator->AddSamples(all.Slice(begin, chunk)), testing::IsOk());
    }
    GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation streamed, allocator->Finish());
    ExpectSameResult(streamed, reference, 1e-9);
  }
}

TEST(AllocateOrders, TheFirstBadRowIsReportedInEveryOrderAndThreadCount) {
  Fleet& fleet = const_cast<Fleet&>(SharedFleet());
  for (Order order : {Order::kNodeScrapes, Order::kShuffled}) {
    SampleTable rows = fleet.InOrder(order);
    const size_t first_bad = rows.share.size() / 2;
    rows.share[rows.share.size() - 5] = 1.5;
    rows.device[first_bad] = 8;  // node has devices 0..7
    rows.util[first_bad + 5'000] = -1;
    for (int threads : {1, 3}) {
      EXPECT_THAT(Allocate(fleet.costs.columns(), rows.columns(), fleet.inventory.columns(), nullptr,
                           PolicyFor(Basis::kAllocated, IdleMode::kKeep, threads)),
                  StatusIs(absl::StatusCode::kInvalidArgument,
                           HasSubstr("row " + std::to_string(first_bad) + ", column 'device'")));
    }
  }
}

TEST(AllocateOrders, ASeriesTooDenseIsRefusedInEveryOrder) {
  // One series sampled every 20 s among series every 60 s: refused, naming it.
  CostTable costs;
  InventoryTable inventory;
  SampleTable rows;
  for (int r = 0; r < 5; ++r) {
    const std::string id = "i-" + std::to_string(r);
    inventory.AddResource(id, 2);
    costs.Add(id, At(0), At(2), 4.0);
    for (int64_t t = At(0); t < At(2); t += (r == 3 ? kMinute / 3 : kMinute)) rows.Add(t, id, 1, "pod", 1, 0.5, 0);
  }
  std::vector<size_t> order(rows.timestamp.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rows.timestamp[a] < rows.timestamp[b]; });
  SampleTable by_time;
  for (size_t i : order) {
    by_time.Add(rows.timestamp[i], rows.resource_id[i], rows.device[i], rows.consumer[i], 1, 0.5, 0);
  }
  for (SampleTable* table : {&rows, &by_time}) {
    EXPECT_THAT(Allocate(costs.columns(), table->columns(), inventory.columns(), nullptr, {}),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("'i-3', device 1"), HasSubstr("has a sample every 20 s"))));
  }
}

TEST(AllocateOrders, SpacingsAreExactMediansOfUnevenSeries) {
  // Each series: its instants at random gaps (jitter, clusters, outliers,
  // repeated gaps, ties, one gap that is half or a late majority of them,
  // every instant but the last within a second: one crowded bucket when
  // shuffled rows are sorted), odd and even counts; the spacing must be the
  // exact median of its positive differences.
  std::mt19937_64 rng(11);
  SampleTable rows;
  std::vector<double> expected;
  for (int k = 0; k < 98; ++k) {
    const int count = 2 + static_cast<int>(rng() % 400);
    std::vector<double> diffs;
    int64_t t = At(0);
    for (int i = 0; i < count; ++i) {
      rows.Add(t, "i-" + std::to_string(k), 0, "pod", 1, 0, 0);
      if (i % 17 == 3) rows.Add(t, "i-" + std::to_string(k), 0, "pod", 0.5, 0, 0);  // a tie: no difference
      int64_t gap = 0;
      switch (k % 7) {
        case 0: gap = 60'000'000'000 + static_cast<int64_t>(rng() % 800'000'000) - 400'000'000; break;
        case 1: gap = (rng() % 3 == 0) ? 30'000'000'000 : 60'000'000'000; break;
        case 2: gap = 1 + static_cast<int64_t>(rng() % 1'000'000'000'000); break;
        case 3: gap = 60'000'000'000 + static_cast<int64_t>(rng() % 7); break;
        case 4: gap = (i % 2 == 0) ? 60'000'000'000 : 60'000'000'001; break;  // half each: no majority
        case 5: gap = i + 2 == count ? 86'400'000'000'000 : 1 + static_cast<int64_t>(rng() % 2'000'000); break;
        default:  // the first ~45 % jittered, the rest 60 s: a majority the vote names late, or none
          gap = 10 * i < 9 * count / 2 ? 60'000'000'000 + static_cast<int64_t>(rng() % 2'000) - 1'000
                                       : 60'000'000'000;
          break;
      }
      if (i + 1 < count) diffs.push_back(static_cast<double>(gap));
      t += gap;
    }
    std::sort(diffs.begin(), diffs.end());
    const size_t m = diffs.size();
    expected.push_back((m % 2 == 1 ? diffs[m / 2] : 0.5 * (diffs[m / 2 - 1] + diffs[m / 2])) / 1e9);
  }
  for (Order order : {Order::kSeries, Order::kShuffled}) {
    SampleTable table = rows;
    if (order == Order::kShuffled) {
      std::vector<size_t> perm(rows.timestamp.size());
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), std::mt19937(3));
      table = SampleTable();
      for (size_t i : perm) {
        table.Add(rows.timestamp[i], rows.resource_id[i], 0, "pod", rows.share[i], 0, 0);
      }
    }
    std::vector<double> spacings = SeriesSpacings(table.columns());
    ASSERT_EQ(spacings.size(), expected.size());
    // Series are numbered as first seen; sort both to compare as sets of values per series name.
    std::vector<double> got = spacings, want = expected;
    if (order == Order::kShuffled) {
      std::sort(got.begin(), got.end());
      std::sort(want.begin(), want.end());
    }
    for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(got[k], want[k]) << "series " << k;
  }
}

TEST(AllocateOrders, AnyDeviceNumberOfAResourceOutsideTheInventoryIsCounted) {
  // SEMANTICS 6 checks devices of resources in the inventory only: samples of
  // another resource, whatever their device (negative, huge), are counted as
  // unknown, in every order and thread count.
  CostTable costs;
  InventoryTable inventory;
  SampleTable rows;
  inventory.AddResource("i-0", 2);
  costs.Add("i-0", At(0), At(1), 1.0);
  for (int64_t t = At(0); t < At(1); t += kMinute) {
    rows.Add(t, "i-0", 1, "pod", 1, 0.5, 0);
    rows.Add(t, "elsewhere", -1, "pod", 1, 0.5, 0);
    rows.Add(t, "elsewhere", 2'000'000'000, "other", 1, 0.5, 0);
  }
  for (int threads : {1, 2}) {
    AllocationPolicy policy;
    policy.threads = threads;
    GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Allocate(costs.columns(), rows.columns(), inventory.columns(),
                                                        nullptr, policy));
    EXPECT_EQ(a.diagnostics.samples_unknown_resource, 120);
    EXPECT_EQ(a.diagnostics.samples_used, 60);
  }
  rows.device[0] = -1;  // on a resource in the inventory: refused
  EXPECT_THAT(Allocate(costs.columns(), rows.columns(), inventory.columns(), nullptr, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("row 0, column 'device': device -1 of 'i-0'")));
}

TEST(AllocateOrders, DevicesTheRowSampleMissesAreFoundByHash) {
  // The pass keeps a dense table of the inventory's devices and those of a
  // sample of rows (every second row here). A resource outside the
  // inventory whose device only odd rows name is looked up by hash: its
  // series, its copies and its counts are the same.
  CostTable costs;
  InventoryTable inventory;
  SampleTable rows;
  inventory.AddResource("i-0", 2);
  costs.Add("i-0", At(0), At(1200), 1.0);
  int64_t events = 0;
  for (int64_t k = 0; k < 70'000; ++k) {
    const int64_t t = At(0) + k * kMinute;
    rows.Add(t, "i-0", 0, "pod", 1, 0.5, 0);
    if (k < 500) {  // the unknown sample and its copy at odd rows, two copies of another
      rows.Add(t, "elsewhere", 7, "job", 1, 0.5, 0);
      rows.Add(t, "i-0", 1, "pod", 1, 0.5, 0);
      rows.Add(t, "elsewhere", 7, "job", 1, 0.5, 0);
      rows.Add(t, "i-0", 1, "pod", 1, 0.5, 0);
      rows.Add(t, "i-0", 1, "pod", 1, 0.5, 0);
      ++events;
    } else {
      rows.Add(t, "i-0", 1, "pod", 1, 0.5, 0);
    }
  }
  ASSERT_GT(rows.timestamp.size(), size_t{1} << 17);  // the sample takes every second row
  for (size_t i = 0; i < rows.device.size(); ++i) {
    if (rows.device[i] == 7) {
      ASSERT_EQ(i % 2, 1u) << i;
    }
  }
  for (int threads : {1, 2}) {
    AllocationPolicy policy;
    policy.threads = threads;
    GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Allocate(costs.columns(), rows.columns(), inventory.columns(),
                                                        nullptr, policy));
    EXPECT_EQ(a.diagnostics.samples_duplicate, 3 * events);
    EXPECT_EQ(a.diagnostics.samples_unknown_resource, events);
  }
}

TEST(AllocateOrders, ConsumerDictionaryIsInStringOrder) {
  // Names that share long prefixes, are prefixes of each other, hold zero
  // bytes or differ only past 8 and 16 bytes: the result's dictionary is
  // sorted as std::string compares, whatever the shortcuts.
  std::vector<std::string> names = {"batch/job-00000000a", "batch/job-00000000", "batch/job-0000000",
                                    "batch/job-00000001", "b", "", "batch/job-000000009zz",
                                    std::string("ab\0c", 4), std::string("ab\0", 3), "ab", "abc",
                                    "batch/job-00000000a-longer-than-sixteen-bytes-1",
                                    "batch/job-00000000a-longer-than-sixteen-bytes-0", "zeta", "Zeta"};
  std::mt19937_64 rng(5);
  for (int k = 0; k < 3000; ++k) {  // enough for the radix sort of 8-byte keys (from 1,024 names)
    std::string name = "pod/" + std::string(static_cast<size_t>(rng() % 20), 'x');
    for (int c = 0; c < 3; ++c) name += static_cast<char>('a' + rng() % 3);
    if (rng() % 2 == 0) name += std::to_string(rng() % 50);
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  names.erase(std::find(names.begin(), names.end(), ""));  // "" is no workload
  ASSERT_GT(names.size(), 1024u);
  CostTable costs;
  InventoryTable inventory;
  SampleTable rows;
  inventory.AddResource("i-0", 1);
  costs.Add("i-0", At(0), At(1), 1.0);
  std::vector<std::string> shuffled = names;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(9));
  for (const std::string& name : shuffled) rows.Add(At(0), "i-0", 0, name, 0.001, 0, 0);
  AllocationPolicy policy;
  policy.interval_seconds = 60;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Allocate(costs.columns(), rows.columns(), inventory.columns(),
                                                      nullptr, policy));
  std::vector<std::string> expected = names;
  for (std::string_view special : {kIdle, kUnattributed, kUnobserved}) expected.emplace_back(special);
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(a.keys[0].dictionary, expected);
}

}  // namespace
}  // namespace gpucost
