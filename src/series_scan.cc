#include "series_scan.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <functional>
#include <numeric>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "gpucost/time.h"

namespace gpucost::internal {
namespace {

double MedianOf(double* v, size_t count) {
  if (count == 0) return std::numeric_limits<double>::quiet_NaN();
  const size_t mid = count / 2;
  std::nth_element(v, v + mid, v + count);
  const double upper = v[mid];
  if (count % 2 == 1) return upper;
  return 0.5 * (*std::max_element(v, v + mid) + upper);
}

// Raw bounds of valid instants in the chunk's unit: compared without dividing.
struct InstantBounds {
  int64_t lo, hi;
};
InstantBounds BoundsOf(TimeUnit unit) {
  const auto ticks = static_cast<int64_t>(unit);
  return {kMinInstant / ticks, kMaxInstant / ticks};
}

// The values a copy must repeat, besides its series and instant.
bool SameValues(const SampleColumns& s, int64_t a, int64_t b) {
  return s.share[a] == s.share[b] && s.util[a] == s.util[b] && s.mem_used[a] == s.mem_used[b] &&
         (!s.duration.has_value() || (*s.duration)[a] == (*s.duration)[b]);
}

// Sorts (instant, row) pairs in O(n) when their instants are distinct and
// evenly spaced (telemetry read out of order): each pair's slot is
// (t - min) / step. Returns false, leaving the range as it was, otherwise.
// The slot comes from a double division, exact below 2^53 and checked by an
// integer multiply: a 64-bit division per row would cost more than the sort.
bool PlaceEvenlySpaced(std::pair<int64_t, int64_t>* b, std::pair<int64_t, int64_t>* e,
                       std::vector<std::pair<int64_t, int64_t>>& scratch, std::vector<uint8_t>& filled) {
  const auto count = static_cast<uint64_t>(e - b);
  if (count < 3) return false;
  int64_t lo = b->first, hi = b->first;
  for (auto* it = b; it != e; ++it) {
    lo = std::min(lo, it->first);
    hi = std::max(hi, it->first);
  }
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  if (span == 0 || span % (count - 1) != 0) return false;
  const uint64_t step = span / (count - 1);
  const double inverse = 1.0 / static_cast<double>(step);
  scratch.resize(count);
  filled.assign(count, 0);
  for (auto* it = b; it != e; ++it) {
    const uint64_t offset = static_cast<uint64_t>(it->first) - static_cast<uint64_t>(lo);
    const auto slot = static_cast<uint64_t>(static_cast<double>(offset) * inverse + 0.5);
    if (slot >= count || slot * step != offset || filled[slot] != 0) return false;
    filled[slot] = 1;
    scratch[slot] = *it;
  }
  std::copy(scratch.begin(), scratch.end(), b);
  return true;
}

// Resource codes to workers, by rows: the largest resources first, each to
// the worker with the fewest rows so far.
std::vector<uint8_t> AssignOwners(const SampleColumns& s, int workers) {
  const size_t codes = s.resource_id.dictionary.size();
  std::vector<uint8_t> owner(codes, 0);
  if (workers == 1) return owner;
  std::vector<int64_t> rows(codes, 0);
  for (int32_t c : s.resource_id.codes) {
    if (static_cast<uint32_t>(c) < codes) ++rows[c];
  }
  std::vector<int32_t> order(codes);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return rows[a] > rows[b]; });
  std::vector<int64_t> load(workers, 0);
  for (int32_t c : order) {
    const auto w = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    owner[c] = static_cast<uint8_t>(w);
    load[w] += rows[c];
  }
  return owner;
}

// Recent consumers of one device and their series: node-scrape and time
// order visit every device between two samples of one series, so a series
// is found by a few compares here, and a hash only the first time.
struct DeviceCache {
  static constexpr int kWays = 8;
  std::array<int32_t, kWays> consumer;
  std::array<int32_t, kWays> series;
  uint32_t next = 0;
  DeviceCache() {
    consumer.fill(std::numeric_limits<int32_t>::min());
    series.fill(-1);
  }
};

struct SeriesCodes {
  int32_t resource, device, consumer;
  bool operator==(const SeriesCodes&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const SeriesCodes& k) {
    return H::combine(std::move(h), k.resource, k.device, k.consumer);
  }
};

// Rows at the latest instant of a series that differ in value: a row equal
// to one of them is a copy. More than this many sends the series to the sort.
constexpr int kTieRows = 4;

// Per-series state of the pass in row order.
struct ScanState {
  int64_t last = std::numeric_limits<int64_t>::min();  // latest instant seen
  int64_t first_diff = 0;                              // 0: one distinct instant so far
  int64_t diffs = 0;                                   // positive differences seen
  int64_t dropped = 0;                                 // copies found in row order
  std::array<int64_t, kTieRows> tie_rows{};            // rows at `last`, distinct values
  int8_t ties = 0;
  bool irregular = false;
  bool gathered = false;
};

class Scanner {
 public:
  Scanner(const SampleColumns& s, const std::vector<int32_t>& devices_of_code, ChunkSeries& chunk)
      : s_(s), devices_of_code_(devices_of_code), chunk_(chunk), bounds_(BoundsOf(s.time_unit)) {
    const auto n = static_cast<int64_t>(s.size());
    int32_t max_device = -1;
    for (int64_t i = 0; i < n; ++i) max_device = std::max(max_device, s.device[i]);
    devices_ = static_cast<int64_t>(max_device) + 1;
    const auto codes = static_cast<int64_t>(s.resource_id.dictionary.size());
    // A dense table of devices unless absurd device numbers make it huge
    // (they then cost a hash per row, but stay correct).
    constexpr int64_t kMaxDenseDevices = int64_t{1} << 22;
    dense_ = codes * devices_ <= std::max<int64_t>(kMaxDenseDevices, n);
    if (dense_) caches_.resize(static_cast<size_t>(codes * devices_));
  }

  void Run(int w) {
    WorkerSeries& out = chunk_.by_worker[w];
    std::vector<ScanState> states;
    // Hashed devices (absurd device numbers) are per worker: no sharing.
    absl::flat_hash_map<uint64_t, int32_t> device_slots;
    std::vector<DeviceCache> hashed_caches;
    absl::flat_hash_map<SeriesCodes, int32_t> series_ids;
    const int32_t* rc = s_.resource_id.codes.data();
    const int32_t* dv = s_.device.data();
    const int32_t* cc = s_.consumer.codes.data();
    const int64_t* ts = s_.timestamp.data();
    int32_t* series_of_row = chunk_.series_of_row.get();
    const auto codes = static_cast<uint32_t>(s_.resource_id.dictionary.size());
    const auto consumers = static_cast<int32_t>(s_.consumer.dictionary.size());
    bool any_gathered = false;
    auto cache_of = [&](int32_t r, int32_t d) -> DeviceCache& {
      if (dense_) return caches_[static_cast<size_t>(r * devices_ + d)];
      const uint64_t key = (static_cast<uint64_t>(r) << 32) | static_cast<uint32_t>(d);
      auto [it, inserted] = device_slots.try_emplace(key, static_cast<int32_t>(hashed_caches.size()));
      if (inserted) hashed_caches.emplace_back();
      return hashed_caches[it->second];
    };
    auto series_of = [&](int64_t i, int32_t r, int32_t d, int32_t c) {
      DeviceCache& cache = cache_of(r, d);
      for (int k = 0; k < DeviceCache::kWays; ++k) {
        if (cache.consumer[k] == c) return cache.series[k];
      }
      auto [it, inserted] = series_ids.try_emplace(SeriesCodes{r, d, c}, static_cast<int32_t>(out.series.size()));
      if (inserted) {
        out.series.push_back({r, d, c, i});
        states.emplace_back();
      }
      const int32_t id = it->second;
      const uint32_t way = cache.next++ % DeviceCache::kWays;
      cache.consumer[way] = c;
      cache.series[way] = id;
      return id;
    };

    ForOwnedRows(chunk_, s_, w, [&](int64_t i) {
      const int32_t r = rc[i], d = dv[i], c = cc[i];
      if (static_cast<uint32_t>(r) >= codes || d < 0 || c < kNullCode || c >= consumers ||
          (devices_of_code_[r] >= 0 && d >= devices_of_code_[r])) [[unlikely]] {
        series_of_row[i] = kBadRow;
        return;
      }
      const int32_t id = series_of(i, r, d, c);
      series_of_row[i] = id;
      const int64_t t = ts[i];
      if (t < bounds_.lo || t >= bounds_.hi) [[unlikely]] return;
      ScanState& st = states[id];
      if (t > st.last) [[likely]] {
        if (st.last != std::numeric_limits<int64_t>::min()) {
          const int64_t d_t = t - st.last;
          if (st.first_diff == 0) st.first_diff = d_t;
          st.irregular |= d_t != st.first_diff;
          ++st.diffs;
        }
        st.last = t;
        st.tie_rows[0] = i;
        st.ties = 1;
        return;
      }
      if (st.gathered) return;
      if (t == st.last) {  // a tie: a copy of a row of this instant, or another value
        for (int k = 0; k < st.ties; ++k) {
          if (SameValues(s_, st.tie_rows[k], i)) {
            series_of_row[i] = id | kDroppedBit;
            ++st.dropped;
            return;
          }
        }
        if (st.ties < kTieRows) {
          st.tie_rows[st.ties++] = i;
          return;
        }
      }
      // Back in time, or too many values at one instant: sorted later.
      st.gathered = true;
      any_gathered = true;
    });

    for (size_t k = 0; k < out.series.size(); ++k) {
      const ScanState& st = states[k];
      if (st.gathered) continue;
      out.duplicates += st.dropped;
      if (st.first_diff != 0 && !st.irregular) out.series[k].spacing_ns = static_cast<double>(st.first_diff) * ticks();
    }
    MedianSpacings(w, states);
    if (any_gathered) Gather(w, states);
  }

 private:
  [[nodiscard]] double ticks() const { return static_cast<double>(static_cast<int64_t>(s_.time_unit)); }

  // In-order series with uneven spacing (jittered scrapes): their differences
  // gathered into one arena by a second look at their rows, then a median each.
  void MedianSpacings(int w, std::vector<ScanState>& states) {
    WorkerSeries& out = chunk_.by_worker[w];
    std::vector<int64_t> offset(states.size() + 1, 0);
    bool any = false;
    for (size_t k = 0; k < states.size(); ++k) {
      const bool wanted = states[k].irregular && !states[k].gathered;
      offset[k + 1] = wanted ? states[k].diffs : 0;
      any |= wanted;
    }
    if (!any) return;
    std::partial_sum(offset.begin(), offset.end(), offset.begin());
    auto arena = std::make_unique_for_overwrite<double[]>(static_cast<size_t>(offset.back()));
    std::vector<int64_t> at(offset.begin(), offset.end() - 1);
    for (ScanState& st : states) st.last = std::numeric_limits<int64_t>::min();
    const int64_t* ts = s_.timestamp.data();
    const int32_t* series_of_row = chunk_.series_of_row.get();
    ForOwnedRows(chunk_, s_, w, [&](int64_t i) {
      const int32_t id = series_of_row[i];
      if (id < 0 || (id & kDroppedBit) != 0) return;
      ScanState& st = states[id];
      if (!st.irregular || st.gathered) return;
      const int64_t t = ts[i];
      if (t < bounds_.lo || t >= bounds_.hi || t <= st.last) return;
      if (st.last != std::numeric_limits<int64_t>::min()) arena[at[id]++] = static_cast<double>(t - st.last);
      st.last = t;
    });
    for (size_t k = 0; k < states.size(); ++k) {
      if (offset[k + 1] == offset[k]) continue;
      out.series[k].spacing_ns = MedianOf(arena.get() + offset[k], offset[k + 1] - offset[k]) * ticks();
    }
  }

  // Series out of time order: their rows gathered (a counting pass), each
  // series put in time order, ties in row order, then scanned as a whole.
  void Gather(int w, const std::vector<ScanState>& states) {
    WorkerSeries& out = chunk_.by_worker[w];
    std::vector<int64_t> begin(states.size() + 1, 0);
    int32_t* series_of_row = chunk_.series_of_row.get();
    const int64_t* ts = s_.timestamp.data();
    ForOwnedRows(chunk_, s_, w, [&](int64_t i) {
      const int32_t id = series_of_row[i];
      if (id == kBadRow) return;
      if (states[id & ~kDroppedBit].gathered) ++begin[(id & ~kDroppedBit) + 1];
    });
    std::partial_sum(begin.begin(), begin.end(), begin.begin());
    std::vector<std::pair<int64_t, int64_t>> pairs(static_cast<size_t>(begin.back()));
    std::vector<int64_t> next(begin.begin(), begin.end() - 1);
    ForOwnedRows(chunk_, s_, w, [&](int64_t i) {
      const int32_t raw = series_of_row[i];
      if (raw == kBadRow) return;
      const int32_t id = raw & ~kDroppedBit;
      if (!states[id].gathered) return;
      series_of_row[i] = id;  // copies are found again in time order
      pairs[next[id]++] = {ts[i], i};
    });
    std::vector<std::pair<int64_t, int64_t>> scratch;
    std::vector<uint8_t> filled;
    std::vector<double> diffs;
    out.sorted.resize(pairs.size());
    for (size_t k = 0; k < states.size(); ++k) {
      if (!states[k].gathered) continue;
      std::pair<int64_t, int64_t>* b = pairs.data() + begin[k];
      std::pair<int64_t, int64_t>* e = pairs.data() + begin[k + 1];
      if (!std::is_sorted(b, e) && !PlaceEvenlySpaced(b, e, scratch, filled)) std::sort(b, e);
      Series& series = out.series[k];
      series.gathered = true;
      series.sorted_begin = begin[k];
      series.sorted_end = begin[k + 1];
      for (auto* p = b; p != e; ++p) out.sorted[p - pairs.data()] = p->second;
      ScanSorted(b, e, static_cast<int32_t>(k), series, out, diffs);
    }
  }

  // One gathered series in time order: copies among the rows of each
  // instant, and the spacing.
  void ScanSorted(const std::pair<int64_t, int64_t>* b, const std::pair<int64_t, int64_t>* e, int32_t id,
                  Series& series, WorkerSeries& out, std::vector<double>& diffs) {
    int32_t* series_of_row = chunk_.series_of_row.get();
    diffs.clear();
    int64_t prev = std::numeric_limits<int64_t>::min();
    const std::pair<int64_t, int64_t>* tie_begin = b;
    for (const auto* p = b; p != e; ++p) {
      const int64_t t = p->first;
      if (t < bounds_.lo || t >= bounds_.hi) [[unlikely]] continue;
      if (t == prev) {
        for (const auto* q = tie_begin; q != p; ++q) {
          if (q->first != t || (series_of_row[q->second] & kDroppedBit) != 0) continue;
          if (SameValues(s_, q->second, p->second)) {
            series_of_row[p->second] = id | kDroppedBit;
            ++out.duplicates;
            break;
          }
        }
        continue;
      }
      if (prev != std::numeric_limits<int64_t>::min()) diffs.push_back(static_cast<double>(t - prev));
      prev = t;
      tie_begin = p;
    }
    if (diffs.empty()) return;
    const bool regular = std::all_of(diffs.begin(), diffs.end(), [&](double v) { return v == diffs.front(); });
    series.spacing_ns = (regular ? diffs.front() : MedianOf(diffs.data(), diffs.size())) * ticks();
  }

  const SampleColumns& s_;
  const std::vector<int32_t>& devices_of_code_;
  ChunkSeries& chunk_;
  InstantBounds bounds_;
  int64_t devices_ = 0;
  bool dense_ = true;
  std::vector<DeviceCache> caches_;  // dense: per (resource code, device); owned by one worker each
};

std::atomic<int64_t> min_samples_per_worker{int64_t{1} << 18};

}  // namespace

int64_t MinSamplesPerWorker() { return min_samples_per_worker.load(std::memory_order_relaxed); }
void SetMinSamplesPerWorkerForTesting(int64_t rows) { min_samples_per_worker.store(std::max<int64_t>(1, rows)); }

double Median(std::vector<double>& v) { return MedianOf(v.data(), v.size()); }

ChunkSeries ScanChunkSeries(const SampleColumns& samples, const std::vector<int32_t>& devices_of_code, int workers) {
  ChunkSeries chunk;
  chunk.workers = std::clamp(workers, 1, 64);
  chunk.owner = AssignOwners(samples, chunk.workers);
  chunk.series_of_row = std::make_unique_for_overwrite<int32_t[]>(samples.size());
  chunk.by_worker.resize(chunk.workers);
  Scanner scanner(samples, devices_of_code, chunk);
  if (chunk.workers == 1) {
    scanner.Run(0);
    return chunk;
  }
  std::vector<std::thread> threads;
  for (int w = 1; w < chunk.workers; ++w) threads.emplace_back([&scanner, w] { scanner.Run(w); });
  scanner.Run(0);
  for (std::thread& t : threads) t.join();
  return chunk;
}

}  // namespace gpucost::internal
