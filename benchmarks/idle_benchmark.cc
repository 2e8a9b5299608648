// The analyses passes over every sample: FindIdle (idle spans, holders,
// policy) and ProfileUsage, on a fleet of 8-GPU instances billed hourly with
// one sample per GPU per minute. Columns are built already encoded (codes
// and dictionaries), in the two orders telemetry comes in: by series (one
// device after another) and by time (every device at each scrape, the order
// of a Prometheus range query). Reports samples/second.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "benchmark/benchmark.h"
#include "gpucost/analyses/idle.h"
#include "gpucost/analyses/profile.h"

namespace {

using gpucost::kNanosPerHour;
using gpucost::kNanosPerSecond;

constexpr int kDevices = 8;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Instance roles, by instance index modulo 5: a training job on all GPUs;
// an idle instance nobody holds; a pod holding its GPUs idle in the second
// half of the day; half the GPUs busy, the other half never reporting;
// time-sliced notebooks at 3 %.
struct Fleet {
  std::vector<std::string> resource_names, consumer_names;
  std::vector<std::string_view> resource_views, consumer_views;
  std::vector<int32_t> line_resource, inv_resource, inv_device;
  std::vector<int64_t> line_start, line_end;
  std::vector<double> line_cost, mem_capacity;
  std::vector<int64_t> timestamp;
  std::vector<int32_t> resource, device, consumer;
  std::vector<double> share, util, mem_used;

  Fleet(int gpus, int hours, bool time_ordered) {
    const int instances = gpus / kDevices;
    for (int i = 0; i < instances; ++i) {
      resource_names.push_back("i-" + std::to_string(i));
      consumer_names.push_back("pod-" + std::to_string(i));
      for (int h = 0; h < hours; ++h) {
        line_resource.push_back(i);
        line_start.push_back(h * kNanosPerHour);
        line_end.push_back((h + 1) * kNanosPerHour);
        line_cost.push_back(32.77);
      }
      for (int d = 0; d < kDevices; ++d) {
        inv_resource.push_back(i);
        inv_device.push_back(d);
        mem_capacity.push_back(40 * kGiB);
      }
    }
    resource_views.assign(resource_names.begin(), resource_names.end());
    consumer_views.assign(consumer_names.begin(), consumer_names.end());
    const int64_t steps = hours * 60LL;
    auto add = [&](int i, int d, int64_t s) {
      const int role = i % 5;
      if (role == 3 && d >= kDevices / 2) return;  // never reports
      const bool second_half = s >= steps / 2;
      int32_t who = i;
      double u = 0.8, sh = 1.0;
      if (role == 1) who = gpucost::kNullCode, u = 0.0;
      if (role == 2 && second_half) u = 0.0;
      if (role == 4) u = 0.03, sh = 0.5;
      timestamp.push_back(s * 60 * kNanosPerSecond);
      resource.push_back(i);
      device.push_back(d);
      consumer.push_back(who);
      share.push_back(sh);
      util.push_back(u);
      mem_used.push_back(who == gpucost::kNullCode ? 0.0 : 10 * kGiB);
    };
    if (time_ordered) {
      for (int64_t s = 0; s < steps; ++s)
        for (int i = 0; i < instances; ++i)
          for (int d = 0; d < kDevices; ++d) add(i, d, s);
    } else {
      for (int i = 0; i < instances; ++i)
        for (int d = 0; d < kDevices; ++d)
          for (int64_t s = 0; s < steps; ++s) add(i, d, s);
    }
  }
  gpucost::StringColumn Resources(const std::vector<int32_t>& codes) const { return {codes, resource_views}; }
  gpucost::CostColumns costs() const {
    return {Resources(line_resource), line_start, line_end, line_cost, {}};
  }
  gpucost::InventoryColumns inventory() const { return {Resources(inv_resource), inv_device, mem_capacity}; }
  gpucost::SampleColumns samples() const {
    return {timestamp, Resources(resource), device, {consumer, consumer_views}, share, util, mem_used, {}};
  }
};

void RunFindIdle(benchmark::State& state, const Fleet& fleet) {
  for (auto _ : state) {
    auto result = gpucost::FindIdle(fleet.costs(), fleet.samples(), fleet.inventory(), {}, {});
    if (!result.ok()) state.SkipWithError(std::string(result.status().message()).c_str());
    benchmark::DoNotOptimize(result);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(fleet.timestamp.size()));
}

void BM_FindIdle(benchmark::State& state) {
  static const Fleet fleet(static_cast<int>(state.range(0)), 24, /*time_ordered=*/false);
  RunFindIdle(state, fleet);
}
BENCHMARK(BM_FindIdle)->Arg(10000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_FindIdleTimeOrdered(benchmark::State& state) {
  static const Fleet fleet(static_cast<int>(state.range(0)), 24, /*time_ordered=*/true);
  RunFindIdle(state, fleet);
}
BENCHMARK(BM_FindIdleTimeOrdered)->Arg(10000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ProfileUsageByDay(benchmark::State& state) {
  static const Fleet fleet(static_cast<int>(state.range(0)), 24, /*time_ordered=*/false);
  gpucost::ProfileOptions options;
  options.freq = gpucost::PeriodFreq::kDay;
  for (auto _ : state) {
    auto result = gpucost::ProfileUsage(fleet.samples(), fleet.inventory(), {}, options);
    if (!result.ok()) state.SkipWithError(std::string(result.status().message()).c_str());
    benchmark::DoNotOptimize(result);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(fleet.timestamp.size()));
}
BENCHMARK(BM_ProfileUsageByDay)->Arg(10000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
