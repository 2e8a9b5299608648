// Engine throughput on pre-encoded columns: a fleet of 8-GPU instances with
// hourly cost lines and 60 s samples, grouped by series (the telemetry
// order) or shuffled; and the realistic fleet of fleet.h (MIG with free
// slices, time-slicing, jobs starting and stopping mid-hour, scrape jitter)
// in the four orders telemetry comes in. Reports samples/second.
#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "benchmark/benchmark.h"
#include "fleet.h"
#include "gpucost/gpucost.h"

namespace {

using gpucost::kNanosPerHour;
using gpucost::kNanosPerSecond;

struct Fleet {
  gpucost::EncodedStrings cost_ids, inv_ids, sample_ids, consumers;
  std::vector<int64_t> start, end, timestamp;
  std::vector<double> cost, mem_capacity, share, util, mem_used;
  std::vector<int32_t> inv_device, device;

  // `gpus` GPUs in 8-GPU instances, `hours` hourly lines, one sample per
  // GPU per minute; each GPU is held by one consumer, a quarter are free.
  Fleet(int gpus, int hours, bool shuffle) {
    const int instances = gpus / 8;
    std::vector<std::string> cost_res, inv_res, sample_res, who;
    for (int i = 0; i < instances; ++i) {
      const std::string id = "i-" + std::to_string(i);
      for (int h = 0; h < hours; ++h) {
        cost_res.push_back(id);
        start.push_back(h * kNanosPerHour);
        end.push_back((h + 1) * kNanosPerHour);
        cost.push_back(32.77);
      }
      for (int d = 0; d < 8; ++d) {
        inv_res.push_back(id);
        inv_device.push_back(d);
        mem_capacity.push_back(40.0 * (1LL << 30));
      }
    }
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u01(0, 1);
    const int64_t steps = hours * 60LL;
    for (int i = 0; i < instances; ++i) {
      const std::string id = "i-" + std::to_string(i);
      for (int d = 0; d < 8; ++d) {
        const bool free = (i * 8 + d) % 4 == 3;
        const std::string consumer = free ? "" : "pod-" + std::to_string((i * 8 + d) / 2);
        for (int64_t s = 0; s < steps; ++s) {
          timestamp.push_back(s * 60 * kNanosPerSecond);
          sample_res.push_back(id);
          device.push_back(d);
          who.push_back(consumer);
          share.push_back(1.0);
          util.push_back(free ? 0.0 : u01(rng));
          mem_used.push_back(free ? 0.0 : 20.0 * (1LL << 30));
        }
      }
    }
    if (shuffle) {
      std::vector<size_t> order(timestamp.size());
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      auto permute = [&](auto& v) {
        auto copy = v;
        for (size_t k = 0; k < order.size(); ++k) v[k] = copy[order[k]];
      };
      permute(timestamp), permute(sample_res), permute(device), permute(who);
      permute(share), permute(util), permute(mem_used);
    }
    cost_ids = gpucost::EncodeStrings(cost_res);
    inv_ids = gpucost::EncodeStrings(inv_res);
    sample_ids = gpucost::EncodeStrings(sample_res);
    consumers = gpucost::EncodeStrings(who);
  }
  gpucost::CostColumns costs() const { return {cost_ids.view(), start, end, cost, {}}; }
  gpucost::InventoryColumns inventory() const { return {inv_ids.view(), inv_device, mem_capacity}; }
  gpucost::SampleColumns samples() const {
    return {timestamp, sample_ids.view(), device, consumers.view(), share, util, mem_used, {}};
  }
};

void Run(benchmark::State& state, const Fleet& fleet, gpucost::AllocationPolicy policy) {
  for (auto _ : state) {
    auto result = gpucost::Allocate(fleet.costs(), fleet.samples(), fleet.inventory(), nullptr, policy);
    if (!result.ok()) state.SkipWithError(std::string(result.status().message()).c_str());
    benchmark::DoNotOptimize(result);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(fleet.timestamp.size()));
}

// Args: GPUs, worker threads.
void BM_AllocateGrouped(benchmark::State& state) {
  static const Fleet fleet(static_cast<int>(state.range(0)), 24, /*shuffle=*/false);
  gpucost::AllocationPolicy policy;
  policy.threads = static_cast<int>(state.range(1));
  Run(state, fleet, policy);
}
BENCHMARK(BM_AllocateGrouped)->Args({1000, 1})->Args({1000, 2})->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_AllocateGroupedByPeriod(benchmark::State& state) {
  static const Fleet fleet(static_cast<int>(state.range(0)), 24, false);
  gpucost::AllocationPolicy policy;
  policy.by = {"resource_id", "period"};
  policy.freq = gpucost::PeriodFreq::kDay;
  policy.threads = static_cast<int>(state.range(1));
  Run(state, fleet, policy);
}
BENCHMARK(BM_AllocateGroupedByPeriod)->Args({1000, 1})->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_AllocateShuffled(benchmark::State& state) {
  static const Fleet fleet(static_cast<int>(state.range(0)), 24, /*shuffle=*/true);
  gpucost::AllocationPolicy policy;
  policy.threads = static_cast<int>(state.range(1));
  Run(state, fleet, policy);
}
BENCHMARK(BM_AllocateShuffled)->Args({1000, 1})->Unit(benchmark::kMillisecond)->UseRealTime();

// The realistic fleet, built once per (GPUs, order, churn) and kept for the run.
const gpucost_bench::RealisticFleet& FleetFor(int gpus, gpucost_bench::FleetOrder order, int churn) {
  using Key = std::tuple<int, gpucost_bench::FleetOrder, int>;
  static std::map<Key, std::unique_ptr<gpucost_bench::RealisticFleet>> built;
  auto& fleet = built[{gpus, order, churn}];
  if (!fleet) fleet = std::make_unique<gpucost_bench::RealisticFleet>(gpus, order, churn);
  return *fleet;
}

// BM_AllocateFleet/<order>/gpus:<n>/threads:<t>: by consumer, interval
// inferred (the fleet is built so that it is exactly 60 s; checked).
// BM_AllocateFleetHighCard: the same on whole GPUs with a new pod every 5 minutes.
void BM_AllocateFleet(benchmark::State& state, gpucost_bench::FleetOrder order, int churn) {
  const auto& fleet = FleetFor(static_cast<int>(state.range(0)), order, churn);
  gpucost::AllocationPolicy policy;
  policy.threads = static_cast<int>(state.range(1));
  for (auto _ : state) {
    auto result = gpucost::Allocate(fleet.costs(), fleet.samples(), fleet.inventory(), nullptr, policy);
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      break;
    }
    const gpucost::Diagnostics& diag = result->diagnostics;
    if (diag.interval_seconds != 60.0) {
      state.SkipWithError("the realistic fleet's inferred interval is not 60 s");
      break;
    }
    // The shapes the fleet is for: rows read twice (free MIG slices), over-subscribed lines.
    state.counters["duplicate"] = static_cast<double>(diag.samples_duplicate);
    state.counters["oversubscribed"] = static_cast<double>(diag.lines_oversubscribed);
    benchmark::DoNotOptimize(result);
  }
  state.counters["samples"] = static_cast<double>(fleet.size());
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(fleet.size()));
}

// BM_AllocateFleetEnergy/<order>: the same fleet with each sample's power_w
// (a draw from 80 to 700 W following its utilisation), a pue and a carbon
// intensity: what the energy columns (SEMANTICS 9) cost beside
// BM_AllocateFleet.
void BM_AllocateFleetEnergy(benchmark::State& state, gpucost_bench::FleetOrder order) {
  const auto& fleet = FleetFor(static_cast<int>(state.range(0)), order, 0);
  gpucost::SampleColumns samples = fleet.samples();
  std::vector<double> power(samples.size());
  for (size_t i = 0; i < power.size(); ++i) power[i] = 80.0 + 620.0 * samples.util[i];
  samples.power_w = power;
  gpucost::AllocationPolicy policy;
  policy.threads = static_cast<int>(state.range(1));
  policy.pue = 1.3;
  policy.carbon_intensity = 380;
  for (auto _ : state) {
    auto result = gpucost::Allocate(fleet.costs(), samples, fleet.inventory(), nullptr, policy);
    if (!result.ok() || !result->energy_kwh) {
      state.SkipWithError(result.ok() ? "no energy column" : std::string(result.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(result);
  }
  state.counters["samples"] = static_cast<double>(fleet.size());
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(fleet.size()));
}

// BM_AllocateFleetStream/<order>/ordered:<0|1>: the same fleet fed to an
// Allocator in chunks of 250,000 rows, as allocate_stream and the CLI feed
// files: what the record of rows read twice across chunks costs beside the
// one-shot BM_AllocateFleet (ordered: the chunks told they never go back in
// time, which only the time order allows).
void BM_AllocateFleetStream(benchmark::State& state, gpucost_bench::FleetOrder order) {
  const auto& fleet = FleetFor(static_cast<int>(state.range(0)), order, 0);
  const gpucost::SampleColumns samples = fleet.samples();
  gpucost::AllocationPolicy policy;
  policy.threads = 1;
  policy.interval_seconds = 60;  // stated, as a stream needs unless its first chunk shows it (shuffled does not)
  policy.ordered_chunks = state.range(1) != 0;
  constexpr size_t kChunk = 250'000;
  for (auto _ : state) {
    auto allocator = gpucost::Allocator::Create(fleet.costs(), fleet.inventory(), nullptr, policy);
    absl::Status status = allocator.status();
    for (size_t begin = 0; status.ok() && begin < samples.size(); begin += kChunk) {
      status = (*allocator)->AddSamples(samples.Slice(begin, kChunk));
    }
    auto result = status.ok() ? (*allocator)->Finish() : absl::StatusOr<gpucost::Allocation>(status);
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(result);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(fleet.size()));
}

const bool kFleetRegistered = [] {
  for (const auto& [order, name] : gpucost_bench::kFleetOrders) {
    auto* stream = benchmark::RegisterBenchmark(("BM_AllocateFleetStream/" + std::string(name)).c_str(),
                                                BM_AllocateFleetStream, order)
                       ->ArgNames({"gpus", "ordered"})
                       ->Args({1000, 0});
    if (order == gpucost_bench::FleetOrder::kTime) stream->Args({1000, 1});  // only time order never goes back
    stream->Unit(benchmark::kMillisecond)->UseRealTime();
  }
  for (const auto& [order, name] : gpucost_bench::kFleetOrders) {
    benchmark::RegisterBenchmark(("BM_AllocateFleetEnergy/" + std::string(name)).c_str(), BM_AllocateFleetEnergy,
                                 order)
        ->ArgNames({"gpus", "threads"})
        ->Args({1000, 1})
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  for (const auto& [prefix, churn] : {std::pair("BM_AllocateFleet/", 0), std::pair("BM_AllocateFleetHighCard/", 5)}) {
    for (const auto& [order, name] : gpucost_bench::kFleetOrders) {
      benchmark::RegisterBenchmark((prefix + std::string(name)).c_str(), BM_AllocateFleet, order, churn)
          ->ArgNames({"gpus", "threads"})
          ->Args({1000, 1})
          ->Args({1000, 2})
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
  return true;
}();

}  // namespace
