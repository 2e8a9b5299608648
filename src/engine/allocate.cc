// The proration engine (SEMANTICS.md). Layout of the work:
//
// 1. Create(): index resources, cut each resource's timeline into segments
//    (maximal spans where the set of active cost lines does not change) and
//    validate the tables.
// 2. AddSamples(): the series pass (series_scan.h) finds every row's series
//    (resource, device, consumer), checks or infers the interval and drops
//    rows read twice, in the rows' own order; then, for every sample, add
//    share*overlap, share*util*overlap and mem_used*overlap to the (segment,
//    consumer) accumulator it overlaps. Each series keeps the segment it is
//    in and its sums there, so a series resolves its accumulator once per
//    segment, not once per sample, however its rows are interleaved with
//    others'. Workers own resources: each adds its own rows.
// 3. Finish(): sum each line's segments per consumer, prorate, group, sort.
//
// Overlaps are in nanoseconds; the ratios φ are unit-free, and hours are
// converted once at the end.
#include "gpucost/allocate.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <deque>
#include <iterator>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gpucost/status.h"
#include "series_scan.h"

namespace gpucost {
namespace {

constexpr double kNanosPerHourD = static_cast<double>(kNanosPerHour);
constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int32_t kNoName = 0;  // resource id of lines and samples with an empty resource_id
constexpr int32_t kNoConsumer = -1;
constexpr double kOversubscribedTolerance = 1e-9;
using internal::kMaxChunkRows;

std::string Quoted(std::string_view s) { return absl::StrCat("'", absl::string_view(s.data(), s.size()), "'"); }

std::string Num(double v) { return absl::StrCat(v); }

// No device has 2^64 bytes (16 EiB) of memory; the bound keeps byte-ns products
// and their sums finite, so a fraction never becomes inf/inf.
constexpr double kMaxDeviceBytes = 0x1p64;
constexpr std::string_view kOutOfRange = "instant outside 1970-01-01..2200-01-01 UTC";

bool IsReserved(std::string_view v) {
  return v == kIdle || v == kUnattributed || v == kUnobserved || v == kUnlabelled || v == kDown;
}

int64_t ScaleInstant(int64_t raw, TimeUnit unit) {
  // Wrapping multiply: an absurd instant must not be undefined behaviour.
  return static_cast<int64_t>(static_cast<uint64_t>(raw) *
                              static_cast<uint64_t>(unit));
}

// A row's period [start, end) in ns: both instants present and in range, end
// after start (cost lines, down windows).
absl::Status ReadPeriod(std::string_view table, int64_t row, int64_t raw_start, int64_t raw_end, TimeUnit unit,
                        int64_t* start, int64_t* end) {
  if (raw_start == kMissingInstant) return RowError(table, row, "start", "missing instant");
  if (raw_end == kMissingInstant) return RowError(table, row, "end", "missing instant");
  if (!InstantInRange(raw_start, unit)) return RowError(table, row, "start", kOutOfRange);
  if (!InstantInRange(raw_end, unit)) return RowError(table, row, "end", kOutOfRange);
  *start = ScaleInstant(raw_start, unit);
  *end = ScaleInstant(raw_end, unit);
  if (*end <= *start) return RowError(table, row, "end", "end is not after start");
  return absl::OkStatus();
}

// Every required column must have one value per row.
absl::Status CheckLength(std::string_view table, std::string_view column,
                         size_t actual, size_t rows) {
  if (actual == rows) return absl::OkStatus();
  if (actual == 0) {
    return TableError(table, absl::StrCat("missing required column '",
                                          absl::string_view(column.data(), column.size()), "'"));
  }
  return TableError(table, absl::StrCat("column '", absl::string_view(column.data(), column.size()),
                                        "' has ", actual, " values for ", rows, " rows"));
}

// SEMANTICS 9: a draw in watts, or NaN (not measured); never negative or inf.
inline bool PowerOk(double w) { return !(w < 0.0) & (w != std::numeric_limits<double>::infinity()); }

// Codes must index the dictionary (or be kNullCode).
absl::Status CheckCodes(std::string_view table, std::string_view column,
                        const StringColumn& col, int64_t row_offset) {
  const auto dict_size = static_cast<int32_t>(col.dictionary.size());
  for (size_t i = 0; i < col.codes.size(); ++i) {
    const int32_t c = col.codes[i];
    if (c < kNullCode || c >= dict_size) {
      return RowError(table, row_offset + static_cast<int64_t>(i), column,
                      absl::StrCat("code ", c, " is not in the dictionary of ",
                                   dict_size, " values"));
    }
  }
  return absl::OkStatus();
}

// A reserved name used by any row is an error naming the first such row.
absl::Status CheckNotReserved(std::string_view table, std::string_view column,
                              const StringColumn& col, int64_t row_offset) {
  for (size_t d = 0; d < col.dictionary.size(); ++d) {
    if (!IsReserved(col.dictionary[d])) continue;
    for (size_t i = 0; i < col.codes.size(); ++i) {
      if (col.codes[i] == static_cast<int32_t>(d)) {
        return RowError(table, row_offset + static_cast<int64_t>(i), column,
                        absl::StrCat(Quoted(col.dictionary[d]),
                                     " is a reserved name"));
      }
    }
  }
  return absl::OkStatus();
}

struct Accumulator {
  double held = 0;  // GPU-ns held: share * overlap
  double used = 0;  // effective GPU-ns: share * util * overlap
  double mem = 0;   // byte-ns: mem_used * overlap
  // SEMANTICS 9: W-ns, share * power * overlap; and W-ns x gCO2e/kWh, with a
  // carbon intensity table (the intensity at each sample's instant).
  double energy = 0;
  double carbon = 0;
  void Add(const Accumulator& o) {
    held += o.held;
    used += o.used;
    mem += o.mem;
    energy += o.energy;
    carbon += o.carbon;
  }
};

struct Slot {
  int64_t segment;
  int32_t consumer;
  Accumulator acc;
};

// What the samples naming one resource looked like (the join table).
struct SampleStats {
  int64_t samples = 0, no_consumer = 0, outside_lines = 0, unknown_resource = 0, in_downtime = 0;
  double unjoined_ns = 0;  // share * ns of samples with a consumer that joined no line
  int64_t first = std::numeric_limits<int64_t>::max();  // min timestamp
  int64_t last = std::numeric_limits<int64_t>::min();   // max timestamp + duration
  void Add(const SampleStats& o) {
    samples += o.samples;
    no_consumer += o.no_consumer;
    outside_lines += o.outside_lines;
    unknown_resource += o.unknown_resource;
    in_downtime += o.in_downtime;
    unjoined_ns += o.unjoined_ns;
    first = std::min(first, o.first);
    last = std::max(last, o.last);
  }
};

// Accumulators keyed by (segment, consumer), in insertion order, with the
// worker's per-segment "a sample overlaps it" flags and per-resource stats.
class SlotTable {
 public:
  std::vector<uint8_t> observed;    // per segment
  std::vector<SampleStats> stats;   // per resource

  // The slot of (segment, consumer), made on first use. Indices stay valid
  // as the table grows; references do not.
  uint32_t IndexOf(int64_t segment, int32_t consumer) {
    const uint64_t key = (static_cast<uint64_t>(segment) << 32) | static_cast<uint32_t>(consumer);
    auto [it, inserted] = ids_.try_emplace(key, static_cast<uint32_t>(slots_.size()));
    if (inserted) slots_.push_back({segment, consumer, {}});
    return it->second;
  }
  Accumulator& At(uint32_t index) { return slots_[index].acc; }
  [[nodiscard]] const std::vector<Slot>& slots() const { return slots_; }

 private:
  absl::flat_hash_map<uint64_t, uint32_t> ids_;
  std::vector<Slot> slots_;
};

// What one worker gathers from its rows of a chunk.
struct Partial {
  SlotTable* slots;  // the worker's table
  int64_t no_consumer = 0, unknown_resource = 0, outside_lines = 0, used = 0, in_downtime = 0;
  int64_t without_power = 0, without_intensity = 0;
  absl::Status status = absl::OkStatus();
  int64_t error_row = std::numeric_limits<int64_t>::max();  // chunk row of `status`
};

struct Resource {
  int32_t devices = 0;  // N_r; 0 = not in the inventory (or no name)
  double mem_capacity = 0;  // bytes over all devices
  double embodied = 0;      // kg CO2e per GPU-ns (the inventory's per GPU-hour)
  int64_t seg_begin = 0;  // segments of this resource: [seg_begin, seg_end)
  int64_t seg_end = 0;
  // SEMANTICS 10: its down windows, merged and sorted (ns).
  std::vector<std::pair<int64_t, int64_t>> down;
};

struct Line {
  int32_t resource;  // kNoName: the line names no resource
  int64_t start;
  int64_t end;
  double cost;
  double list_cost;
  double billed;  // B = min(D, quantity): ns the line bills
  int32_t currency = 0;
  bool primary = true;
  bool energy_driven = false;  // SEMANTICS 9: prorated by energy
  int64_t seg_begin = 0;
  int64_t seg_end = 0;
};

// The 8 bytes of `name` from `depth` as a big-endian integer, zeros past its
// end: comparing keys compares those bytes as strings do.
uint64_t KeyAt(const std::string& name, size_t depth) {
  uint64_t key = 0;
  for (size_t b = depth; b < depth + 8; ++b) {
    key = (key << 8) | (b < name.size() ? static_cast<unsigned char>(name[b]) : 0u);
  }
  return key;
}

// Sorts (key, index) pairs by key: least significant byte first, a counting
// pass per byte that differs between keys (one histogram pass finds them).
// 288,000 pod names took std::sort 33 ms of a 290 ms allocation.
void RadixSortKeyed(std::vector<std::pair<uint64_t, int32_t>>& keyed) {
  constexpr size_t kRadixFrom = 1024;
  if (keyed.size() < kRadixFrom) {
    std::sort(keyed.begin(), keyed.end());
    return;
  }
  std::array<std::array<uint32_t, 256>, 8> count{};
  for (const auto& [key, index] : keyed) {
    for (int b = 0; b < 8; ++b) ++count[b][(key >> (8 * b)) & 0xff];
  }
  std::vector<std::pair<uint64_t, int32_t>> next(keyed.size());
  for (int b = 0; b < 8; ++b) {
    std::array<uint32_t, 256>& at = count[b];
    if (*std::max_element(at.begin(), at.end()) == keyed.size()) continue;  // one value: already in order
    uint32_t sum = 0;
    for (uint32_t& c : at) sum += std::exchange(c, sum);
    for (const auto& pair : keyed) next[at[(pair.first >> (8 * b)) & 0xff]++] = pair;
    keyed.swap(next);
  }
}

// Sorts order[lo, hi) of names that agree on their first `depth` bytes:
// by the next 8 bytes as integers, then each run of equal keys 8 bytes
// deeper (pod names share long prefixes: "batch/job-7f3a..."). Most
// comparisons touch no string.
void SortByKeys(const std::vector<std::string>& names, std::vector<int32_t>& order, size_t lo, size_t hi,
                size_t depth, std::vector<std::pair<uint64_t, int32_t>>& keyed) {
  keyed.resize(hi - lo);
  bool longer = false;  // a name goes on past these 8 bytes
  for (size_t k = lo; k < hi; ++k) {
    keyed[k - lo] = {KeyAt(names[order[k]], depth), order[k]};
    longer |= names[order[k]].size() > depth + 8;
  }
  if (!longer) {  // every name ends here: the rest is a whole-string sort (a zero byte, or none at all)
    std::sort(order.begin() + static_cast<std::ptrdiff_t>(lo), order.begin() + static_cast<std::ptrdiff_t>(hi),
              [&](int32_t a, int32_t b) { return names[a] < names[b]; });
    return;
  }
  RadixSortKeyed(keyed);
  for (size_t k = lo; k < hi; ++k) order[k] = keyed[k - lo].second;
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t a = 0; a < keyed.size();) {
    size_t b = a + 1;
    while (b < keyed.size() && keyed[b].first == keyed[a].first) ++b;
    if (b - a > 1) runs.emplace_back(lo + a, lo + b);
    a = b;
  }
  for (const auto& [a, b] : runs) SortByKeys(names, order, a, b, depth + 8, keyed);
}

// The indices of `names` in string order. Names interned from a sorted
// dictionary (pandas categories, most Arrow dictionaries) come in order but
// for the few appended after them (the pseudo-consumers): their sorted
// prefix is kept, only the rest is sorted, and the two merged.
std::vector<int32_t> SortedOrder(const std::vector<std::string>& names) {
  std::vector<int32_t> order(names.size());
  std::iota(order.begin(), order.end(), 0);
  const auto prefix = std::is_sorted_until(names.begin(), names.end()) - names.begin();
  std::vector<std::pair<uint64_t, int32_t>> keyed;
  SortByKeys(names, order, static_cast<size_t>(prefix), names.size(), 0, keyed);
  std::inplace_merge(order.begin(), order.begin() + prefix, order.end(),
                     [&](int32_t a, int32_t b) { return names[a] < names[b]; });
  return order;
}

// The result rows in key order: a least-significant-first radix sort, a
// counting pass per dictionary-coded column (codes are ranks, 0..size-1) and
// a stable sort per period or cost-line column. Groups are distinct, so this
// is the one lexicographic order of the keys.
std::vector<uint32_t> RowsInKeyOrder(const std::vector<KeyColumn>& keys, size_t rows) {
  std::vector<uint32_t> order(rows), next(rows);
  std::iota(order.begin(), order.end(), 0);
  std::vector<uint32_t> count;
  for (auto col = keys.rbegin(); col != keys.rend(); ++col) {
    if (col->is_period() || col->is_cost_line()) {
      const std::vector<int64_t>& v = col->is_period() ? col->period : col->cost_line;
      std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return v[a] < v[b]; });
      continue;
    }
    count.assign(col->dictionary.size() + 1, 0);
    for (uint32_t r : order) ++count[col->codes[r] + 1];
    std::partial_sum(count.begin(), count.end(), count.begin());
    for (uint32_t r : order) next[count[col->codes[r]]++] = r;
    order.swap(next);
  }
  return order;
}

// Key dimension of a result group, in `by` order.
enum class KeyKind { kConsumer, kResource, kPeriod, kLabel, kCurrency, kCostLine };
struct KeyDim {
  KeyKind kind;
  std::string name;
  int label = -1;  // index into labels_ for kLabel
};

// A result group: (consumer key, resource, period, currency, cost line).
// The consumer key is a consumer id when grouping by consumer, a label-tuple
// id when grouping by labels only, and 0 otherwise; the cost line is the
// line's row when grouping by "cost_line", else 0.
struct GroupKey {
  int32_t consumer_key;
  int32_t resource;
  int64_t period;
  int32_t currency;
  int64_t cost_line;
  bool operator==(const GroupKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const GroupKey& k) {
    return H::combine(std::move(h), k.consumer_key, k.resource, k.period, k.currency, k.cost_line);
  }
};

struct GroupTotals {
  double cost = 0, idle_cost = 0, list_cost = 0, gpu_ns = 0, used_ns = 0,
         mem_byte_ns = 0, energy = 0, carbon = 0, embodied = 0;
};

int WorkersFor(int threads, size_t rows) {
  const int wanted = threads > 0 ? threads : AvailableCores();
  const auto most = static_cast<int>(std::min<size_t>(64, rows / internal::MinSamplesPerWorker()));
  return std::max(1, std::min(wanted, most));
}

}  // namespace

namespace {

std::string Seconds(double ns) { return absl::StrCat(ns / 1e9, " s"); }

using internal::SeriesKey;

// Slot indices with a meaning of their own in SeriesSum::slot.
constexpr uint32_t kNoSlot = std::numeric_limits<uint32_t>::max();  // nothing cached
constexpr uint32_t kOutsideSlot = kNoSlot - 1;                       // cached span covers no line
constexpr uint32_t kNotAllocatedSlot = kNoSlot - 2;                  // free device, unknown resource
constexpr uint32_t kDownSlot = kNoSlot - 3;                          // busy inside a down window: dropped

// What a series adds to its accumulators as its rows go by. Its rows wholly
// inside the cached span (a segment, or a span no line covers) add to h, u,
// m here; they reach the slot when the series leaves the span. Two cache
// lines: counts are of one chunk's rows (below kMaxChunkRows, 2^29), and a
// fleet of 288,000 pods makes as many series.
struct alignas(64) SeriesSum {
  // The fast path reads and writes only this first cache line.
  int64_t cache_start = std::numeric_limits<int64_t>::max();
  int64_t cache_end = std::numeric_limits<int64_t>::min();
  double h = 0, u = 0, m = 0;
  int64_t first = std::numeric_limits<int64_t>::max();
  int64_t last = std::numeric_limits<int64_t>::min();
  int32_t cache_rows = 0;  // rows in the cached span, counted in `rows` at a flush
  enum class Kind : uint8_t { kHeld, kFree, kUnknownResource };
  Kind kind = Kind::kHeld;
  int32_t resource = 0;
  int32_t consumer = kNoConsumer;
  uint32_t slot = kNoSlot;
  int32_t rows = 0, used = 0, outside = 0, down = 0;
  double outside_held = 0;
  // SEMANTICS 9: the cached span's energy (W-ns) and the carbon intensity
  // of its instants (NaN: no window covers them); rows without power or
  // intensity.
  double e = 0, ci = 0;
  int32_t no_power = 0, no_intensity = 0;
};
static_assert(sizeof(SeriesSum) == 128);
static_assert(kMaxChunkRows <= static_cast<size_t>(std::numeric_limits<int32_t>::max()));

// A series of a time-ordered stream (ordered_chunks), its spacings reduced
// to what Finish()'s check needs (SEMANTICS 1.3: the median gap between its
// distinct instants within [lo, hi] = [interval / 2, 2 x interval]) in O(1)
// memory instead of a history of every instant. The gaps are counted on each
// side of lo and hi, with the gaps next to each bound: whenever the median
// could straddle a bound, the two middle gaps are those neighbours, so the
// median is known exactly there and its side known everywhere else.
struct SpacingTally {
  int64_t last = std::numeric_limits<int64_t>::min();  // newest instant; min: none yet
  int64_t gaps = 0, below = 0, above = 0;              // all gaps; gaps < lo; gaps > hi
  int64_t max_below = 0, min_from_lo = std::numeric_limits<int64_t>::max();  // largest < lo, smallest >= lo
  int64_t min_above = 0, max_to_hi = std::numeric_limits<int64_t>::min();    // smallest > hi, largest <= hi

  // The next instant of the series, in time order (a repeat adds no gap).
  void Push(int64_t t, double lo, double hi) {
    if (last != std::numeric_limits<int64_t>::min() && t > last) {
      const int64_t gap = t - last;
      const auto g = static_cast<double>(gap);
      ++gaps;
      if (g < lo) {
        max_below = below++ == 0 ? gap : std::max(max_below, gap);
      } else {
        min_from_lo = std::min(min_from_lo, gap);
      }
      if (g > hi) {
        min_above = above++ == 0 ? gap : std::min(min_above, gap);
      } else {
        max_to_hi = std::max(max_to_hi, gap);
      }
    }
    if (t > last) last = t;
  }

  // Where the median gap (internal::Median's, of the gaps as doubles) lies:
  // 0 inside [lo, hi] (or no gap), -1 below, +1 above; *exact is the median
  // when known, else NaN (the gaps on one side are more than half).
  [[nodiscard]] int Side(double lo, double hi, double* exact) const {
    *exact = std::numeric_limits<double>::quiet_NaN();
    if (gaps == 0) return 0;
    // Sorted gaps x[0, gaps): the median is x[mid] (odd count) or the mean
    // of x[mid - 1] and x[mid]; x[mid] < lo iff below > mid, and both middle
    // gaps > hi iff above > mid (for an odd count: x[mid] > hi).
    const int64_t mid = gaps / 2;
    if (below > mid) return -1;
    if (above > mid) return 1;
    if (gaps % 2 == 1) return 0;
    if (below == mid) {  // x[mid - 1] < lo <= x[mid]
      *exact = 0.5 * (static_cast<double>(max_below) + static_cast<double>(min_from_lo));
    } else if (above == mid) {  // x[mid - 1] <= hi < x[mid]
      *exact = 0.5 * (static_cast<double>(max_to_hi) + static_cast<double>(min_above));
    } else {
      return 0;  // both middle gaps in [lo, hi]
    }
    return *exact < lo ? -1 : *exact > hi ? 1 : 0;
  }
};

}  // namespace

// One per allocator: its padding costs nothing, and its fields stay grouped
// by what they are for.
struct Allocator::State {  // NOLINT(clang-analyzer-optin.performance.Padding)
  AllocationPolicy policy;
  int64_t interval_ns = 0;  // 0 until given or inferred
  bool has_list_cost = false;
  bool has_currency = false;
  std::vector<std::string> currency_names;  // in order of first appearance

  // Resources: union of the cost lines' and the inventory's names.
  absl::flat_hash_map<std::string, int32_t> resource_ids;
  std::vector<std::string> resource_names;
  std::vector<Resource> resources;

  std::vector<Line> lines;
  std::vector<uint8_t> line_primary_overlap;  // per line: SEMANTICS 5's lines_primary_overlap
  std::vector<int64_t> seg_start, seg_end;
  std::vector<uint8_t> seg_active;  // 1 when at least one line covers it
  // 1 when its resource was down (SEMANTICS 10): no sample adds to it or
  // observes it. Empty without a downtime table.
  std::vector<uint8_t> seg_down;
  bool has_downtime = false;

  // SEMANTICS 9: whether any chunk had a power column; rows of chunks that
  // had none; the carbon intensity windows (sorted, disjoint), if given.
  bool has_power = false;
  bool has_embodied = false;  // the inventory had embodied_kg_per_gpu_hour
  int64_t rows_without_power_column = 0;
  bool has_carbon_table = false;
  // A region's windows, sorted and disjoint.
  struct CarbonWindows {
    std::vector<int64_t> start, end;
    std::vector<double> g;
  };
  std::vector<CarbonWindows> carbon;
  // Per resource id: its windows in `carbon` (its region's, else those that
  // name no region), -1 for none; resources named later get `carbon_default`.
  std::vector<int32_t> carbon_of_resource;
  int32_t carbon_default = -1;
  // Per resource id: the region its cost lines name ("" when none).
  std::vector<std::string> resource_region;

  // Consumers: from the workloads table first, then as samples name them.
  // Names in a deque, which never moves them, so the index can key on views
  // of them: one copy of each name (hundreds of thousands of pods a day).
  absl::flat_hash_map<absl::string_view, int32_t> consumer_ids;
  std::deque<std::string> consumer_names;
  size_t consumers_hashed = 0;  // consumer_names[0, this) are in consumer_ids

  // Labels: per label column, its values and each consumer's value code.
  struct Label {
    std::string name;
    std::vector<std::string> values;
    absl::flat_hash_map<std::string, int32_t> value_ids;
    std::vector<int32_t> by_consumer;  // kNullCode = unlabelled
  };
  std::vector<Label> labels;
  int32_t workload_consumers = 0;  // consumer ids below this are in workloads

  std::vector<KeyDim> key_dims;

  // One slot table per worker, kept across chunks; Prorate() reads them all.
  std::vector<SlotTable> tables = std::vector<SlotTable>(1);

  Diagnostics diagnostics;
  int64_t rows_seen = 0;
  bool saw_duration = false, saw_no_duration = false;
  bool interval_inferred = false;
  // Duplicates across chunks: per series (resource, device, consumer ids),
  // its rows' (instant ns, fingerprint of the values), sorted. Empty for a
  // one-shot allocation (single_chunk); only the rows at newest_instant with
  // ordered_chunks.
  absl::flat_hash_map<SeriesKey, std::vector<std::pair<int64_t, uint64_t>>> history;
  bool single_chunk = false;
  // policy.ordered_chunks (a stream; Allocate() clears it): the newest
  // instant so far (no later row may come before it), the history only of
  // the rows at it (TrimHistory), and per series its spacings as Finish()
  // checks them.
  bool ordered = false;
  int64_t newest_instant = std::numeric_limits<int64_t>::min();
  int64_t newest_before_chunk = std::numeric_limits<int64_t>::min();  // newest_instant before this chunk
  absl::flat_hash_map<SeriesKey, SpacingTally> tallies;
  bool went_back = false;  // a chunk refused for going back in time (ordered)
  absl::Status sticky = absl::OkStatus();
  bool finished = false;

  int32_t InternResource(std::string_view name) {
    auto [it, inserted] = resource_ids.try_emplace(
        std::string(name), static_cast<int32_t>(resource_names.size()));
    if (inserted) {
      resource_names.emplace_back(name);
      resources.emplace_back();
    }
    return it->second;
  }

  int32_t InternConsumer(std::string_view name) {
    HashConsumers();
    // One hash: a new name's key is made in its slot, viewing the kept copy.
    return consumer_ids
        .lazy_emplace(absl::string_view(name.data(), name.size()),
                      [&](const auto& construct) {
                        const auto id = static_cast<int32_t>(consumer_names.size());
                        const std::string& kept = consumer_names.emplace_back(name);
                        construct(absl::string_view(kept.data(), kept.size()), id);
                        ++consumers_hashed;
                      })
        ->second;
  }

  // The first names a chunk brings in strictly increasing order (a sorted
  // dictionary: its names are distinct) are taken as they are: ids in
  // their order, hashed only when a name must be looked up (a workload, a
  // later chunk). High-cardinality fleets have a name per few samples.
  // Returns false, taking nothing, when the state has names or `dictionary`
  // is not in strict order; empty names (no workload) are skipped.
  bool TakeSortedConsumers(std::span<const std::string_view> dictionary, std::vector<int32_t>& con_map) {
    if (!consumer_names.empty()) return false;
    std::string_view previous;
    bool first = true;
    for (std::string_view name : dictionary) {
      if (name.empty()) continue;
      if (!first && !(previous < name)) return false;
      previous = name;
      first = false;
    }
    for (size_t d = 0; d < dictionary.size(); ++d) {
      if (dictionary[d].empty()) continue;
      con_map[d] = static_cast<int32_t>(consumer_names.size());
      consumer_names.emplace_back(dictionary[d]);
    }
    return true;
  }

  void HashConsumers() {
    if (consumers_hashed == consumer_names.size()) return;
    consumer_ids.reserve(consumer_names.size());
    for (; consumers_hashed < consumer_names.size(); ++consumers_hashed) {
      const std::string& name = consumer_names[consumers_hashed];
      consumer_ids.emplace(absl::string_view(name.data(), name.size()), static_cast<int32_t>(consumers_hashed));
    }
  }

  absl::Status IndexCosts(const CostColumns& costs);
  absl::Status IndexInventory(const InventoryColumns& inventory);
  absl::Status IndexWorkloads(const WorkloadColumns& workloads);
  absl::Status IndexDowntime(const DowntimeColumns& downtime);
  absl::Status IndexCarbon(const CarbonIntensityColumns& carbon);
  // The carbon intensity at instant t and the span [*lo, *hi) around t it
  // holds over (NaN in a gap between windows).
  double CarbonAt(int64_t t, int32_t resource, int64_t* lo, int64_t* hi) const;
  absl::Status ResolveKeys();
  void BuildSegments();
  void CountPrimaryOverlaps();
  absl::Status CheckIntervals(const SampleColumns& s, const internal::ChunkSeries& chunk);
  absl::Status CheckStreamIntervals() const;
  // `spacing`: "has a sample every 300 s", or what is known of the median.
  std::string SpacingMessage(std::string_view resource, int32_t device, std::string_view consumer,
                             std::string_view spacing) const;
  std::string SpacingMessage(const SeriesKey& key, std::string_view spacing) const;
  int64_t FindDuplicates(const SampleColumns& s, internal::ChunkSeries& chunk, const std::vector<int32_t>& res_map,
                         const std::vector<int32_t>& con_map);
  absl::Status CheckNotBeforeEarlierChunks(const SampleColumns& s);
  void TrimHistory();
  void TallySpacings(const SampleColumns& s, const internal::ChunkSeries& chunk, const std::vector<int32_t>& res_map,
                     const std::vector<int32_t>& con_map);
  [[nodiscard]] int64_t RowNumber(int64_t i) const { return rows_seen + i; }
  JoinTable BuildJoin(const std::vector<uint8_t>& line_observed, const std::vector<uint8_t>& line_oversubscribed,
                      const std::vector<double>& line_down) const;

  // Adds the rows worker w owns into `out`; reads the state only.
  template <bool kHasDuration, bool kHasPower>
  absl::Status AccumulateWorker(const SampleColumns& s, const internal::ChunkSeries& chunk, int w,
                                const std::vector<int32_t>& res_map, const std::vector<int32_t>& con_map,
                                Partial& out) const;
  void Flush(SeriesSum& a, SlotTable& table) const;
  void AddAcross(SeriesSum& a, SlotTable& table, int64_t t, int64_t t_end, double share, double util,
                 double mem, double power, bool chunk_has_power) const;
  absl::Status BadRowError(const SampleColumns& s, int64_t i, const std::vector<int32_t>& res_map) const;
  absl::Status SampleValueError(const SampleColumns& s, int64_t i) const;

  absl::StatusOr<Allocation> Prorate();
  void EnergyColumns(const std::vector<GroupTotals>& totals, const std::vector<uint32_t>& order,
                     Allocation& out) const;
};

absl::Status Allocator::State::IndexCosts(const CostColumns& costs) {
  constexpr std::string_view kTable = "costs";
  const size_t n = costs.resource_id.size();
  GPUCOST_RETURN_IF_ERROR(CheckLength(kTable, "start", costs.start.size(), n));
  GPUCOST_RETURN_IF_ERROR(CheckLength(kTable, "end", costs.end.size(), n));
  GPUCOST_RETURN_IF_ERROR(CheckLength(kTable, "cost", costs.cost.size(), n));
  has_list_cost = costs.list_cost.has_value();
  if (has_list_cost) GPUCOST_RETURN_IF_ERROR(CheckLength(kTable, "list_cost", costs.list_cost->size(), n));
  if (costs.primary) GPUCOST_RETURN_IF_ERROR(CheckLength(kTable, "primary", costs.primary->size(), n));
  if (costs.quantity_hours) {
    GPUCOST_RETURN_IF_ERROR(CheckLength(kTable, "quantity_hours", costs.quantity_hours->size(), n));
  }
  if (costs.driver) GPUCOST_RETURN_IF_ERROR(CheckLength(kTable, "driver", costs.driver->size(), n));
  if (costs.region) {
    GPUCOST_RETURN_IF_ERROR(CheckLength(kTable, "region", costs.region->size(), n));
    GPUCOST_RETURN_IF_ERROR(CheckCodes(kTable, "region", *costs.region, 0));
  }
  GPUCOST_RETURN_IF_ERROR(CheckCodes(kTable, "resource_id", costs.resource_id, 0));
  has_currency = costs.currency.has_value();
  std::vector<int32_t> currency_ids;  // dictionary entry -> currency id
  if (has_currency) {
    GPUCOST_RETURN_IF_ERROR(CheckLength(kTable, "currency", costs.currency->size(), n));
    GPUCOST_RETURN_IF_ERROR(CheckCodes(kTable, "currency", *costs.currency, 0));
    absl::flat_hash_map<std::string, int32_t> index;
    for (std::string_view name : costs.currency->dictionary) {
      auto [it, inserted] = index.try_emplace(std::string(name), static_cast<int32_t>(currency_names.size()));
      if (inserted) currency_names.emplace_back(name);
      currency_ids.push_back(it->second);
    }
  }

  // Dictionary entry -> resource id; null and "" name no resource (kNoName).
  std::vector<int32_t> ids(costs.resource_id.dictionary.size(), kNoName);
  for (size_t d = 0; d < ids.size(); ++d) ids[d] = InternResource(costs.resource_id.dictionary[d]);
  lines.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto row = static_cast<int64_t>(i);
    int64_t start = 0, end = 0;
    GPUCOST_RETURN_IF_ERROR(ReadPeriod(kTable, row, costs.start[i], costs.end[i], costs.time_unit, &start, &end));
    const double cost = costs.cost[i];
    if (!std::isfinite(cost)) return RowError(kTable, row, "cost", absl::StrCat(Num(cost), " is not a finite amount"));
    const double list = has_list_cost ? (*costs.list_cost)[i] : 0.0;
    if (!std::isfinite(list)) return RowError(kTable, row, "list_cost", absl::StrCat(Num(list), " is not a finite amount"));
    const int32_t code = costs.resource_id.codes[i];
    Line line{code == kNullCode ? kNoName : ids[code], start, end, cost, list, static_cast<double>(end - start)};
    if (costs.quantity_hours) {
      // NaN: the whole period; otherwise a positive, finite number of hours.
      const double q = (*costs.quantity_hours)[i];
      if (!std::isnan(q)) {
        if (!(q > 0) || !std::isfinite(q)) {
          return RowError(kTable, row, "quantity_hours", absl::StrCat(Num(q), " is not a positive number of hours"));
        }
        line.billed = std::min(line.billed, q * kNanosPerHourD);
      }
    }
    if (costs.primary) line.primary = (*costs.primary)[i] != 0;
    if (costs.region && (*costs.region).codes[i] != kNullCode && line.resource != kNoName) {
      // SEMANTICS 9: a resource's region (for carbon intensity) is its lines'.
      const std::string_view region = costs.region->dictionary[costs.region->codes[i]];
      if (resource_region.size() <= static_cast<size_t>(line.resource)) resource_region.resize(line.resource + 1);
      std::string& known = resource_region[line.resource];
      if (known.empty()) {
        known = std::string(region);
      } else if (!region.empty() && known != region) {
        return RowError(kTable, row, "region",
                        absl::StrCat(Quoted(region), ": resource ", Quoted(resource_names[line.resource]),
                                     " is in region ", Quoted(known), " on an earlier line"));
      }
    }
    if (costs.driver) {
      const uint8_t driver = (*costs.driver)[i];
      if (driver > static_cast<uint8_t>(CostDriver::kEnergy)) {
        return RowError(kTable, row, "driver",
                        absl::StrCat(driver, " is not a cost driver (expected \"gpu_time\" or \"energy\")"));
      }
      line.energy_driven = driver == static_cast<uint8_t>(CostDriver::kEnergy);
    }
    if (has_currency) {
      const int32_t c = costs.currency->codes[i];
      if (c == kNullCode || costs.currency->dictionary[c].empty()) {
        return RowError(kTable, row, "currency", "missing currency");
      }
      line.currency = currency_ids[c];
    }
    lines.push_back(line);
  }
  return absl::OkStatus();
}

absl::Status Allocator::State::IndexInventory(const InventoryColumns& inv) {
  constexpr std::string_view kTable = "inventory";
  const size_t n = inv.resource_id.size();
  GPUCOST_RETURN_IF_ERROR(CheckLength(kTable, "device", inv.device.size(), n));
  GPUCOST_RETURN_IF_ERROR(CheckLength(kTable, "mem_capacity", inv.mem_capacity.size(), n));
  has_embodied = inv.embodied_kg_per_gpu_hour.has_value();
  if (has_embodied) {
    GPUCOST_RETURN_IF_ERROR(
        CheckLength(kTable, "embodied_kg_per_gpu_hour", inv.embodied_kg_per_gpu_hour->size(), n));
  }
  GPUCOST_RETURN_IF_ERROR(CheckCodes(kTable, "resource_id", inv.resource_id, 0));
  std::vector<int32_t> ids(inv.resource_id.dictionary.size());
  for (size_t d = 0; d < ids.size(); ++d) ids[d] = InternResource(inv.resource_id.dictionary[d]);

  absl::flat_hash_map<std::pair<int32_t, int32_t>, int64_t> seen;  // -> row
  std::vector<int32_t> row_resource(n);
  for (size_t i = 0; i < n; ++i) {
    const auto row = static_cast<int64_t>(i);
    const int32_t code = inv.resource_id.codes[i];
    if (code == kNullCode || inv.resource_id.dictionary[code].empty()) {
      return RowError(kTable, row, "resource_id", "missing resource id");
    }
    const int32_t r = ids[code];
    row_resource[i] = r;
    if (inv.device[i] < 0) return RowError(kTable, row, "device", absl::StrCat("device ", inv.device[i], " is negative"));
    const double mem = inv.mem_capacity[i];
    if (!(mem > 0 && mem <= kMaxDeviceBytes)) {
      return RowError(kTable, row, "mem_capacity",
                      absl::StrCat(Num(mem), " is not a device's memory: a positive number of bytes up to 2^64"));
    }
    auto [it, inserted] = seen.try_emplace({r, inv.device[i]}, row);
    if (!inserted) {
      return RowError(kTable, row, "device",
                      absl::StrCat("duplicate (resource_id, device) (", Quoted(resource_names[r]), ", ",
                                   inv.device[i], "); first at row ", it->second));
    }
    if (has_embodied) {
      const double kg = (*inv.embodied_kg_per_gpu_hour)[i];
      if (!(kg >= 0 && kg <= 1e6)) {
        return RowError(kTable, row, "embodied_kg_per_gpu_hour",
                        absl::StrCat(Num(kg), " is not kg CO2e per GPU-hour (a number >= 0)"));
      }
      const double per_ns = kg / kNanosPerHourD;
      if (resources[r].devices > 0 && resources[r].embodied != per_ns) {
        return RowError(kTable, row, "embodied_kg_per_gpu_hour",
                        absl::StrCat(Num(kg), " differs from the other devices of ", Quoted(resource_names[r]),
                                     ": one value per node"));
      }
      resources[r].embodied = per_ns;
    }
    resources[r].devices += 1;
    resources[r].mem_capacity += mem;
  }
  // Devices are numbered 0..N_r-1.
  for (size_t i = 0; i < n; ++i) {
    const Resource& res = resources[row_resource[i]];
    if (inv.device[i] >= res.devices) {
      return RowError(kTable, static_cast<int64_t>(i), "device",
                      absl::StrCat("device ", inv.device[i], " of ", Quoted(resource_names[row_resource[i]]),
                                   ", which has ", res.devices, " devices (expected 0..", res.devices - 1, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status Allocator::State::IndexDowntime(const DowntimeColumns& dt) {
  constexpr std::string_view kTable = "downtime";
  const size_t n = dt.resource_id.size();
  GPUCOST_RETURN_IF_ERROR(CheckLength(kTable, "start", dt.start.size(), n));
  GPUCOST_RETURN_IF_ERROR(CheckLength(kTable, "end", dt.end.size(), n));
  GPUCOST_RETURN_IF_ERROR(CheckCodes(kTable, "resource_id", dt.resource_id, 0));
  std::vector<int32_t> ids(dt.resource_id.dictionary.size());
  for (size_t d = 0; d < ids.size(); ++d) ids[d] = InternResource(dt.resource_id.dictionary[d]);
  for (size_t i = 0; i < n; ++i) {
    const auto row = static_cast<int64_t>(i);
    const int32_t code = dt.resource_id.codes[i];
    if (code == kNullCode || dt.resource_id.dictionary[code].empty()) {
      return RowError(kTable, row, "resource_id", "missing resource id");
    }
    int64_t start = 0, end = 0;
    GPUCOST_RETURN_IF_ERROR(ReadPeriod(kTable, row, dt.start[i], dt.end[i], dt.time_unit, &start, &end));
    resources[ids[code]].down.emplace_back(start, end);
  }
  // Each resource's windows as their union: sorted, overlapping ones merged.
  for (Resource& res : resources) {
    if (res.down.empty()) continue;
    has_downtime = true;
    std::sort(res.down.begin(), res.down.end());
    size_t out = 0;
    for (size_t k = 1; k < res.down.size(); ++k) {
      if (res.down[k].first <= res.down[out].second) {
        res.down[out].second = std::max(res.down[out].second, res.down[k].second);
      } else {
        res.down[++out] = res.down[k];
      }
    }
    res.down.resize(out + 1);
  }
  return absl::OkStatus();
}

absl::Status Allocator::State::IndexCarbon(const CarbonIntensityColumns& ci) {
  constexpr std::string_view kTable = "carbon_intensity";
  const size_t n = ci.start.size();
  GPUCOST_RETURN_IF_ERROR(CheckLength(kTable, "end", ci.end.size(), n));
  GPUCOST_RETURN_IF_ERROR(CheckLength(kTable, "g_per_kwh", ci.g_per_kwh.size(), n));
  if (ci.region) {
    GPUCOST_RETURN_IF_ERROR(CheckLength(kTable, "region", ci.region->size(), n));
    GPUCOST_RETURN_IF_ERROR(CheckCodes(kTable, "region", *ci.region, 0));
  }
  struct Window {
    std::string_view region;  // "" = every region without windows of its own
    int64_t start, end;
    double g;
    int64_t row;
  };
  std::vector<Window> windows(n);
  for (size_t i = 0; i < n; ++i) {
    const auto row = static_cast<int64_t>(i);
    Window& w = windows[i];
    GPUCOST_RETURN_IF_ERROR(ReadPeriod(kTable, row, ci.start[i], ci.end[i], ci.time_unit, &w.start, &w.end));
    if (ci.region && ci.region->codes[i] != kNullCode) w.region = ci.region->dictionary[ci.region->codes[i]];
    w.g = ci.g_per_kwh[i];
    w.row = row;
    if (!(w.g >= 0.0) || !std::isfinite(w.g)) {
      return RowError(kTable, row, "g_per_kwh", absl::StrCat(Num(w.g), " is not a non-negative intensity"));
    }
  }
  std::sort(windows.begin(), windows.end(), [](const Window& a, const Window& b) {
    return a.region != b.region ? a.region < b.region : a.start < b.start;
  });
  absl::flat_hash_map<std::string_view, int32_t> region_index;
  for (size_t k = 0; k < n; ++k) {
    const Window& w = windows[k];
    if (k > 0 && windows[k - 1].region == w.region && w.start < windows[k - 1].end) {
      return RowError(kTable, std::max(w.row, windows[k - 1].row), "start",
                      absl::StrCat("its window overlaps the window of row ", std::min(w.row, windows[k - 1].row),
                                   w.region.empty() ? "" : absl::StrCat(" in region ", Quoted(w.region)),
                                   ": an instant has one intensity"));
    }
    auto [it, inserted] = region_index.try_emplace(w.region, static_cast<int32_t>(carbon.size()));
    if (inserted) carbon.emplace_back();
    CarbonWindows& c = carbon[it->second];
    c.start.push_back(w.start);
    c.end.push_back(w.end);
    c.g.push_back(w.g);
  }
  has_carbon_table = true;
  if (auto it = region_index.find(""); it != region_index.end()) carbon_default = it->second;
  carbon_of_resource.assign(resources.size(), carbon_default);
  for (size_t r = 0; r < resource_region.size(); ++r) {
    if (auto it = region_index.find(resource_region[r]); !resource_region[r].empty() && it != region_index.end()) {
      carbon_of_resource[r] = it->second;
    }
  }
  return absl::OkStatus();
}

double Allocator::State::CarbonAt(int64_t t, int32_t resource, int64_t* lo, int64_t* hi) const {
  *lo = std::numeric_limits<int64_t>::min();
  *hi = std::numeric_limits<int64_t>::max();
  const int32_t which =
      static_cast<size_t>(resource) < carbon_of_resource.size() ? carbon_of_resource[resource] : carbon_default;
  if (which < 0) return std::numeric_limits<double>::quiet_NaN();
  const CarbonWindows& c = carbon[which];
  // The last window starting at or before t.
  const auto k = std::upper_bound(c.start.begin(), c.start.end(), t) - c.start.begin() - 1;
  if (k >= 0 && t < c.end[k]) {
    *lo = c.start[k];
    *hi = c.end[k];
    return c.g[k];
  }
  if (k >= 0) *lo = c.end[k];
  if (k + 1 < static_cast<int64_t>(c.start.size())) *hi = c.start[k + 1];
  return std::numeric_limits<double>::quiet_NaN();
}

absl::Status Allocator::State::IndexWorkloads(const WorkloadColumns& wl) {
  constexpr std::string_view kTable = "workloads";
  const size_t n = wl.consumer.size();
  GPUCOST_RETURN_IF_ERROR(CheckCodes(kTable, "consumer", wl.consumer, 0));
  GPUCOST_RETURN_IF_ERROR(CheckNotReserved(kTable, "consumer", wl.consumer, 0));
  for (const LabelColumn& label : wl.labels) {
    GPUCOST_RETURN_IF_ERROR(CheckLength(kTable, label.name, label.values.size(), n));
    GPUCOST_RETURN_IF_ERROR(CheckCodes(kTable, label.name, label.values, 0));
    GPUCOST_RETURN_IF_ERROR(CheckNotReserved(kTable, label.name, label.values, 0));
    if (label.name == "consumer" || label.name == "resource_id" || label.name == "period" ||
        label.name == "currency" || label.name == "cost_line") {
      return TableError(kTable, absl::StrCat("label column ", Quoted(label.name),
                                             " clashes with a built-in key of the same name"));
    }
  }
  std::vector<int32_t> row_consumer(n);
  for (size_t i = 0; i < n; ++i) {
    const int32_t code = wl.consumer.codes[i];
    if (code == kNullCode || wl.consumer.dictionary[code].empty()) {
      return RowError(kTable, static_cast<int64_t>(i), "consumer", "missing consumer");
    }
    row_consumer[i] = InternConsumer(wl.consumer.dictionary[code]);
  }
  workload_consumers = static_cast<int32_t>(consumer_names.size());
  for (const LabelColumn& col : wl.labels) {
    Label label;
    label.name = std::string(col.name);
    label.by_consumer.assign(workload_consumers, kNullCode);
    std::vector<int64_t> first_row(workload_consumers, -1);
    std::vector<int32_t> ids(col.values.dictionary.size());
    for (size_t d = 0; d < ids.size(); ++d) {
      auto [it, inserted] = label.value_ids.try_emplace(std::string(col.values.dictionary[d]),
                                                       static_cast<int32_t>(label.values.size()));
      if (inserted) label.values.emplace_back(col.values.dictionary[d]);
      ids[d] = it->second;
    }
    for (size_t i = 0; i < n; ++i) {
      const int32_t code = col.values.codes[i];
      const int32_t value = code == kNullCode ? kNullCode : ids[code];
      const int32_t c = row_consumer[i];
      if (first_row[c] >= 0 && label.by_consumer[c] != value) {
        return RowError(kTable, static_cast<int64_t>(i), label.name,
                        absl::StrCat("consumer ", Quoted(consumer_names[c]), " has another ",
                                     Quoted(label.name), " at row ", first_row[c]));
      }
      if (first_row[c] < 0) first_row[c] = static_cast<int64_t>(i);
      label.by_consumer[c] = value;
    }
    labels.push_back(std::move(label));
  }
  return absl::OkStatus();
}

absl::Status Allocator::State::ResolveKeys() {
  bool has_period = false;
  for (const std::string& name : policy.by) {
    for (const KeyDim& dim : key_dims) {
      if (dim.name == name) return ParameterError("by", absl::StrCat(Quoted(name), " appears twice"));
    }
    if (name == "currency" && has_currency) {
      key_dims.push_back({KeyKind::kCurrency, name});
    } else if (name == "consumer") {
      key_dims.push_back({KeyKind::kConsumer, name});
    } else if (name == "resource_id") {
      key_dims.push_back({KeyKind::kResource, name});
    } else if (name == "period") {
      key_dims.push_back({KeyKind::kPeriod, name});
      has_period = true;
    } else if (name == "cost_line") {
      key_dims.push_back({KeyKind::kCostLine, name});
    } else {
      int found = -1;
      for (size_t l = 0; l < labels.size(); ++l) {
        if (labels[l].name == name) found = static_cast<int>(l);
      }
      if (found < 0) {
        return ParameterError("by", absl::StrCat("unknown column ", Quoted(name),
                                                 " (expected consumer, resource_id, period, cost_line or a "
                                                 "label column of the workloads table)"));
      }
      key_dims.push_back({KeyKind::kLabel, name, found});
    }
  }
  if (has_period && !policy.freq.has_value()) {
    return ParameterError("freq", "required when by contains \"period\"");
  }
  // SEMANTICS 4: two currencies are never added, so currency is always a key.
  if (has_currency && std::none_of(key_dims.begin(), key_dims.end(),
                                   [](const KeyDim& d) { return d.kind == KeyKind::kCurrency; })) {
    key_dims.push_back({KeyKind::kCurrency, "currency"});
  }
  return absl::OkStatus();
}

void Allocator::State::BuildSegments() {
  std::vector<int64_t> order(lines.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return lines[a].resource < lines[b].resource;
  });
  std::vector<int64_t> bounds;
  std::vector<int32_t> cover;
  // Segments of resource r from its lines order[lo, hi) and its down
  // windows, whose edges are segment bounds too: a segment is wholly up or
  // wholly down.
  auto segment = [&](int32_t r, size_t lo, size_t hi) {
    const std::vector<std::pair<int64_t, int64_t>>& down = resources[r].down;
    bounds.clear();
    for (size_t k = lo; k < hi; ++k) {
      bounds.push_back(lines[order[k]].start);
      bounds.push_back(lines[order[k]].end);
    }
    for (const auto& [from, to] : down) {
      bounds.push_back(from);
      bounds.push_back(to);
    }
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    const auto base = static_cast<int64_t>(seg_start.size());
    const auto count = static_cast<int64_t>(bounds.size()) - 1;
    cover.assign(count + 1, 0);
    for (size_t k = lo; k < hi; ++k) {
      Line& line = lines[order[k]];
      const int64_t a = std::lower_bound(bounds.begin(), bounds.end(), line.start) - bounds.begin();
      const int64_t b = std::lower_bound(bounds.begin(), bounds.end(), line.end) - bounds.begin();
      line.seg_begin = base + a;
      line.seg_end = base + b;
      cover[a] += 1;
      cover[b] -= 1;
    }
    int32_t active = 0;
    size_t window = 0;
    for (int64_t s = 0; s < count; ++s) {
      active += cover[s];
      seg_start.push_back(bounds[s]);
      seg_end.push_back(bounds[s + 1]);
      seg_active.push_back(active > 0 ? 1 : 0);
      if (has_downtime) {
        while (window < down.size() && down[window].second <= bounds[s]) ++window;
        seg_down.push_back(window < down.size() && down[window].first <= bounds[s] ? 1 : 0);
      }
    }
    resources[r].seg_begin = base;
    resources[r].seg_end = base + count;
  };
  std::vector<uint8_t> segmented(resources.size(), 0);
  for (size_t lo = 0; lo < order.size();) {
    size_t hi = lo;
    const int32_t r = lines[order[lo]].resource;
    while (hi < order.size() && lines[order[hi]].resource == r) ++hi;
    if (resources[r].devices > 0) {
      segment(r, lo, hi);
      segmented[r] = 1;
    }
    lo = hi;
  }
  // A resource down but never billed: its samples in the windows are
  // dropped all the same.
  for (size_t r = 0; r < resources.size() && has_downtime; ++r) {
    if (!segmented[r] && resources[r].devices > 0 && !resources[r].down.empty()) {
      segment(static_cast<int32_t>(r), 0, 0);
    }
  }
}

// SEMANTICS 5: primary lines whose period overlaps another primary line of
// the same resource. Sorted by start, a line overlaps an earlier one when it
// starts before their latest end, and a later one when the next starts
// before its own end.
void Allocator::State::CountPrimaryOverlaps() {
  line_primary_overlap.assign(lines.size(), 0);
  std::vector<int64_t> order;
  for (size_t k = 0; k < lines.size(); ++k) {
    if (lines[k].primary && lines[k].resource != kNoName) order.push_back(static_cast<int64_t>(k));
  }
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return std::pair(lines[a].resource, lines[a].start) < std::pair(lines[b].resource, lines[b].start);
  });
  int64_t max_end = std::numeric_limits<int64_t>::min();
  for (size_t k = 0; k < order.size(); ++k) {
    const Line& line = lines[order[k]];
    if (k == 0 || lines[order[k - 1]].resource != line.resource) max_end = std::numeric_limits<int64_t>::min();
    const bool next_overlaps = k + 1 < order.size() && lines[order[k + 1]].resource == line.resource &&
                               lines[order[k + 1]].start < line.end;
    if (line.start < max_end || next_overlaps) {
      ++diagnostics.lines_primary_overlap;
      line_primary_overlap[order[k]] = 1;
    }
    max_end = std::max(max_end, line.end);
  }
}

absl::StatusOr<std::unique_ptr<Allocator>> Allocator::Create(
    const CostColumns& costs, const InventoryColumns& inventory,
    const WorkloadColumns* workloads, const AllocationPolicy& policy,
    const DowntimeColumns* downtime, const CarbonIntensityColumns* carbon) {
  if (!(policy.alpha >= 0.0 && policy.alpha <= 1.0)) {
    return ParameterError("alpha", absl::StrCat(Num(policy.alpha), " is outside [0, 1]"));
  }
  if (policy.pue && !(*policy.pue >= 1.0 && std::isfinite(*policy.pue))) {
    return ParameterError("pue", absl::StrCat(Num(*policy.pue), " is not a power usage effectiveness (a number >= 1)"));
  }
  if (policy.carbon_intensity && !(*policy.carbon_intensity >= 0.0 && std::isfinite(*policy.carbon_intensity))) {
    return ParameterError("carbon_intensity",
                          absl::StrCat(Num(*policy.carbon_intensity), " is not a non-negative gCO2e/kWh"));
  }
  auto state = std::make_unique<State>();
  if (policy.interval_seconds.has_value()) {
    const double interval = *policy.interval_seconds;
    if (!(interval > 0.0) || !(interval <= static_cast<double>(kMaxDuration) / 1e9)) {
      return ParameterError("interval", absl::StrCat(Num(interval), " is not a positive number of seconds up to ten years"));
    }
    state->interval_ns = std::llround(interval * 1e9);
    if (state->interval_ns <= 0) return ParameterError("interval", "shorter than a nanosecond");
  }
  state->policy = policy;
  state->ordered = policy.ordered_chunks;
  state->InternResource("");  // kNoName
  GPUCOST_RETURN_IF_ERROR(state->IndexCosts(costs));
  GPUCOST_RETURN_IF_ERROR(state->IndexInventory(inventory));
  if (workloads != nullptr) GPUCOST_RETURN_IF_ERROR(state->IndexWorkloads(*workloads));
  if (downtime != nullptr) GPUCOST_RETURN_IF_ERROR(state->IndexDowntime(*downtime));
  if (carbon != nullptr) GPUCOST_RETURN_IF_ERROR(state->IndexCarbon(*carbon));
  GPUCOST_RETURN_IF_ERROR(state->ResolveKeys());
  state->BuildSegments();
  state->CountPrimaryOverlaps();
  state->diagnostics.lines_total = static_cast<int64_t>(state->lines.size());
  return std::unique_ptr<Allocator>(new Allocator(std::move(state)));
}

Allocator::Allocator(std::unique_ptr<State> state) : state_(std::move(state)) {}
Allocator::~Allocator() = default;

bool Allocator::WentBackInTime() const { return state_->went_back; }

absl::Status Allocator::State::SampleValueError(const SampleColumns& s, int64_t i) const {
  constexpr std::string_view kTable = "usage";
  const int64_t row = RowNumber(i);
  if (s.timestamp[i] == kMissingInstant) return RowError(kTable, row, "timestamp", "missing instant");
  if (!InstantInRange(s.timestamp[i], s.time_unit)) return RowError(kTable, row, "timestamp", kOutOfRange);
  const double share = s.share[i];
  if (!(share > 0.0 && share <= 1.0)) return RowError(kTable, row, "share", absl::StrCat(Num(share), " is outside (0, 1]"));
  const double util = s.util[i];
  if (!(util >= 0.0 && util <= 1.0)) return RowError(kTable, row, "util", absl::StrCat(Num(util), " is outside [0, 1]"));
  const double mem = s.mem_used[i];
  if (!(mem >= 0.0 && mem <= kMaxDeviceBytes)) {
    return RowError(kTable, row, "mem_used",
                    absl::StrCat(Num(mem), " is not a device's memory: a non-negative number of bytes up to 2^64"));
  }
  if (s.duration.has_value() && (*s.duration)[i] <= 0) {
    return RowError(kTable, row, "duration", absl::StrCat((*s.duration)[i], " is not a positive duration"));
  }
  if (s.duration.has_value() && !DurationInRange((*s.duration)[i], s.time_unit)) {
    return RowError(kTable, row, "duration", absl::StrCat((*s.duration)[i], " is longer than ten years"));
  }
  if (s.power_w.has_value() && !PowerOk((*s.power_w)[i])) {
    return RowError(kTable, row, "power_w", absl::StrCat(Num((*s.power_w)[i]), " is not a draw in watts (>= 0, finite; NaN: not measured)"));
  }
  return absl::InternalError("sample value check disagreed with its explanation");
}

// A row the series pass could not place: its resource, consumer or device.
absl::Status Allocator::State::BadRowError(const SampleColumns& s, int64_t i,
                                           const std::vector<int32_t>& res_map) const {
  constexpr std::string_view kTable = "usage";
  const int32_t r_code = s.resource_id.codes[i], device = s.device[i], c_code = s.consumer.codes[i];
  if (r_code < 0 || r_code >= static_cast<int32_t>(s.resource_id.dictionary.size())) {
    return RowError(kTable, RowNumber(i), "resource_id",
                    r_code == kNullCode ? std::string("missing resource id")
                                        : absl::StrCat("code ", r_code, " is not in the dictionary"));
  }
  if (c_code < kNullCode || c_code >= static_cast<int32_t>(s.consumer.dictionary.size())) {
    return RowError(kTable, RowNumber(i), "consumer", absl::StrCat("code ", c_code, " is not in the dictionary"));
  }
  const int32_t resource = res_map[r_code];
  return RowError(kTable, RowNumber(i), "device",
                  absl::StrCat("device ", device, " of ", Quoted(resource_names[resource]), ", which has ",
                               resources[resource].devices, " devices (expected 0..",
                               resources[resource].devices - 1, ")"));
}

// One sample's values are valid; a single branch on the hot path.
template <bool kHasDuration, bool kHasPower>
inline bool SampleValuesOk(const internal::RawBounds& b, int64_t raw_ts, double share, double util, double mem,
                           int64_t dur, double power) {
  bool ok = (raw_ts >= b.ts_lo) & (raw_ts < b.ts_hi) & (share > 0.0) & (share <= 1.0) & (util >= 0.0) &
            (util <= 1.0) & (mem >= 0.0) & (mem <= kMaxDeviceBytes);
  if constexpr (kHasDuration) ok &= (dur > 0) & (dur <= b.dur_hi);
  if constexpr (kHasPower) ok &= PowerOk(power);
  return ok;
}

// The cached span's sums go to its slot (or count outside every line).
void Allocator::State::Flush(SeriesSum& a, SlotTable& table) const {
  a.rows += a.cache_rows;
  if (a.slot == kOutsideSlot) {
    a.outside += a.cache_rows;
    a.outside_held += a.h;
  } else if (a.slot == kDownSlot) {
    a.down += a.cache_rows;
  } else if (a.slot < kDownSlot) {
    Accumulator& acc = table.At(a.slot);
    acc.held += a.h;
    acc.used += a.u;
    acc.mem += a.m;
    acc.energy += a.e;
    if (has_carbon_table) {
      if (std::isnan(a.ci)) {
        a.no_intensity += a.cache_rows;
      } else {
        acc.carbon += a.e * a.ci;
      }
    }
    a.used += a.cache_rows;
  }
  a.h = a.u = a.m = a.e = 0;
  a.cache_rows = 0;
}

// A sample that leaves the series' cached span: it is split over the active
// segments it overlaps, and the span that holds it whole (a segment, or a
// span no line covers) becomes the cache.
void Allocator::State::AddAcross(SeriesSum& a, SlotTable& table, int64_t t, int64_t t_end, double share,
                                 double util, double mem, double power, bool chunk_has_power) const {
  Flush(a, table);
  a.slot = kNoSlot;
  a.cache_start = std::numeric_limits<int64_t>::max();
  a.cache_end = std::numeric_limits<int64_t>::min();
  const Resource& res = resources[a.resource];
  const int64_t* sstart = seg_start.data();
  const int64_t* send = seg_end.data();
  const bool free = a.kind == SeriesSum::Kind::kFree;
  // A free device's energy is the idle row's (SEMANTICS 9): with power, its
  // samples add to a slot of no consumer.
  const bool free_no_energy = free && !chunk_has_power;
  const auto d = static_cast<double>(t_end - t);
  // The whole sample's instant decides its carbon intensity; the cache
  // holds only rows of that one intensity.
  int64_t ci_lo = std::numeric_limits<int64_t>::min(), ci_hi = std::numeric_limits<int64_t>::max();
  const double ci = has_carbon_table ? CarbonAt(t, a.resource, &ci_lo, &ci_hi) : 0.0;
  auto cache = [&](int64_t lo, int64_t hi, uint32_t slot) {
    a.cache_start = std::max(lo, ci_lo);
    a.cache_end = std::min(hi, ci_hi);
    a.slot = slot;
    a.h = share * d;
    a.u = a.h * util;
    a.m = mem * d;
    a.e = a.h * power;
    a.ci = ci;
    a.cache_rows = 1;
  };
  // First segment ending after t.
  const int64_t first = std::upper_bound(send + res.seg_begin, send + res.seg_end, t) - send;
  if (has_downtime && first < res.seg_end && sstart[first] <= t && seg_down[first]) {
    // Its instant is in a down window: dropped whole (SEMANTICS 10); a free
    // device's sample stays counted as free and observes nothing.
    const uint32_t slot = free ? kNotAllocatedSlot : kDownSlot;
    if (t_end <= send[first]) return cache(sstart[first], send[first], slot);
    ++a.rows;
    if (!free) ++a.down;
    return;
  }
  bool overlaps = false;
  for (int64_t seg = first; seg < res.seg_end && sstart[seg] < t_end; ++seg) {
    if (!seg_active[seg] || (has_downtime && seg_down[seg])) continue;
    const int64_t lo = std::max(t, sstart[seg]);
    const int64_t hi = std::min(t_end, send[seg]);
    if (hi <= lo) continue;
    overlaps = true;
    if (free_no_energy) {  // free devices allocate nothing but make lines observed (SEMANTICS 2)
      table.observed[seg] = 1;
      if (lo == t && hi == t_end) return cache(sstart[seg], send[seg], kNotAllocatedSlot);
      continue;
    }
    const uint32_t slot = table.IndexOf(seg, a.consumer);
    if (lo == t && hi == t_end) return cache(sstart[seg], send[seg], slot);
    const auto o = static_cast<double>(hi - lo);
    Accumulator& acc = table.At(slot);
    acc.held += share * o;
    acc.used += share * util * o;
    acc.mem += mem * o;
    acc.energy += share * power * o;
    if (has_carbon_table && !std::isnan(ci)) acc.carbon += share * power * o * ci;
  }
  if (overlaps) {  // split over segments, not cached: counted here
    ++a.rows;
    if (!free) ++a.used;
    if (has_carbon_table && std::isnan(ci)) ++a.no_intensity;
    return;
  }
  // Outside every line: the span around it that no active segment covers.
  int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  if (first > res.seg_begin) lo = send[first - 1];
  if (first < res.seg_end) {
    if (sstart[first] >= t_end) {
      hi = sstart[first];
    } else {  // inside an inactive segment
      lo = sstart[first];
      hi = send[first];
    }
  }
  const uint32_t slot = free ? kNotAllocatedSlot : kOutsideSlot;
  if (t >= lo && t_end <= hi) return cache(lo, hi, slot);
  ++a.rows;  // across spans outside every line, not cached
  if (!free) {
    ++a.outside;
    a.outside_held += share * d;
  }
}

// Adds the rows worker w owns, in row order, then its gathered series in
// time order. Stops at the worker's first bad row, whose error it returns
// with the row (the first in row order of all workers wins).
template <bool kHasDuration, bool kHasPower>
absl::Status Allocator::State::AccumulateWorker(const SampleColumns& s, const internal::ChunkSeries& chunk,
                                                int w, const std::vector<int32_t>& res_map,
                                                const std::vector<int32_t>& con_map, Partial& out) const {
  const internal::WorkerSeries& mine = chunk.by_worker[w];
  SlotTable& table = *out.slots;
  std::vector<SeriesSum> sums(mine.series.size());
  for (size_t k = 0; k < sums.size(); ++k) {
    const internal::Series& series = mine.series[k];
    SeriesSum& a = sums[k];
    a.resource = res_map[series.resource_code];
    a.consumer = series.consumer_code == kNullCode ? kNoConsumer : con_map[series.consumer_code];
    if (resources[a.resource].devices == 0) {
      // Nothing to join: one span for all time, only counted.
      a.kind = SeriesSum::Kind::kUnknownResource;
      a.slot = kNotAllocatedSlot;
      a.cache_start = std::numeric_limits<int64_t>::min();
      a.cache_end = std::numeric_limits<int64_t>::max();
    } else if (a.consumer == kNoConsumer) {
      a.kind = SeriesSum::Kind::kFree;
    }
  }
  const int64_t* ts = s.timestamp.data();
  const double* share = s.share.data();
  const double* util = s.util.data();
  const double* mem = s.mem_used.data();
  const int64_t* dur = kHasDuration ? s.duration->data() : nullptr;
  const double* power = kHasPower ? s.power_w->data() : nullptr;
  const int32_t* series_of_row = chunk.series_of_row.get();
  const TimeUnit unit = s.time_unit;
  const internal::RawBounds bounds = internal::BoundsOf(unit);
  const int64_t interval = interval_ns;
  auto add = [&](SeriesSum& a, int64_t raw_t, int64_t raw_d, double sh, double ut, double me, double pw) {
    const int64_t t = ScaleInstant(raw_t, unit);
    const int64_t d = kHasDuration ? ScaleInstant(raw_d, unit) : interval;
    const int64_t t_end = t + d;
    a.first = std::min(a.first, t);
    a.last = std::max(a.last, t_end);
    if constexpr (kHasPower) {  // NaN: not measured, no energy (counted)
      const bool measured = pw == pw;
      a.no_power += measured ? 0 : 1;
      pw = measured ? pw : 0.0;
    }
    if (t >= a.cache_start && t_end <= a.cache_end) [[likely]] {
      const auto o = static_cast<double>(d);
      const double held = sh * o;
      a.h += held;
      a.u += held * ut;
      a.m += me * o;
      if constexpr (kHasPower) a.e += held * pw;
      ++a.cache_rows;
      return;
    }
    AddAcross(a, table, t, t_end, sh, ut, me, pw, kHasPower);
  };
  absl::Status status = absl::OkStatus();
  internal::ForOwnedRows(chunk, s, w, [&](int64_t i) {
    const int32_t id = series_of_row[i];
    if (id == internal::kBadRow) [[unlikely]] {
      status = BadRowError(s, i, res_map);
      out.error_row = i;
      return false;
    }
    if (!SampleValuesOk<kHasDuration, kHasPower>(bounds, ts[i], share[i], util[i], mem[i],
                                                 kHasDuration ? dur[i] : 1, kHasPower ? power[i] : 0.0))
        [[unlikely]] {
      status = SampleValueError(s, i);
      out.error_row = i;
      return false;
    }
    // Copies are dropped; gathered series are added below, in time order.
    if ((id & (internal::kDroppedBit | internal::kGatheredBit)) != 0) return true;
    add(sums[id], ts[i], kHasDuration ? dur[i] : 0, share[i], util[i], mem[i], kHasPower ? power[i] : 0.0);
    return true;
  });
  if (!status.ok()) return status;
  for (size_t k = 0; k < sums.size(); ++k) {
    const internal::Series& series = mine.series[k];
    if (!series.gathered) continue;
    for (int64_t p = series.sorted_begin; p < series.sorted_end; ++p) {
      const internal::GatheredRow& r = mine.gathered_rows[p];
      if constexpr (kHasPower) {
        // Gathered rows read their power at random rows of the chunk: the
        // one read ahead hides the cache miss (rows stay 48 bytes).
        constexpr int64_t kAhead = 16;
        if (p + kAhead < series.sorted_end) __builtin_prefetch(power + mine.gathered_rows[p + kAhead].chunk_row());
      }
      if (!r.dropped()) add(sums[k], r.t, r.duration, r.share, r.util, r.mem, kHasPower ? power[r.chunk_row()] : 0.0);
    }
  }
  for (SeriesSum& a : sums) {
    const double unknown_held = a.h;  // an unknown resource's one span is never left
    Flush(a, table);
    out.without_power += a.no_power;
    out.without_intensity += a.no_intensity;
    SampleStats& stats = table.stats[a.resource];
    stats.samples += a.rows;
    stats.first = std::min(stats.first, a.first);
    stats.last = std::max(stats.last, a.last);
    switch (a.kind) {
      case SeriesSum::Kind::kUnknownResource:
        if (a.consumer == kNoConsumer) {
          out.no_consumer += a.rows;
          stats.no_consumer += a.rows;
        } else {
          out.unknown_resource += a.rows;
          stats.unknown_resource += a.rows;
          stats.unjoined_ns += unknown_held;
        }
        break;
      case SeriesSum::Kind::kFree:
        out.no_consumer += a.rows;
        stats.no_consumer += a.rows;
        break;
      case SeriesSum::Kind::kHeld:
        out.outside_lines += a.outside;
        out.used += a.used;
        out.in_downtime += a.down;
        stats.outside_lines += a.outside;
        stats.in_downtime += a.down;
        stats.unjoined_ns += a.outside_held;
        break;
    }
  }
  return absl::OkStatus();
}

std::vector<double> SeriesSpacings(const SampleColumns& samples) {
  // Every resource code as if not in an inventory: no device is refused here.
  const std::vector<int32_t> devices_of_code(samples.resource_id.dictionary.size(), -1);
  const internal::ChunkSeries chunk = internal::ScanChunkSeries(samples, devices_of_code, 1);
  std::vector<double> out;
  for (const internal::Series& series : chunk.by_worker[0].series) {
    if (!std::isnan(series.spacing_ns)) out.push_back(series.spacing_ns / 1e9);
  }
  return out;
}

double InferInterval(std::vector<double> spacings) {
  return spacings.empty() ? 60.0 : internal::Median(spacings);
}

// SEMANTICS 1.3: the interval inferred from the series' spacings when none
// was given, and every series checked against it. The series refused is the
// one whose first row comes first.
absl::Status Allocator::State::CheckIntervals(const SampleColumns& s, const internal::ChunkSeries& chunk) {
  constexpr std::string_view kTable = "usage";
  if (interval_ns == 0) {
    std::vector<double> known;
    for (const internal::WorkerSeries& mine : chunk.by_worker) {
      for (const internal::Series& series : mine.series) {
        if (!std::isnan(series.spacing_ns)) known.push_back(series.spacing_ns);
      }
    }
    interval_ns = known.empty() ? 60 * kNanosPerSecond : std::max<int64_t>(1, std::llround(internal::Median(known)));
    interval_inferred = true;
  }
  const auto interval = static_cast<double>(interval_ns);
  // A stream's chunk may hold any subset of a series, whose spacing is never
  // below the whole series' (adding instants only splits gaps): here only a
  // series too dense is certain; Finish() checks the whole series.
  const double too_sparse = single_chunk ? 2 * interval : std::numeric_limits<double>::infinity();
  const internal::Series* refused = nullptr;
  for (const internal::WorkerSeries& mine : chunk.by_worker) {
    for (const internal::Series& series : mine.series) {
      const double spacing = series.spacing_ns;
      if (std::isnan(spacing) || (spacing <= too_sparse && spacing >= 0.5 * interval)) continue;
      if (refused == nullptr || series.first_row < refused->first_row) refused = &series;
    }
  }
  if (refused == nullptr) return absl::OkStatus();
  auto name = [](const StringColumn& col, int32_t code) {
    return code >= 0 && code < static_cast<int32_t>(col.dictionary.size()) ? col.dictionary[code]
                                                                            : std::string_view();
  };
  return RowError(kTable, rows_seen + refused->first_row, "timestamp",
                  SpacingMessage(name(s.resource_id, refused->resource_code), refused->device,
                                 name(s.consumer, refused->consumer_code),
                                 absl::StrCat("has a sample every ", Seconds(refused->spacing_ns))));
}

std::string Allocator::State::SpacingMessage(const SeriesKey& key, std::string_view spacing) const {
  return SpacingMessage(resource_names[key.resource], key.device,
                        key.consumer < 0 ? std::string_view() : std::string_view(consumer_names[key.consumer]),
                        spacing);
}

std::string Allocator::State::SpacingMessage(std::string_view resource, int32_t device, std::string_view consumer,
                                             std::string_view spacing) const {
  return absl::StrCat("the series (resource_id ", Quoted(resource), ", device ", device, ", consumer ",
                      Quoted(consumer), ") ", absl::string_view(spacing.data(), spacing.size()),
                      ", but the interval is ",
                      Seconds(static_cast<double>(interval_ns)),
                      interval_inferred ? (single_chunk ? " (inferred: the median spacing of all series)"
                                                        : " (inferred from the first chunk)")
                                        : " (given)",
                      "; give the interval the data was sampled at, or a duration column");
}

// A stream's series, whole at last: each checked against the interval as
// allocate() checks them (the chunks checked only what they could).
absl::Status Allocator::State::CheckStreamIntervals() const {
  if (single_chunk || saw_duration || !saw_no_duration) return absl::OkStatus();
  const auto interval = static_cast<double>(interval_ns);
  if (ordered) {  // the tallies in place of the (trimmed) history
    for (const auto& [key, tally] : tallies) {
      double median;
      const int side = tally.Side(0.5 * interval, 2 * interval, &median);
      if (side == 0) continue;
      return TableError("usage",
                        SpacingMessage(key, !std::isnan(median)
                                                ? absl::StrCat("has a sample every ", Seconds(median))
                                                : absl::StrCat("has a median spacing ", side < 0 ? "under " : "over ",
                                                               Seconds(side < 0 ? 0.5 * interval : 2 * interval))));
    }
    return absl::OkStatus();
  }
  std::vector<double> diffs;
  for (const auto& [key, seen] : history) {
    diffs.clear();
    for (size_t k = 1; k < seen.size(); ++k) {
      if (seen[k].first > seen[k - 1].first) diffs.push_back(static_cast<double>(seen[k].first - seen[k - 1].first));
    }
    if (diffs.empty()) continue;
    const double spacing = internal::Median(diffs);
    if (spacing <= 2 * interval && spacing >= 0.5 * interval) continue;
    return TableError("usage", SpacingMessage(key, absl::StrCat("has a sample every ", Seconds(spacing))));
  }
  return absl::OkStatus();
}

namespace {

// The stream-wide keys of a worker's series of a chunk (ids, not the
// chunk's codes). A null consumer and "" are different values: a row of one
// never copies the other.
std::vector<SeriesKey> StreamKeys(const internal::WorkerSeries& mine, const std::vector<int32_t>& res_map,
                                  const std::vector<int32_t>& con_map) {
  constexpr int32_t kNullConsumer = kNoConsumer - 1;
  std::vector<SeriesKey> keys(mine.series.size());
  for (size_t k = 0; k < keys.size(); ++k) {
    const internal::Series& series = mine.series[k];
    keys[k] = {res_map[series.resource_code], series.device,
               series.consumer_code == kNullCode ? kNullConsumer : con_map[series.consumer_code]};
  }
  return keys;
}

std::string InstantText(int64_t ns) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", absl::FromUnixNanos(ns), absl::UTCTimeZone());
}

}  // namespace

// ordered_chunks, checked rather than trusted: no instant of the chunk
// before the newest of the chunks before, so a row can repeat an earlier
// chunk's only at that instant, and the history of earlier instants is never
// needed. (Equal is allowed: a table sorted by time, sliced anywhere, may
// split an instant between chunks.) Instants out of range are skipped here
// (refused with their row later).
absl::Status Allocator::State::CheckNotBeforeEarlierChunks(const SampleColumns& s) {
  const int64_t* ts = s.timestamp.data();
  const auto ticks = static_cast<int64_t>(s.time_unit);
  const int64_t before = newest_instant;
  newest_before_chunk = before;
  const auto n = static_cast<int64_t>(s.size());
  for (int64_t i = 0; i < n; ++i) {
    if (!InstantInRange(ts[i], s.time_unit)) continue;
    const int64_t t = ts[i] * ticks;
    if (t < before) {
      went_back = true;
      return RowError("usage", RowNumber(i), "timestamp",
                      absl::StrCat(InstantText(t), " is before ", InstantText(before),
                                   ", the newest instant of an earlier chunk (this chunk starts at row ", rows_seen,
                                   "): with ordered_chunks no chunk may go back in time, or a sample read twice "
                                   "could be counted twice"));
    }
    newest_instant = std::max(newest_instant, t);
  }
  return absl::OkStatus();
}

// ordered_chunks, after a chunk: each series' history cut to its rows at the
// newest instant, the only ones a later row may repeat; the memory of the
// rows before it is given back.
void Allocator::State::TrimHistory() {
  for (auto& [key, items] : history) {
    if (items.empty()) continue;
    const auto keep = std::lower_bound(items.begin(), items.end(),
                                       std::pair<int64_t, uint64_t>{newest_instant, 0});
    if (keep == items.begin()) continue;
    std::vector<std::pair<int64_t, uint64_t>>(keep, items.end()).swap(items);
  }
}

// ordered_chunks without durations: each series' instants, in time order,
// added to its tally (what Finish() checks the spacing on).
void Allocator::State::TallySpacings(const SampleColumns& s, const internal::ChunkSeries& chunk,
                                     const std::vector<int32_t>& res_map, const std::vector<int32_t>& con_map) {
  const auto interval = static_cast<double>(interval_ns);
  const double lo = 0.5 * interval, hi = 2 * interval;
  const int64_t* ts = s.timestamp.data();
  const int32_t* series_of_row = chunk.series_of_row.get();
  std::vector<SpacingTally*> of;  // per series of the worker
  for (int w = 0; w < chunk.workers; ++w) {
    const internal::WorkerSeries& mine = chunk.by_worker[w];
    const std::vector<SeriesKey> keys = StreamKeys(mine, res_map, con_map);
    for (const SeriesKey& key : keys) tallies.try_emplace(key);
    of.resize(keys.size());
    for (size_t k = 0; k < keys.size(); ++k) of[k] = &tallies.find(keys[k])->second;
    // Series in time order are read in row order; the others from their gathered copy, sorted.
    internal::ForOwnedRows(chunk, s, w, [&](int64_t i) {
      const int32_t id = series_of_row[i];
      if (id == internal::kBadRow || (id & (internal::kDroppedBit | internal::kGatheredBit)) != 0) return;
      of[static_cast<size_t>(id)]->Push(ScaleInstant(ts[i], s.time_unit), lo, hi);
    });
    for (size_t k = 0; k < keys.size(); ++k) {
      const internal::Series& series = mine.series[k];
      if (!series.gathered) continue;
      for (int64_t p = series.sorted_begin; p < series.sorted_end; ++p) {
        of[k]->Push(ScaleInstant(mine.gathered_rows[p].t, s.time_unit), lo, hi);
      }
    }
  }
}

// SEMANTICS 1.3: rows equal in every column are one sample read twice. In a
// chunk the series pass found them; across the chunks of a stream each
// series keeps its rows' (instant, fingerprint of the values), sorted: a row
// of an in-order stream is past the end and costs no search. Returns the
// rows found here, marked dropped in `chunk`.
int64_t Allocator::State::FindDuplicates(const SampleColumns& s, internal::ChunkSeries& chunk,
                                         const std::vector<int32_t>& res_map, const std::vector<int32_t>& con_map) {
  if (single_chunk) return 0;
  const int64_t* ts = s.timestamp.data();
  int32_t* series_of_row = chunk.series_of_row.get();
  // Values as == sees them: -0.0 and 0.0 alike (x + 0.0 is +0.0 for both).
  auto bits = [](double x) { return std::bit_cast<uint64_t>(x + 0.0); };
  // Raw values in the chunk's unit, scaled with a wrapping multiply: an absurd
  // instant or duration is refused later, and must not overflow here.
  auto fingerprint = [&](double share, double util, double mem, int64_t raw_duration) {
    return absl::HashOf(bits(share), bits(util), bits(mem),
                        s.duration ? ScaleInstant(raw_duration, s.time_unit) : -1);
  };
  using Item = std::pair<int64_t, uint64_t>;
  // Every worker's series' histories found (or made) first, on one thread:
  // an insertion may move the others. A series is one worker's in a chunk,
  // so the workers then read and extend their own histories side by side.
  const int workers = chunk.workers;
  std::vector<std::vector<SeriesKey>> keys(workers);
  for (int w = 0; w < workers; ++w) {
    keys[w] = StreamKeys(chunk.by_worker[w], res_map, con_map);
    for (const SeriesKey& key : keys[w]) history.try_emplace(key);
  }
  std::vector<std::vector<std::vector<Item>*>> seen(workers);  // per worker, per series: its history
  std::vector<std::vector<size_t>> old_size(workers);           // what the history held before this chunk
  for (int w = 0; w < workers; ++w) {
    seen[w].resize(keys[w].size());
    old_size[w].resize(keys[w].size());
    for (size_t k = 0; k < keys[w].size(); ++k) {
      seen[w][k] = &history.find(keys[w][k])->second;
      old_size[w][k] = seen[w][k]->size();
    }
  }
  // With ordered chunks a row can repeat only a row of the newest earlier
  // instant, and only rows at this chunk's newest instant outlive it
  // (TrimHistory): the rows between are neither looked up nor kept.
  const int64_t repeatable = ordered ? newest_before_chunk : std::numeric_limits<int64_t>::min();
  auto wanted = [&](int64_t t) { return !ordered || t == repeatable || t == newest_instant; };
  std::vector<int64_t> found(workers, 0);
  internal::RunOnWorkers(workers, [&](int w) {
    internal::WorkerSeries& mine = chunk.by_worker[w];
    std::vector<std::vector<Item>*>& history_of_series = seen[w];
    const std::vector<size_t>& old = old_size[w];
    const size_t num_series = mine.series.size();
    // Each series' newest instant before this chunk, in one small array: a
    // row past it (every row of an in-order stream) is no copy, and its
    // history is not touched here.
    std::vector<int64_t> old_last(num_series, std::numeric_limits<int64_t>::min());
    for (size_t k = 0; k < num_series; ++k) {
      if (old[k] > 0) old_last[k] = (*history_of_series[k])[old[k] - 1].first;
    }
    // A row is a copy when its (instant, values) are in the history from
    // earlier chunks; otherwise it is kept, in row order in one buffer, and
    // appended to its series' history after the pass (series by series, not
    // a scattered push per row). Rows are read in row order (series in
    // order) or in their gathered copy (time order), never by random access.
    struct Kept {
      int32_t series;
      Item item;
    };
    std::vector<Kept> kept;
    const int64_t owned = internal::OwnedRowCount(chunk, static_cast<int64_t>(s.size()), w);
    kept.reserve(static_cast<size_t>(owned));  // at most every row the worker owns, without regrowing
    std::vector<int64_t> kept_of(num_series + 1, 0);
    auto add = [&](size_t k, const Item& item) {
      if (item.first <= old_last[k]) {  // among earlier rows (chunks out of time order): searched, kept at once
        std::vector<Item>& history_of = *history_of_series[k];
        if (std::binary_search(history_of.begin(), history_of.begin() + static_cast<std::ptrdiff_t>(old[k]), item)) {
          return false;  // a copy
        }
        history_of.push_back(item);
        return true;
      }
      kept.push_back({static_cast<int32_t>(k), item});
      ++kept_of[k + 1];
      return true;
    };
    internal::ForOwnedRows(chunk, s, w, [&](int64_t i) {
      const int32_t id = series_of_row[i];
      if (id == internal::kBadRow || (id & (internal::kDroppedBit | internal::kGatheredBit)) != 0) return;
      const int64_t t = ScaleInstant(ts[i], s.time_unit);
      if (!wanted(t)) return;
      const Item item{t, fingerprint(s.share[i], s.util[i], s.mem_used[i], s.duration ? (*s.duration)[i] : 0)};
      if (!add(static_cast<size_t>(id), item)) {
        series_of_row[i] |= internal::kDroppedBit;
        ++found[w];
      }
    });
    for (size_t k = 0; k < num_series; ++k) {
      const internal::Series& series = mine.series[k];
      if (!series.gathered) continue;
      for (int64_t p = series.sorted_begin; p < series.sorted_end; ++p) {
        internal::GatheredRow& r = mine.gathered_rows[p];
        if (r.dropped()) continue;
        const int64_t t = ScaleInstant(r.t, s.time_unit);
        if (!wanted(t)) continue;
        if (!add(k, Item{t, fingerprint(r.share, r.util, r.mem, r.duration)})) {
          series_of_row[r.row] |= internal::kDroppedBit;
          r.row = ~r.row;  // the accumulation reads the gathered copy
          ++found[w];
        }
      }
    }
    // The kept rows grouped by series (a stable counting pass), each group
    // appended to its history at once.
    std::partial_sum(kept_of.begin(), kept_of.end(), kept_of.begin());
    std::vector<Item> grouped(kept.size());
    {
      std::vector<int64_t> next(kept_of.begin(), kept_of.end() - 1);
      for (const Kept& k : kept) grouped[next[k.series]++] = k.item;
    }
    std::vector<Kept>().swap(kept);
    for (size_t k = 0; k < num_series; ++k) {
      std::vector<Item>& history_of = *history_of_series[k];
      history_of.insert(history_of.end(), grouped.begin() + kept_of[k], grouped.begin() + kept_of[k + 1]);
      if (history_of.size() == old[k]) continue;
      // The new part (in time order, ties by value unordered) sorted, then
      // merged when it goes back before the old end.
      const auto middle = history_of.begin() + static_cast<std::ptrdiff_t>(old[k]);
      if (!std::is_sorted(middle, history_of.end())) std::sort(middle, history_of.end());
      if (middle != history_of.begin() && *middle < *(middle - 1)) {
        std::inplace_merge(history_of.begin(), middle, history_of.end());
      }
    }
  });
  return std::accumulate(found.begin(), found.end(), int64_t{0});
}

absl::Status Allocator::AddSamples(const SampleColumns& s) {
  State& st = *state_;
  if (!st.sticky.ok()) return st.sticky;
  if (st.finished) return absl::FailedPreconditionError("Allocator: AddSamples after Finish");
  auto fail = [&](absl::Status status) {
    st.sticky = status;
    return status;
  };
  constexpr std::string_view kTable = "usage";
  const size_t n = s.timestamp.size();
  for (auto [name, size] : {std::pair<std::string_view, size_t>{"resource_id", s.resource_id.size()},
                            {"device", s.device.size()},
                            {"consumer", s.consumer.size()},
                            {"share", s.share.size()},
                            {"util", s.util.size()},
                            {"mem_used", s.mem_used.size()}}) {
    absl::Status status = CheckLength(kTable, name, size, n);
    if (!status.ok()) return fail(status);
  }
  if (s.duration.has_value()) {
    if (absl::Status status = CheckLength(kTable, "duration", s.duration->size(), n); !status.ok()) {
      return fail(status);
    }
  }
  if (s.power_w.has_value()) {
    if (absl::Status status = CheckLength(kTable, "power_w", s.power_w->size(), n); !status.ok()) {
      return fail(status);
    }
  }
  if (n > kMaxChunkRows) {
    return fail(TableError(kTable, absl::StrCat(n, " rows in one chunk; at most ", kMaxChunkRows,
                                                " (feed the Allocator in chunks)")));
  }
  if (absl::Status status = CheckNotReserved(kTable, "consumer", s.consumer, st.rows_seen); !status.ok()) {
    return fail(status);
  }
  // Chunk dictionaries -> ids: array lookups in the hot loop, never hashing.
  // Resources only in the telemetry get an id too (no devices), for the join.
  std::vector<int32_t> res_map(s.resource_id.dictionary.size(), kNoName);
  std::vector<int32_t> devices_of_code(res_map.size(), -1);
  for (size_t d = 0; d < res_map.size(); ++d) {
    res_map[d] = st.InternResource(s.resource_id.dictionary[d]);
    const int32_t devices = st.resources[res_map[d]].devices;
    devices_of_code[d] = devices > 0 ? devices : -1;
  }
  std::vector<int32_t> con_map(s.consumer.dictionary.size(), kNoConsumer);
  if (!st.TakeSortedConsumers(s.consumer.dictionary, con_map)) {
    st.HashConsumers();
    st.consumer_ids.reserve(st.consumer_ids.size() + con_map.size());  // one table, not a rehash per doubling
    for (size_t d = 0; d < con_map.size(); ++d) {
      if (!s.consumer.dictionary[d].empty()) con_map[d] = st.InternConsumer(s.consumer.dictionary[d]);
    }
  }
  if (st.ordered) {
    if (absl::Status status = st.CheckNotBeforeEarlierChunks(s); !status.ok()) return fail(status);
  }
  // Series: the interval checked (or inferred), rows read twice dropped.
  const int workers = WorkersFor(st.policy.threads, n);
  internal::ChunkSeries chunk = internal::ScanChunkSeries(s, devices_of_code, workers);
  if (s.duration.has_value()) {
    st.saw_duration = true;
  } else {
    st.saw_no_duration = true;
    if (absl::Status status = st.CheckIntervals(s, chunk); !status.ok()) return fail(status);
  }
  if (st.ordered && !st.saw_duration) st.TallySpacings(s, chunk, res_map, con_map);
  int64_t duplicates = st.FindDuplicates(s, chunk, res_map, con_map);
  if (st.ordered) st.TrimHistory();
  for (const internal::WorkerSeries& mine : chunk.by_worker) duplicates += mine.duplicates;

  // Each worker adds the rows of its resources into its own slot table.
  if (st.tables.size() < static_cast<size_t>(workers)) st.tables.resize(workers);
  for (SlotTable& table : st.tables) {
    table.stats.resize(st.resources.size());
    table.observed.resize(st.seg_start.size(), 0);
  }
  std::vector<Partial> parts(workers);
  for (int w = 0; w < workers; ++w) parts[w].slots = &st.tables[w];
  const bool power = s.power_w.has_value();
  auto work = [&](int w) {
    Partial& part = parts[w];
    if (s.duration.has_value()) {
      part.status = power ? st.AccumulateWorker<true, true>(s, chunk, w, res_map, con_map, part)
                          : st.AccumulateWorker<true, false>(s, chunk, w, res_map, con_map, part);
    } else {
      part.status = power ? st.AccumulateWorker<false, true>(s, chunk, w, res_map, con_map, part)
                          : st.AccumulateWorker<false, false>(s, chunk, w, res_map, con_map, part);
    }
  };
  internal::RunOnWorkers(workers, work);
  // The first error in row order, whatever the number of workers.
  const Partial* failed = nullptr;
  for (const Partial& part : parts) {
    if (!part.status.ok() && (failed == nullptr || part.error_row < failed->error_row)) failed = &part;
  }
  if (failed != nullptr) return fail(failed->status);
  for (Partial& part : parts) {
    st.diagnostics.samples_no_consumer += part.no_consumer;
    st.diagnostics.samples_unknown_resource += part.unknown_resource;
    st.diagnostics.samples_outside_lines += part.outside_lines;
    st.diagnostics.samples_used += part.used;
    st.diagnostics.samples_in_downtime += part.in_downtime;
    st.diagnostics.samples_without_power += part.without_power;
    st.diagnostics.samples_without_intensity += part.without_intensity;
  }
  if (power) {
    st.has_power = true;
  } else {
    st.rows_without_power_column += static_cast<int64_t>(n) - duplicates;
  }
  st.rows_seen += static_cast<int64_t>(n);
  st.diagnostics.samples_total += static_cast<int64_t>(n);
  st.diagnostics.samples_duplicate += duplicates;
  return absl::OkStatus();
}

// The join table (Allocation::join): lines summed per (resource, currency),
// the samples' per-resource stats gathered by the workers.
// `line_down`: each line's money on __down__ (empty without down time).
JoinTable Allocator::State::BuildJoin(const std::vector<uint8_t>& line_observed,
                                      const std::vector<uint8_t>& line_oversubscribed,
                                      const std::vector<double>& line_down) const {
  SampleStats none;
  std::vector<SampleStats> stats(resources.size(), none);
  for (const SlotTable& table : tables) {
    for (size_t r = 0; r < table.stats.size(); ++r) stats[r].Add(table.stats[r]);
  }
  struct Row {
    int32_t resource, currency;  // currency -1: none
    int64_t lines = 0, primary_lines = 0, primary_overlap = 0, oversubscribed = 0;
    double cost = 0, observed = 0, unobserved = 0, unattributed = 0, down = 0, billed_ns = 0;
    int64_t start = std::numeric_limits<int64_t>::max(), end = std::numeric_limits<int64_t>::min();
  };
  absl::flat_hash_map<std::pair<int32_t, int32_t>, size_t> index;
  std::vector<Row> rows;
  auto row_of = [&](int32_t resource, int32_t currency) -> Row& {
    auto [it, inserted] = index.try_emplace(std::pair(resource, currency), rows.size());
    if (inserted) rows.push_back({resource, currency});
    return rows[it->second];
  };
  for (size_t k = 0; k < lines.size(); ++k) {
    const Line& line = lines[k];
    Row& row = row_of(line.resource, has_currency ? line.currency : -1);
    const Resource& res = resources[line.resource];
    ++row.lines;
    row.primary_overlap += line_primary_overlap[k];
    row.oversubscribed += line_oversubscribed[k];
    row.cost += line.cost;
    const double down = line_down.empty() ? 0.0 : line_down[k];
    row.down += down;
    if (res.devices == 0) {
      row.unattributed += line.cost;
    } else if (line_observed[k]) {
      row.observed += line.cost - down;
    } else {
      row.unobserved += line.cost - down;  // 0 when wholly down
    }
    if (line.primary) {
      ++row.primary_lines;
      row.billed_ns += res.devices * line.billed;
    }
    row.start = std::min(row.start, line.start);
    row.end = std::max(row.end, line.end);
  }
  std::vector<uint8_t> billed(resources.size(), 0);
  for (const Row& row : rows) billed[row.resource] = 1;
  for (size_t r = 0; r < resources.size(); ++r) {
    if (stats[r].samples > 0 && !billed[r]) row_of(static_cast<int32_t>(r), -1);
  }
  auto currency_name = [&](int32_t c) -> std::string_view { return c < 0 ? std::string_view() : currency_names[c]; };
  std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    return std::pair(std::string_view(resource_names[a.resource]), currency_name(a.currency)) <
           std::pair(std::string_view(resource_names[b.resource]), currency_name(b.currency));
  });
  JoinTable join;
  auto time_or_missing = [](int64_t t, bool any) { return any ? t : kMissingInstant; };
  for (size_t k = 0; k < rows.size(); ++k) {
    const Row& row = rows[k];
    // A resource's samples go on its first row.
    const bool first = k == 0 || rows[k - 1].resource != row.resource;
    const SampleStats& st = first ? stats[row.resource] : none;
    join.resource_id.push_back(resource_names[row.resource]);
    join.currency.emplace_back(currency_name(row.currency));
    join.in_inventory.push_back(resources[row.resource].devices > 0 ? 1 : 0);
    join.lines.push_back(row.lines);
    join.primary_lines.push_back(row.primary_lines);
    join.lines_primary_overlap.push_back(row.primary_overlap);
    join.lines_oversubscribed.push_back(row.oversubscribed);
    join.cost.push_back(row.cost);
    join.cost_observed.push_back(row.observed);
    join.cost_unobserved.push_back(row.unobserved);
    join.cost_unattributed.push_back(row.unattributed);
    join.billed_gpu_hours.push_back(row.billed_ns / kNanosPerHourD);
    join.samples.push_back(st.samples);
    join.samples_no_consumer.push_back(st.no_consumer);
    join.samples_outside_lines.push_back(st.outside_lines);
    join.samples_unknown_resource.push_back(st.unknown_resource);
    join.unjoined_gpu_hours.push_back(st.unjoined_ns / kNanosPerHourD);
    join.cost_down.push_back(row.down);
    join.samples_in_downtime.push_back(st.in_downtime);
    join.lines_start.push_back(time_or_missing(row.start, row.lines > 0));
    join.lines_end.push_back(time_or_missing(row.end, row.lines > 0));
    join.samples_start.push_back(time_or_missing(st.first, st.samples > 0));
    join.samples_end.push_back(time_or_missing(st.last, st.samples > 0));
  }
  return join;
}

absl::StatusOr<Allocation> Allocator::Finish() {
  State& st = *state_;
  if (!st.sticky.ok()) return st.sticky;
  if (st.finished) return absl::FailedPreconditionError("Allocator: Finish called twice");
  st.finished = true;
  if (absl::Status status = st.CheckStreamIntervals(); !status.ok()) {
    st.sticky = status;
    return status;
  }
  return st.Prorate();
}

absl::StatusOr<Allocation> Allocator::State::Prorate() {
  // Slots grouped by segment (counting sort), so a line reads its segments'
  // consumers as contiguous ranges.
  const auto num_segments = static_cast<int64_t>(seg_start.size());
  std::vector<int64_t> seg_slot_begin(num_segments + 1, 0);
  std::vector<Slot> all_slots;
  // With several tables (threads, chunks) a (segment, consumer) pair may
  // occur more than once: a line's sums are merged by consumer below.
  for (const SlotTable& table : tables) {
    all_slots.insert(all_slots.end(), table.slots().begin(), table.slots().end());
  }
  for (const Slot& slot : all_slots) ++seg_slot_begin[slot.segment + 1];
  std::partial_sum(seg_slot_begin.begin(), seg_slot_begin.end(), seg_slot_begin.begin());
  std::vector<uint32_t> by_segment(all_slots.size());
  {
    std::vector<int64_t> next(seg_slot_begin.begin(), seg_slot_begin.end() - 1);
    for (size_t k = 0; k < all_slots.size(); ++k) {
      by_segment[next[all_slots[k].segment]++] = static_cast<uint32_t>(k);
    }
  }

  // Consumer keys: which id a consumer (or idle / unattributed) groups under.
  bool by_consumer = false, by_resource = false, by_labels = false, by_line = false;
  std::optional<PeriodFreq> period_freq;
  for (const KeyDim& dim : key_dims) {
    by_consumer |= dim.kind == KeyKind::kConsumer;
    by_resource |= dim.kind == KeyKind::kResource;
    by_labels |= dim.kind == KeyKind::kLabel;
    by_line |= dim.kind == KeyKind::kCostLine;
    if (dim.kind == KeyKind::kPeriod) period_freq = policy.freq;
  }
  const auto num_consumers = static_cast<int32_t>(consumer_names.size());
  const int32_t idle_id = num_consumers;              // pseudo-consumer ids
  const int32_t unattributed_id = num_consumers + 1;
  const int32_t unobserved_id = num_consumers + 2;
  const int32_t down_id = num_consumers + 3;
  constexpr int32_t kPseudo = 4;
  // Label value of a (pseudo-)consumer in label column l: an index into
  // labels[l].values, or one of four pseudo-values after them.
  auto label_value = [&](int l, int32_t consumer) -> int32_t {
    const auto nv = static_cast<int32_t>(labels[l].values.size());
    if (consumer == idle_id) return nv;
    if (consumer == unattributed_id) return nv + 1;
    if (consumer == unobserved_id) return nv + 3;
    if (consumer == down_id) return nv + 4;
    if (consumer < workload_consumers && labels[l].by_consumer[consumer] != kNullCode) {
      return labels[l].by_consumer[consumer];
    }
    return nv + 2;  // unlabelled
  };
  std::vector<int32_t> consumer_key(num_consumers + kPseudo, 0);
  std::vector<std::vector<int32_t>> label_tuples;  // tuple id -> label values
  if (by_consumer) {
    std::iota(consumer_key.begin(), consumer_key.end(), 0);
  } else if (by_labels) {
    absl::flat_hash_map<std::vector<int32_t>, int32_t> tuple_ids;
    std::vector<int32_t> tuple;
    for (int32_t c = 0; c < num_consumers + kPseudo; ++c) {
      tuple.clear();
      for (const KeyDim& dim : key_dims) {
        if (dim.kind == KeyKind::kLabel) tuple.push_back(label_value(dim.label, c));
      }
      auto [it, inserted] = tuple_ids.try_emplace(tuple, static_cast<int32_t>(label_tuples.size()));
      if (inserted) label_tuples.push_back(tuple);
      consumer_key[c] = it->second;
    }
  }

  absl::flat_hash_map<GroupKey, uint32_t> group_ids;
  std::vector<GroupKey> group_keys;
  std::vector<GroupTotals> totals;
  // Grouped by consumer or labels alone, a group is its consumer key: found
  // by index, not by a hash per (line, consumer).
  const bool keyed_by_consumer_only = !by_resource && !period_freq && !has_currency && !by_line;
  std::vector<int32_t> group_of_key(keyed_by_consumer_only ? consumer_key.size() : 0, -1);
  if (keyed_by_consumer_only) {  // at most a group per key: no copy of the groups per doubling
    group_keys.reserve(consumer_key.size());
    totals.reserve(consumer_key.size());
  }
  auto group = [&](int32_t consumer, size_t line_index) -> GroupTotals& {
    const Line& line = lines[line_index];
    const GroupKey key{consumer_key[consumer], by_resource ? line.resource : 0,
                       period_freq ? FloorToPeriod(line.start, *period_freq) : 0,
                       has_currency ? line.currency : 0, by_line ? static_cast<int64_t>(line_index) : 0};
    if (keyed_by_consumer_only) {
      int32_t& g = group_of_key[key.consumer_key];
      if (g < 0) {
        g = static_cast<int32_t>(totals.size());
        group_keys.push_back(key);
        totals.emplace_back();
      }
      return totals[g];
    }
    auto [it, inserted] = group_ids.try_emplace(key, static_cast<uint32_t>(totals.size()));
    if (inserted) {
      group_keys.push_back(key);
      totals.emplace_back();
    }
    return totals[it->second];
  };

  // A line's consumers with their sums over the line's segments.
  struct ConsumerSum {
    int32_t consumer;
    Accumulator acc;
  };
  // A segment is observed when a sample overlaps it: a slot of a consumer,
  // or a free device's sample (SEMANTICS 2).
  std::vector<uint8_t> seg_observed(num_segments, 0);
  for (const SlotTable& table : tables) {
    for (size_t seg = 0; seg < table.observed.size(); ++seg) seg_observed[seg] |= table.observed[seg];
  }
  for (const Slot& slot : all_slots) seg_observed[slot.segment] = 1;
  std::vector<uint8_t> line_observed(lines.size(), 0);
  std::vector<uint8_t> line_oversubscribed(lines.size(), 0);
  std::vector<double> line_down(has_downtime ? lines.size() : 0, 0.0);

  std::vector<ConsumerSum> sums;
  std::vector<double> phi;
  const double alpha = policy.alpha;
  for (size_t line_index = 0; line_index < lines.size(); ++line_index) {
    const Line& line = lines[line_index];
    const Resource& res = resources[line.resource];
    if (res.devices == 0) {
      GroupTotals& g = group(unattributed_id, line_index);
      g.cost += line.cost;
      g.list_cost += line.list_cost;
      ++diagnostics.lines_unattributed;
      continue;
    }
    double capacity = res.devices * line.billed;          // C, GPU-ns
    double mem_capacity = res.mem_capacity * line.billed;  // M, byte-ns
    // Hours count over primary lines only (SEMANTICS 4).
    const double hours = line.primary ? 1.0 : 0.0;
    // SEMANTICS 10: the down part goes to __down__; the rest is prorated as
    // a line of the up time's amount and capacity.
    double line_cost = line.cost, line_list = line.list_cost;
    if (has_downtime) {
      int64_t down_ns = 0;
      for (int64_t seg = line.seg_begin; seg < line.seg_end; ++seg) {
        if (seg_down[seg]) down_ns += seg_end[seg] - seg_start[seg];
      }
      if (down_ns > 0) {
        const double down = static_cast<double>(down_ns) / static_cast<double>(line.end - line.start);
        GroupTotals& g = group(down_id, line_index);
        g.cost += line.cost * down;
        line_down[line_index] = line.cost * down;
        g.list_cost += line.list_cost * down;
        g.gpu_ns += hours * capacity * down;
        g.embodied += hours * capacity * down * res.embodied;
        ++diagnostics.lines_down;
        line_cost = line.cost - line.cost * down;
        line_list = line.list_cost - line.list_cost * down;
        if (down_ns == line.end - line.start) continue;  // wholly down: never unobserved
        capacity *= 1.0 - down;
        mem_capacity *= 1.0 - down;
      }
    }
    bool observed = false;
    for (int64_t seg = line.seg_begin; seg < line.seg_end && !observed; ++seg) observed = seg_observed[seg] != 0;
    if (!observed) {  // nothing measured it: neither used nor idle
      GroupTotals& g = group(unobserved_id, line_index);
      g.cost += line_cost;
      g.list_cost += line_list;
      g.gpu_ns += hours * capacity;
      g.embodied += hours * capacity * res.embodied;
      ++diagnostics.lines_unobserved;
      continue;
    }
    line_observed[line_index] = 1;
    sums.clear();
    // SEMANTICS 9: free devices' energy (slots of no consumer) is the idle part.
    Accumulator free_part;
    for (int64_t seg = line.seg_begin; seg < line.seg_end; ++seg) {
      for (int64_t k = seg_slot_begin[seg]; k < seg_slot_begin[seg + 1]; ++k) {
        const Slot& slot = all_slots[by_segment[k]];
        if (slot.consumer == kNoConsumer) {
          free_part.energy += slot.acc.energy;
          free_part.carbon += slot.acc.carbon;
        } else {
          sums.push_back({slot.consumer, slot.acc});
        }
      }
    }
    // In consumer order, whatever the tables and segments the sums came
    // from: phi_sum then adds in one order for every thread count.
    {
      std::sort(sums.begin(), sums.end(), [](const ConsumerSum& a, const ConsumerSum& b) { return a.consumer < b.consumer; });
      size_t out = 0;
      for (size_t k = 0; k < sums.size(); ++k) {
        if (out > 0 && sums[out - 1].consumer == sums[k].consumer) {
          sums[out - 1].acc.Add(sums[k].acc);
        } else {
          sums[out++] = sums[k];
        }
      }
      sums.resize(out);
    }
    phi.resize(sums.size());
    double phi_sum = 0, held_sum = 0;
    // SEMANTICS 9: an energy-driven line is prorated by energy, phi = E_k /
    // E_line (free devices' energy included); with no energy, by the basis.
    double line_energy = 0;
    if (line.energy_driven) {
      line_energy = free_part.energy;
      for (const ConsumerSum& c : sums) line_energy += c.acc.energy;
      if (!(line_energy > 0.0)) ++diagnostics.lines_energy_fallback;
    }
    const bool by_energy = line_energy > 0.0;
    for (size_t k = 0; k < sums.size(); ++k) {
      const Accumulator& a = sums[k].acc;
      if (by_energy) {
        phi[k] = a.energy / line_energy;
      } else {
        switch (policy.basis) {
          case Basis::kAllocated: phi[k] = a.held / capacity; break;
          case Basis::kUsed: phi[k] = a.used / capacity; break;
          case Basis::kBlended: phi[k] = alpha * a.held / capacity + (1 - alpha) * a.mem / mem_capacity; break;
        }
      }
      phi_sum += phi[k];
      held_sum += a.held;
    }
    if (phi_sum > 1.0) {  // over-subscribed: normalise so the fractions sum to 1
      for (double& p : phi) p /= phi_sum;
      // Shares like 3/7 + 2/7 + 1/7 + 1/7 exceed 1 by rounding alone; only a
      // real excess is reported.
      if (phi_sum > 1.0 + kOversubscribedTolerance) {
        ++diagnostics.lines_oversubscribed;
        line_oversubscribed[line_index] = 1;
      }
    }
    const double taken = std::min(phi_sum, 1.0);
    const double idle = phi_sum >= 1.0 ? 0.0 : line_cost * (1.0 - phi_sum);
    const double idle_list = phi_sum >= 1.0 ? 0.0 : line_list * (1.0 - phi_sum);
    const bool share_idle = policy.idle == IdleMode::kShare && phi_sum > 0.0;
    const double idle_capacity = std::max(0.0, capacity - held_sum);
    for (size_t k = 0; k < sums.size(); ++k) {
      GroupTotals& g = group(sums[k].consumer, line_index);
      double cost = line_cost * phi[k];
      double list = line_list * phi[k];
      double energy = sums[k].acc.energy, co2 = sums[k].acc.carbon, gpu_ns = sums[k].acc.held;
      if (share_idle) {
        const double part = phi[k] / taken;
        cost += idle * part;
        list += idle_list * part;
        g.idle_cost += idle * part;
        energy += free_part.energy * part;
        co2 += free_part.carbon * part;
        gpu_ns += idle_capacity * part;  // for the embodied carbon only: gpu_hours stay the held hours
      }
      g.embodied += hours * gpu_ns * res.embodied;
      g.cost += cost;
      g.list_cost += list;
      g.gpu_ns += hours * sums[k].acc.held;
      g.used_ns += hours * sums[k].acc.used;
      g.mem_byte_ns += hours * sums[k].acc.mem;
      g.energy += hours * energy;
      g.carbon += hours * co2;
    }
    if (!share_idle) {
      GroupTotals& g = group(idle_id, line_index);
      g.cost += idle;
      g.idle_cost += idle;
      g.list_cost += idle_list;
      g.gpu_ns += hours * idle_capacity;
      g.embodied += hours * idle_capacity * res.embodied;
      g.energy += hours * free_part.energy;
      g.carbon += hours * free_part.carbon;
    }
  }

  // Key columns with sorted dictionaries, then rows sorted by key.
  Allocation out;
  if (saw_no_duration) diagnostics.interval_seconds = static_cast<double>(interval_ns) / 1e9;
  if (has_power) diagnostics.samples_without_power += rows_without_power_column;
  out.diagnostics = diagnostics;
  out.has_list_cost = has_list_cost;
  out.join = BuildJoin(line_observed, line_oversubscribed, line_down);
  const size_t rows = totals.size();
  auto sorted_dictionary = [](std::vector<std::string> names, std::vector<int32_t>& rank) {
    const std::vector<int32_t> order = SortedOrder(names);
    rank.assign(names.size(), 0);
    std::vector<std::string> dict(names.size());
    for (size_t k = 0; k < order.size(); ++k) {
      rank[order[k]] = static_cast<int32_t>(k);
      dict[k] = std::move(names[order[k]]);
    }
    return dict;
  };
  int label_dim = 0;
  for (const KeyDim& dim : key_dims) {
    KeyColumn col;
    col.name = dim.name;
    std::vector<int32_t> rank;
    switch (dim.kind) {
      case KeyKind::kPeriod:
        col.period.resize(rows);
        for (size_t g = 0; g < rows; ++g) col.period[g] = group_keys[g].period;
        break;
      case KeyKind::kCostLine:
        col.cost_line.resize(rows);
        for (size_t g = 0; g < rows; ++g) col.cost_line[g] = group_keys[g].cost_line;
        break;
      case KeyKind::kResource: {
        col.dictionary = sorted_dictionary(resource_names, rank);  // "" (kNoName) included
        col.codes.resize(rows);
        for (size_t g = 0; g < rows; ++g) col.codes[g] = rank[group_keys[g].resource];
        break;
      }
      case KeyKind::kCurrency: {
        col.dictionary = sorted_dictionary(currency_names, rank);
        col.codes.resize(rows);
        for (size_t g = 0; g < rows; ++g) col.codes[g] = rank[group_keys[g].currency];
        break;
      }
      case KeyKind::kConsumer: {
        // The last use of the names: moved, not copied.
        std::vector<std::string> names(std::make_move_iterator(consumer_names.begin()),
                                       std::make_move_iterator(consumer_names.end()));
        names.emplace_back(kIdle);
        names.emplace_back(kUnattributed);
        names.emplace_back(kUnobserved);
        if (has_downtime) names.emplace_back(kDown);
        col.dictionary = sorted_dictionary(std::move(names), rank);
        col.codes.resize(rows);
        for (size_t g = 0; g < rows; ++g) col.codes[g] = rank[group_keys[g].consumer_key];
        break;
      }
      case KeyKind::kLabel: {
        std::vector<std::string> names = labels[dim.label].values;
        names.emplace_back(kIdle);
        names.emplace_back(kUnattributed);
        names.emplace_back(kUnlabelled);
        names.emplace_back(kUnobserved);
        if (has_downtime) names.emplace_back(kDown);
        col.dictionary = sorted_dictionary(std::move(names), rank);
        col.codes.resize(rows);
        for (size_t g = 0; g < rows; ++g) {
          const int32_t key = group_keys[g].consumer_key;
          const int32_t value = by_consumer ? label_value(dim.label, key) : label_tuples[key][label_dim];
          col.codes[g] = rank[value];
        }
        ++label_dim;
        break;
      }
    }
    out.keys.push_back(std::move(col));
  }
  const std::vector<uint32_t> order = RowsInKeyOrder(out.keys, rows);
  for (KeyColumn& col : out.keys) {
    if (col.is_period() || col.is_cost_line()) {
      std::vector<int64_t>& values = col.is_period() ? col.period : col.cost_line;
      std::vector<int64_t> v(rows);
      for (size_t k = 0; k < rows; ++k) v[k] = values[order[k]];
      values = std::move(v);
    } else {
      std::vector<int32_t> v(rows);
      for (size_t k = 0; k < rows; ++k) v[k] = col.codes[order[k]];
      col.codes = std::move(v);
    }
  }
  out.cost.resize(rows);
  out.idle_cost.resize(rows);
  if (has_list_cost) out.list_cost.resize(rows);
  out.gpu_hours.resize(rows);
  out.effective_gpu_hours.resize(rows);
  out.mem_gib_hours.resize(rows);
  out.cost_per_effective_gpu_hour.resize(rows);
  for (size_t k = 0; k < rows; ++k) {
    const GroupTotals& t = totals[order[k]];
    out.cost[k] = t.cost;
    out.idle_cost[k] = t.idle_cost;
    if (has_list_cost) out.list_cost[k] = t.list_cost;
    out.gpu_hours[k] = t.gpu_ns / kNanosPerHourD;
    out.effective_gpu_hours[k] = t.used_ns / kNanosPerHourD;
    out.mem_gib_hours[k] = t.mem_byte_ns / kBytesPerGiB / kNanosPerHourD;
    out.cost_per_effective_gpu_hour[k] = out.effective_gpu_hours[k] == 0
                                             ? std::numeric_limits<double>::quiet_NaN()
                                             : out.cost[k] / out.effective_gpu_hours[k];
  }
  if (has_power) EnergyColumns(totals, order, out);
  if (has_embodied) {
    std::vector<double>& kg = out.embodied_co2e_kg.emplace(rows);
    for (size_t k = 0; k < rows; ++k) kg[k] = totals[order[k]].embodied;
  }
  return out;
}

// SEMANTICS 9: kWh, kWh x pue and kg CO2e per result row (in `order`).
void Allocator::State::EnergyColumns(const std::vector<GroupTotals>& totals, const std::vector<uint32_t>& order,
                                     Allocation& out) const {
  constexpr double kWattNanosPerKwh = 3.6e15;
  const size_t rows = order.size();
  const double pue = policy.pue.value_or(1.0);
  const bool co2e = has_carbon_table || policy.carbon_intensity.has_value();
  std::vector<double>& energy = out.energy_kwh.emplace(rows);
  if (policy.pue) out.facility_energy_kwh.emplace(rows);
  if (co2e) out.co2e_kg.emplace(rows);
  for (size_t k = 0; k < rows; ++k) {
    const GroupTotals& t = totals[order[k]];
    energy[k] = t.energy / kWattNanosPerKwh;
    if (policy.pue) (*out.facility_energy_kwh)[k] = energy[k] * pue;
    if (co2e) {
      // g/kWh x kWh / 1000 = kg; the table's intensities were summed per sample.
      const double g = has_carbon_table ? t.carbon / kWattNanosPerKwh : energy[k] * *policy.carbon_intensity;
      (*out.co2e_kg)[k] = g * pue / 1000.0;
    }
  }
}

absl::StatusOr<Allocation> Allocate(const CostColumns& costs, const SampleColumns& samples,
                                    const InventoryColumns& inventory,
                                    const WorkloadColumns* workloads,
                                    const AllocationPolicy& policy, const DowntimeColumns* downtime,
                                    const CarbonIntensityColumns* carbon) {
  GPUCOST_ASSIGN_OR_RETURN(std::unique_ptr<Allocator> allocator,
                           Allocator::Create(costs, inventory, workloads, policy, downtime, carbon));
  allocator->state_->ordered = false;  // one table, its rows in any order: ordered_chunks means nothing
  if (samples.size() <= kMaxChunkRows) {
    allocator->state_->single_chunk = true;  // no later chunk: no duplicate history
    GPUCOST_RETURN_IF_ERROR(allocator->AddSamples(samples));
    return allocator->Finish();
  }
  // Beyond a chunk's rows: fed as a stream, which gives the same result.
  for (size_t begin = 0; begin < samples.size(); begin += kMaxChunkRows) {
    GPUCOST_RETURN_IF_ERROR(allocator->AddSamples(samples.Slice(begin, kMaxChunkRows)));
  }
  return allocator->Finish();
}

}  // namespace gpucost
