// The series pass of the engine (SEMANTICS 1.3), internal to src/.
//
// A series is the samples of one (resource_id, device, consumer). For every
// series of a chunk this pass finds its spacing and the rows read twice, in
// one pass over the rows in the order given, whatever that order is:
// telemetry arrives in node-scrape, series or time order, where each series
// is in time order but interleaved with the others, so per-series state
// (found through a small per-device cache of consumer codes, never a hash
// per row) checks spacing and copies as the rows go by, and nothing moves.
// Only series whose rows go back in time (shuffled input) are gathered and
// sorted: a counting pass that copies their values, then each series by a
// bucket pass on its instants (linear for telemetry, jittered or not).
//
// Rows are split between workers by resource: a worker owns every row of its
// resources, so each series, each resource's statistics and each (segment,
// consumer) accumulator is touched by one thread only, and the results are
// the same for every thread count, to the bit.
#ifndef GPUCOST_SRC_SERIES_SCAN_H_
#define GPUCOST_SRC_SERIES_SCAN_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpucost/columns.h"
#include "gpucost/time.h"
#include "uncleared_buffer.h"

namespace gpucost::internal {

// Raw bounds of valid sample instants and durations in one time unit, so
// hot loops compare without dividing.
struct RawBounds {
  int64_t ts_lo, ts_hi, dur_hi;
};
constexpr RawBounds BoundsOf(TimeUnit unit) {
  const auto ticks = static_cast<int64_t>(unit);
  return {kMinInstant / ticks, kMaxInstant / ticks, kMaxDuration / ticks};
}

// Median of `v` (for an even count, the mean of the two middle values);
// reorders `v`. NaN for an empty `v`.
double Median(std::vector<double>& v);

// Below this many samples per thread a chunk is not worth another thread.
// Tests lower it to split small inputs between threads.
int64_t MinSamplesPerWorker();
void SetMinSamplesPerWorkerForTesting(int64_t rows);

// series_of_row values besides a series id.
inline constexpr int32_t kBadRow = std::numeric_limits<int32_t>::min();  // refused with its row
inline constexpr int32_t kDroppedBit = 1 << 30;                          // id | bit: a row read twice
inline constexpr int32_t kGatheredBit = 1 << 29;  // id | bit: its series is read from gathered_rows
inline constexpr int32_t kSeriesBits = kGatheredBit - 1;
// Rows of one chunk: a series id and the two bits share an int32 per row.
inline constexpr size_t kMaxChunkRows = size_t{1} << 29;

// A series' key: (resource, device, consumer) as codes or ids.
struct SeriesKey {
  int32_t resource, device, consumer;
  bool operator==(const SeriesKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const SeriesKey& k) {
    return H::combine(std::move(h), k.resource, k.device, k.consumer);
  }
};

struct Series {
  int32_t resource_code;  // the chunk's codes
  int32_t device;
  int32_t consumer_code;  // kNullCode: no workload
  int64_t first_row;      // its first row in the chunk (errors name it)
  double spacing_ns = std::numeric_limits<double>::quiet_NaN();  // NaN: one distinct instant
  // Rows out of time order in the chunk are gathered in `gathered_rows`, in
  // time order (ties in row order): positions [sorted_begin, sorted_end).
  bool gathered = false;
  int64_t sorted_begin = 0, sorted_end = 0;
};

// A row of a gathered series with the values the engine reads, copied in
// one sequential pass so that the series is then read in time order without
// a random access per row.
struct GatheredRow {
  int64_t t;       // raw instant, in the chunk's unit
  int32_t row;     // the chunk row; ~row (negative) once found to be a copy
  int32_t series;  // worker-local series id
  double share, util, mem;
  int64_t duration;  // raw, 0 when the chunk has none
  [[nodiscard]] bool dropped() const { return row < 0; }
  [[nodiscard]] int64_t chunk_row() const { return row < 0 ? ~row : row; }
};

// One worker's share of a chunk: the series of the resources it owns.
struct WorkerSeries {
  std::vector<Series> series;
  // Rows of gathered series, series after series (allocated uncleared).
  UnclearedBuffer<GatheredRow> gathered_rows;
  int64_t duplicates = 0;
};

struct ChunkSeries {
  int workers = 1;
  std::vector<uint8_t> owner;  // per resource code: its worker
  // With several workers: per worker, the runs [begin, end) of rows it owns,
  // found once so that later passes visit only their own rows. Where runs
  // are short (shuffled rows: about one row a run) each worker has the list
  // of its rows instead (a slice of `listed_rows`), which every pass walks
  // without a loop per run.
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> runs;
  std::vector<std::span<const uint32_t>> rows;
  UnclearedBuffer<uint32_t> listed_rows;
  // Per row: its worker-local series id, | kDroppedBit, or kBadRow. Every
  // row is written by its owner, so it is allocated without being cleared.
  UnclearedBuffer<int32_t> series_of_row;
  std::vector<WorkerSeries> by_worker;
};

// Finds the series of `samples` for `workers` workers. `devices_of_code[c]`
// is N_r of resource code c when the resource is in the inventory (a device
// outside 0..N_r-1 makes a bad row), -1 otherwise. Rows whose resource code,
// consumer code or device cannot name a series are kBadRow: the caller
// refuses them with their row. Instants outside the valid range belong to
// their series but are skipped here (refused by the caller as well).
ChunkSeries ScanChunkSeries(const SampleColumns& samples, const std::vector<int32_t>& devices_of_code, int workers);

// f(w) for each worker w in [0, workers): worker 0 on this thread, the
// others on threads of their own.
template <typename F>
void RunOnWorkers(int workers, F&& f) {
  if (workers == 1) {
    f(0);
    return;
  }
  std::vector<std::thread> threads;
  for (int w = 1; w < workers; ++w) threads.emplace_back(f, w);
  f(0);
  for (std::thread& t : threads) t.join();
}

// Calls f(row) for every row worker w owns, in row order; an f that
// returns bool stops the walk by returning false.
template <typename F>
void ForOwnedRows(const ChunkSeries& chunk, const SampleColumns& s, int w, F&& f) {
  auto call = [&](int64_t i) {
    if constexpr (std::is_void_v<std::invoke_result_t<F&, int64_t>>) {
      f(i);
      return true;
    } else {
      return static_cast<bool>(f(i));
    }
  };
  // Two copies of f's loop, not three: one worker's rows are one run.
  if (chunk.workers > 1 && !chunk.rows[w].empty()) {
    for (const uint32_t i : chunk.rows[w]) {
      if (!call(i)) return;
    }
    return;
  }
  const std::pair<uint32_t, uint32_t> all_rows{0, static_cast<uint32_t>(s.size())};
  const std::span<const std::pair<uint32_t, uint32_t>> runs =
      chunk.workers == 1 ? std::span(&all_rows, 1) : std::span(chunk.runs[w]);
  for (const auto& [begin, end] : runs) {
    for (int64_t i = begin; i < end; ++i) {
      if (!call(i)) return;
    }
  }
}

// The number of rows worker w owns.
inline int64_t OwnedRowCount(const ChunkSeries& chunk, int64_t rows, int w) {
  if (chunk.workers == 1) return rows;
  int64_t owned = static_cast<int64_t>(chunk.rows[w].size());
  for (const auto& [begin, end] : chunk.runs[w]) owned += end - begin;
  return owned;
}

}  // namespace gpucost::internal

#endif  // GPUCOST_SRC_SERIES_SCAN_H_
