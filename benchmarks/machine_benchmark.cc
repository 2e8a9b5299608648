// What the machine itself allows, beside the engine's numbers in the same
// binary (docs/performance.md): the engine's passes stream columns, look up
// per-series state at random in a few MiB, and compute. Each kind of work
// at 1 and 2 threads shows the ceiling of 1 -> 2 thread scaling on this
// machine, and the first the bytes a second a core can read, which bounds
// samples a second a core (the engine reads about 60 bytes a sample).
//
// BM_MachineStream: sums 200 MB of doubles, split between the threads.
// BM_MachineRandom: adds into a 2 MiB table per thread at pseudo-random
//   places (the per-series state of a worker).
// BM_MachineCompute: a dependent chain of multiply-adds, no memory.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "benchmark/benchmark.h"

namespace {

constexpr size_t kStreamValues = size_t{25} << 20;  // 200 MiB of doubles
constexpr size_t kTableValues = size_t{1} << 18;    // 2 MiB of doubles

const std::vector<double>& StreamData() {
  static const std::vector<double> data(kStreamValues, 1.0);
  return data;
}

// This thread's share [begin, end) of n items.
std::pair<size_t, size_t> ShareOf(const benchmark::State& state, size_t n) {
  const auto threads = static_cast<size_t>(state.threads());
  const auto index = static_cast<size_t>(state.thread_index());
  return {n * index / threads, n * (index + 1) / threads};
}

void BM_MachineStream(benchmark::State& state) {
  const std::vector<double>& data = StreamData();
  const auto [begin, end] = ShareOf(state, data.size());
  for (auto _ : state) {
    double sum = 0;
    for (size_t i = begin; i < end; ++i) sum += data[i];
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>((end - begin) * sizeof(double)));
}
BENCHMARK(BM_MachineStream)->Threads(1)->Threads(2)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_MachineRandom(benchmark::State& state) {
  const std::vector<double>& data = StreamData();
  const auto [begin, end] = ShareOf(state, data.size() / 4);
  std::vector<double> table(kTableValues, 0.0);
  for (auto _ : state) {
    uint64_t x = 88172645463325252ULL + static_cast<uint64_t>(state.thread_index());
    for (size_t i = begin; i < end; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      table[x & (kTableValues - 1)] += data[i];
    }
    benchmark::DoNotOptimize(table.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(end - begin));
}
BENCHMARK(BM_MachineRandom)->Threads(1)->Threads(2)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_MachineCompute(benchmark::State& state) {
  constexpr int64_t kSteps = 100'000'000;
  const auto [begin, end] = ShareOf(state, kSteps);
  for (auto _ : state) {
    double v = 1.0;
    for (size_t i = begin; i < end; ++i) v = v * 1.0000001 + 1e-9;
    benchmark::DoNotOptimize(v);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(end - begin));
}
BENCHMARK(BM_MachineCompute)->Threads(1)->Threads(2)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
