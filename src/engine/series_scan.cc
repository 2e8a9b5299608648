#include "series_scan.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <barrier>
#include <bit>
#include <cmath>
#include <numeric>
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

// The median of positive differences `v` (ns) as MedianOf gives it, in
// about two passes: a histogram of 256 buckets over [lo, hi] finds the
// bucket of the middle rank, and only its values are selected among.
// Every value is positive, so v - lo cannot overflow.
// Jittered spacings cluster, so that bucket holds a handful.
double MedianOfSpacings(int64_t* v, size_t count, std::vector<int64_t>& scratch) {
  if (count == 0) return std::numeric_limits<double>::quiet_NaN();
  constexpr size_t kFew = 64;  // short series (pods of a few minutes): a select beats the histogram
  if (count <= kFew) {
    const size_t mid = count / 2;
    std::nth_element(v, v + mid, v + count);
    const auto upper = static_cast<double>(v[mid]);
    if (count % 2 == 1) return upper;
    return 0.5 * (static_cast<double>(*std::max_element(v, v + mid)) + upper);
  }
  // A value that is more than half of them is the median (a scraper's
  // gaps mostly are one value): a vote and a count, no histogram.
  int64_t candidate = 0;
  size_t votes = 0;
  for (size_t k = 0; k < count; ++k) {
    if (votes == 0) candidate = v[k];
    votes += v[k] == candidate ? 1 : static_cast<size_t>(-1);
  }
  if (2 * static_cast<size_t>(std::count(v, v + count, candidate)) > count) return static_cast<double>(candidate);
  const auto [min, max] = std::minmax_element(v, v + count);
  const int64_t lo = *min, hi = *max;
  if (lo == hi) return static_cast<double>(lo);
  const size_t mid = count / 2;
  const bool even = count % 2 == 0;
  const auto range = static_cast<uint64_t>(hi - lo);
  const int shift = std::max(0, static_cast<int>(std::bit_width(range)) - 8);
  std::array<uint32_t, 257> below{};  // below[b]: values in buckets < b
  for (size_t k = 0; k < count; ++k) ++below[(static_cast<uint64_t>(v[k] - lo) >> shift) + 1];
  for (size_t b = 1; b < below.size(); ++b) below[b] += below[b - 1];
  // Buckets of ranks mid - 1 (even counts) and mid.
  auto bucket_of = [&](size_t rank) {
    return static_cast<size_t>(std::upper_bound(below.begin(), below.end(), rank) - below.begin()) - 1;
  };
  const size_t first = bucket_of(even ? mid - 1 : mid), last = bucket_of(mid);
  scratch.clear();
  for (size_t k = 0; k < count; ++k) {
    const uint64_t b = static_cast<uint64_t>(v[k] - lo) >> shift;
    if (b >= first && b <= last) scratch.push_back(v[k]);
  }
  const size_t base = below[first];  // rank of scratch's smallest value
  const size_t upper_at = mid - base;
  std::nth_element(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(upper_at), scratch.end());
  const auto upper = static_cast<double>(scratch[upper_at]);
  if (!even) return upper;
  const auto lower = static_cast<double>(*std::max_element(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(upper_at)));
  return 0.5 * (lower + upper);
}

// The values a copy must repeat, besides its series and instant.
bool SameValues(const SampleColumns& s, int64_t a, int64_t b) {
  return s.share[a] == s.share[b] && s.util[a] == s.util[b] && s.mem_used[a] == s.mem_used[b] &&
         (!s.duration.has_value() || (*s.duration)[a] == (*s.duration)[b]);
}

// Scratch of SortByInstant, reused from series to series.
struct SortScratch {
  std::vector<GatheredRow> rows;
  std::vector<uint32_t> bucket;  // per row
  std::vector<uint32_t> count;   // per bucket: its rows, then its next position
};

// Sorts a series' rows by instant, ties in the order given, in linear time
// for telemetry: each row goes to the bucket (t - min) / span * count, a
// stable counting pass, and an insertion pass orders rows within buckets
// (one row a bucket when samples are evenly spaced, jittered or with gaps)
// as it copies them back. A crowded bucket (instants far from even) is
// sorted by comparison.
void SortByInstant(GatheredRow* b, GatheredRow* e, SortScratch& scratch) {
  const auto n = static_cast<size_t>(e - b);
  auto before = [](const GatheredRow& x, const GatheredRow& y) { return x.t < y.t; };
  // Rows [from, from + rows) inserted one by one into `to` (which may be
  // `from`): stable, and linear when each row is near its place.
  auto insert_all = [](const GatheredRow* from, GatheredRow* to, size_t rows) {
    for (size_t k = 0; k < rows; ++k) {
      const GatheredRow r = from[k];
      size_t j = k;
      for (; j > 0 && r.t < to[j - 1].t; --j) to[j] = to[j - 1];
      to[j] = r;
    }
  };
  constexpr size_t kSmall = 32;
  if (n <= kSmall) {
    insert_all(b, b, n);
    return;
  }
  int64_t lo = b->t, hi = b->t;
  bool sorted = true;
  for (const GatheredRow* p = b + 1; p != e; ++p) {
    sorted &= p[-1].t <= p->t;
    lo = std::min(lo, p->t);
    hi = std::max(hi, p->t);
  }
  if (sorted) return;
  const double scale = static_cast<double>(n - 1) / static_cast<double>(static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo));
  std::vector<uint32_t>& count = scratch.count;
  std::vector<uint32_t>& bucket = scratch.bucket;
  count.assign(n + 1, 0);
  bucket.resize(n);
  for (size_t k = 0; k < n; ++k) {
    const double at = static_cast<double>(static_cast<uint64_t>(b[k].t) - static_cast<uint64_t>(lo)) * scale;
    bucket[k] = static_cast<uint32_t>(std::min(n - 1, static_cast<size_t>(at)));  // monotone in t
    ++count[bucket[k] + 1];
  }
  uint32_t crowded = 0;
  for (size_t k = 1; k <= n; ++k) {
    crowded = std::max(crowded, count[k]);
    count[k] += count[k - 1];
  }
  if (crowded > kSmall) {
    std::stable_sort(b, e, before);
    return;
  }
  scratch.rows.resize(n);
  GatheredRow* bucketed = scratch.rows.data();
  for (size_t k = 0; k < n; ++k) bucketed[count[bucket[k]]++] = b[k];
  // Buckets are in instant order; within one, the insertion orders rows.
  insert_all(bucketed, b, n);
}

// Resource codes to workers: contiguous ranges of resources in the order
// they first appear in the chunk, each range about a worker's share of the
// rows. Telemetry lists a node's (or a series') rows together and nodes in
// a steady order (scrape after scrape, instant after instant), so each
// worker then owns long runs of rows and reads only its own cache lines;
// owners interleaved node by node made both workers read every line. The
// order is read from the first 65,536 rows (every node of a scrape), then
// from a sample of about 65,536 evenly spaced rows (series order, where a
// resource first appears late), which also counts the rows: ownership only
// balances the work (the result is the same for any owners), and a full
// count was a serial pass over every row before the workers start.
std::vector<uint8_t> AssignOwners(const SampleColumns& s, int workers) {
  const size_t codes = s.resource_id.dictionary.size();
  std::vector<uint8_t> owner(codes, 0);
  if (workers == 1) return owner;
  const int32_t* rc = s.resource_id.codes.data();
  const size_t n = s.resource_id.codes.size();
  std::vector<int64_t> rows(codes, 0);
  std::vector<uint8_t> seen(codes, 0);
  std::vector<int32_t> order;  // codes by first appearance
  order.reserve(codes);
  auto see = [&](int32_t c) {
    if (seen[c] == 0) {
      seen[c] = 1;
      order.push_back(c);
    }
  };
  constexpr size_t kPrefix = size_t{1} << 16;
  for (size_t i = 0; i < std::min(n, kPrefix); ++i) {
    if (static_cast<uint32_t>(rc[i]) < codes) see(rc[i]);
  }
  const size_t stride = std::max<size_t>(1, n >> 16);
  int64_t sampled = 0;
  for (size_t i = 0; i < n; i += stride) {
    const int32_t c = rc[i];
    if (static_cast<uint32_t>(c) >= codes) continue;
    see(c);
    ++rows[c];
    ++sampled;
  }
  // Each resource goes to the worker whose share of the sampled rows its
  // middle row falls in; resources neither read nor sampled are small and
  // stay with worker 0.
  int64_t before = 0;
  for (int32_t c : order) {
    const int64_t middle = 2 * before + rows[c];
    owner[c] = static_cast<uint8_t>(std::min<int64_t>(workers - 1, middle * workers / std::max<int64_t>(1, 2 * sampled)));
    before += rows[c];
  }
  return owner;
}

// The worker of a row's resource code; a bad code's row goes to worker 0,
// which refuses it.
uint8_t OwnerOf(const std::vector<uint8_t>& owner, int32_t code) {
  return static_cast<uint32_t>(code) < owner.size() ? owner[static_cast<uint32_t>(code)] : 0;
}

// Whether workers should walk lists of their rows rather than runs: the
// owners' runs in the first 65,536 rows (every node of a scrape) average
// fewer than four rows, as shuffled rows do (about one a run). A loop per
// one-row run cost every pass a mispredicted branch per row. Either way
// every worker walks its own rows in row order; this only picks the faster.
bool RunsAreShort(const SampleColumns& s, const std::vector<uint8_t>& owner) {
  const int32_t* rc = s.resource_id.codes.data();
  const size_t n = std::min(s.resource_id.codes.size(), size_t{1} << 16);
  if (n == 0) return false;
  size_t runs = 1;
  for (size_t i = 1; i < n; ++i) runs += OwnerOf(owner, rc[i]) != OwnerOf(owner, rc[i - 1]) ? 1 : 0;
  constexpr size_t kListBelowRunRows = 4;
  return runs * kListBelowRunRows > n;
}

// Recent consumers of one device and their series: node-scrape and time
// order visit every device between two samples of one series, so a series
// is found by two compares in one cache line here, and a hash only the first
// time (or when a device holds more consumers than the cache). Two-way set
// associative on the consumer code: set c % 4, ways set and set + 4, the
// newer in the first.
struct alignas(64) DeviceCache {
  static constexpr size_t kSets = 4;
  std::array<int32_t, 2 * kSets> consumer;
  std::array<int32_t, 2 * kSets> series;
  DeviceCache() {
    consumer.fill(std::numeric_limits<int32_t>::min());
    series.fill(-1);
  }
  [[nodiscard]] int32_t Find(int32_t c) const {
    const size_t set = static_cast<uint32_t>(c) % kSets;
    if (consumer[set] == c) return series[set];
    if (consumer[set + kSets] == c) return series[set + kSets];
    return -1;
  }
  void Put(int32_t c, int32_t id) {
    const size_t set = static_cast<uint32_t>(c) % kSets;
    consumer[set + kSets] = consumer[set];
    series[set + kSets] = series[set];
    consumer[set] = c;
    series[set] = id;
  }
};

// Rows at the latest instant of a series that differ in value: a row equal
// to one of them is a copy. More than this many sends the series to the sort.
constexpr int kTieRows = 4;

// Per-series state of the pass in row order (one cache line).
//
// Jittered scrapes make a series' spacing uneven, and its median would need
// a second look at its rows. But most of a scraper's differences are one
// value (a late scrape makes one long and one short difference), and a value
// that is more than half of the differences is their median, exactly. A
// majority vote (Boyer-Moore) names the candidate as the rows go by, and
// `since` counts its differences from the one that made it the candidate:
// when that alone is over half, the median is known without a second look.
struct alignas(64) ScanState {
  int64_t last = std::numeric_limits<int64_t>::min();  // latest instant seen
  int64_t first_diff = 0;                              // 0: one distinct instant so far
  int64_t candidate = 0;                               // the difference the vote favours
  int32_t diffs = 0;                                   // positive differences seen
  int32_t dropped = 0;                                 // copies found in row order
  int32_t vote = 0;                                    // the vote's count
  int32_t since = 0;                                   // the candidate's differences since it was named
  std::array<int32_t, kTieRows> tie_rows{};            // rows at `last`, distinct values
  int8_t ties = 0;
  bool irregular = false;
  bool gathered = false;

  void AddDifference(int64_t d) {
    if (first_diff == 0) first_diff = d;
    irregular |= d != first_diff;
    ++diffs;
    // Without branches: late scrapes make the outcome a coin toss per row,
    // and a mispredicted branch per third row cost more than these selects.
    const bool agrees = d == candidate;
    const bool renamed = !agrees & (vote == 0);
    candidate = renamed ? d : candidate;
    vote += agrees | renamed ? 1 : -1;
    since = renamed ? 1 : since + static_cast<int32_t>(agrees);
  }
  // The median of the differences when one value is more than half of them.
  [[nodiscard]] bool MajorityKnown() const { return 2 * static_cast<int64_t>(since) > diffs; }
};

class Scanner {
 public:
  Scanner(const SampleColumns& s, const std::vector<int32_t>& devices_of_code, ChunkSeries& chunk)
      : s_(s), devices_of_code_(devices_of_code), chunk_(chunk), bounds_(BoundsOf(s.time_unit)) {
    // Devices in the dense table: the inventory's, and those of a sample of
    // rows (resources outside the inventory). A row beyond them is hashed:
    // correct, only slower, and a full pass for the maximum was a serial
    // read of every row before the workers start.
    const auto n = static_cast<int64_t>(s.size());
    int32_t max_device = -1;
    for (int32_t devices : devices_of_code) max_device = std::max(max_device, devices - 1);
    const int64_t stride = std::max<int64_t>(1, n >> 16);
    for (int64_t i = 0; i < n; i += stride) max_device = std::max(max_device, s.device[i]);
    devices_ = static_cast<int64_t>(max_device) + 1;
    const auto codes = static_cast<int64_t>(s.resource_id.dictionary.size());
    // A dense table of devices unless absurd device numbers make it huge
    // (they then cost a hash per row, but stay correct).
    constexpr int64_t kMaxDenseDevices = int64_t{1} << 22;
    dense_ = codes * devices_ <= std::max<int64_t>(kMaxDenseDevices, n);
    if (dense_) caches_.resize(static_cast<size_t>(codes * devices_));
    if (chunk_.workers > 1) {
      runs_in_part_.resize(chunk_.workers);
      rows_in_part_.resize(chunk_.workers);
    }
  }

  // Part `part` of the rows (the parts: equal row ranges, one a worker)
  // cut into runs of one resource code, each run added to its owner's
  // list for this part (rows with a bad resource code: worker 0). Every
  // worker reads only its part of the codes, so finding the runs costs
  // 1/workers of a pass, not a pass per worker.
  void FindRunsIn(int part) {
    std::vector<std::vector<std::pair<uint32_t, uint32_t>>>& by_owner = runs_in_part_[part];
    by_owner.resize(chunk_.workers);
    const int32_t* rc = s_.resource_id.codes.data();
    const auto [begin, end] = PartRows(part);
    for (uint32_t i = begin; i < end;) {
      const uint32_t run_begin = i;
      const int32_t r = rc[i];
      while (++i < end && rc[i] == r) {
      }
      std::vector<std::pair<uint32_t, uint32_t>>& runs = by_owner[OwnerOf(chunk_.owner, r)];
      if (!runs.empty() && runs.back().second == run_begin) {
        runs.back().second = i;
      } else {
        runs.emplace_back(run_begin, i);
      }
    }
  }

  // Worker w's runs: its runs of every part, in row order, a run cut by a
  // part's end joined again.
  void JoinRuns(int w) {
    size_t count = 0;
    for (const auto& part : runs_in_part_) count += part[w].size();
    std::vector<std::pair<uint32_t, uint32_t>>& runs = chunk_.runs[w];
    runs.reserve(count);
    for (auto& part : runs_in_part_) {
      for (const auto& [begin, end] : part[w]) {
        if (!runs.empty() && runs.back().second == begin) {
          runs.back().second = end;
        } else {
          runs.emplace_back(begin, end);
        }
      }
      part[w] = {};
    }
  }

  // Row lists instead of runs, in two steps with a barrier between: each
  // part counts its rows per owner, then writes them into the owners' lists
  // (one buffer, owner after owner, each list in row order), where the
  // counts of the parts before it leave room for theirs. No list grows.
  void CountRowsIn(int part) {
    std::vector<int64_t>& count = rows_in_part_[part];
    count.assign(chunk_.workers, 0);
    const auto [begin, end] = PartRows(part);
    for (uint32_t i = begin; i < end; ++i) ++count[OwnerOfRow(i)];
  }
  void ListRowsIn(int part) {
    std::vector<int64_t> at(chunk_.workers);  // per owner: where this part's rows go
    int64_t start = 0;                        // of owner o's list: after every row of the owners before o
    for (int o = 0; o < chunk_.workers; ++o) {
      int64_t listed = 0;
      for (int p = 0; p < chunk_.workers; ++p) {
        if (p == part) at[o] = start + listed;
        listed += rows_in_part_[p][o];
      }
      if (o == part) chunk_.rows[o] = {chunk_.listed_rows.get() + start, static_cast<size_t>(listed)};
      start += listed;
    }
    uint32_t* list = chunk_.listed_rows.get();
    const auto [begin, end] = PartRows(part);
    for (uint32_t i = begin; i < end; ++i) list[at[OwnerOfRow(i)]++] = i;
  }

  [[nodiscard]] uint8_t OwnerOfRow(uint32_t i) const { return OwnerOf(chunk_.owner, s_.resource_id.codes[i]); }

  [[nodiscard]] std::pair<uint32_t, uint32_t> PartRows(int part) const {
    const uint64_t n = s_.size();
    const auto workers = static_cast<uint64_t>(chunk_.workers);
    return {static_cast<uint32_t>(n * static_cast<uint64_t>(part) / workers),
            static_cast<uint32_t>(n * static_cast<uint64_t>(part + 1) / workers)};
  }

  void Run(int w) {
    WorkerSeries& out = chunk_.by_worker[w];
    std::vector<ScanState> states;
    // Hashed devices (absurd or negative device numbers, which a resource
    // outside the inventory may have) are per worker: no sharing.
    absl::flat_hash_map<uint64_t, int32_t> device_slots;
    std::vector<DeviceCache> hashed_caches;
    absl::flat_hash_map<SeriesKey, int32_t> series_ids;
    const int32_t* rc = s_.resource_id.codes.data();
    const int32_t* dv = s_.device.data();
    const int32_t* cc = s_.consumer.codes.data();
    const int64_t* ts = s_.timestamp.data();
    int32_t* series_of_row = chunk_.series_of_row.get();
    const auto codes = static_cast<uint32_t>(s_.resource_id.dictionary.size());
    const auto consumers = static_cast<int32_t>(s_.consumer.dictionary.size());
    bool any_gathered = false;
    auto hashed_cache_of = [&](int32_t r, int32_t d) __attribute__((noinline)) -> DeviceCache& {
      const uint64_t key = (static_cast<uint64_t>(r) << 32) | static_cast<uint32_t>(d);
      auto [it, inserted] = device_slots.try_emplace(key, static_cast<int32_t>(hashed_caches.size()));
      if (inserted) hashed_caches.emplace_back();
      return hashed_caches[it->second];
    };
    auto cache_of = [&](int32_t r, int32_t d) __attribute__((always_inline)) -> DeviceCache& {
      if (dense_ && static_cast<uint32_t>(d) < static_cast<uint64_t>(devices_)) [[likely]] {
        return caches_[static_cast<size_t>(r * devices_ + d)];
      }
      return hashed_cache_of(r, d);
    };
    // Most consumers (a pod on its GPU) hold one series: per consumer code,
    // its only series, or kShared once it holds several (those are hashed).
    // A pod that churns every few minutes then costs no hash at all.
    constexpr int32_t kNone = -1, kShared = -2;
    std::vector<int32_t> only_series(static_cast<size_t>(consumers) + 1, kNone);  // [c + 1]: c may be kNullCode
    // Each consumer holds a series, and each device a free one: room for
    // them up front, not a copy of every series per doubling.
    const auto expected = static_cast<size_t>(std::min<int64_t>(
        static_cast<int64_t>(s_.size()), int64_t{consumers} + (dense_ ? static_cast<int64_t>(caches_.size()) : 0)));
    out.series.reserve(expected);
    states.reserve(expected);
    auto new_series = [&](int64_t i, int32_t r, int32_t d, int32_t c) {
      const auto id = static_cast<int32_t>(out.series.size());
      out.series.push_back({r, d, c, i});
      states.emplace_back();
      return id;
    };
    // The cache's miss path, kept out of the row loop: inlined, it made the
    // loop spill its registers, and called whole it cost a call per row.
    auto series_missed = [&](DeviceCache& cache, int64_t i, int32_t r, int32_t d, int32_t c) __attribute__((noinline)) {
      int32_t& only = only_series[static_cast<size_t>(c) + 1];
      int32_t id;
      if (only == kNone) {
        id = only = new_series(i, r, d, c);
      } else if (only >= 0 && out.series[only].resource_code == r && out.series[only].device == d) {
        id = only;
      } else {
        if (only >= 0) {  // a second series: both hashed from now on
          const Series& first = out.series[only];
          series_ids.emplace(SeriesKey{first.resource_code, first.device, c}, only);
          only = kShared;
        }
        auto [it, inserted] = series_ids.try_emplace(SeriesKey{r, d, c}, 0);
        if (inserted) it->second = new_series(i, r, d, c);
        id = it->second;
      }
      cache.Put(c, id);
      return id;
    };
    auto series_of = [&](int64_t i, int32_t r, int32_t d, int32_t c) __attribute__((always_inline)) {
      DeviceCache& cache = cache_of(r, d);
      if (const int32_t id = cache.Find(c); id >= 0) [[likely]] return id;
      return series_missed(cache, i, r, d, c);
    };

    ForOwnedRows(chunk_, s_, w, [&](int64_t i) __attribute__((always_inline)) {
      const int32_t r = rc[i], d = dv[i], c = cc[i];
      // A device is checked only on a resource in the inventory (SEMANTICS 6).
      if (static_cast<uint32_t>(r) >= codes || c < kNullCode || c >= consumers ||
          (devices_of_code_[r] >= 0 && (d < 0 || d >= devices_of_code_[r]))) [[unlikely]] {
        series_of_row[i] = kBadRow;
        return;
      }
      const int32_t id = series_of(i, r, d, c);
      series_of_row[i] = id;
      const int64_t t = ts[i];
      if (t < bounds_.ts_lo || t >= bounds_.ts_hi) [[unlikely]] return;
      ScanState& st = states[id];
      if (t > st.last) [[likely]] {
        if (st.last != std::numeric_limits<int64_t>::min()) st.AddDifference(t - st.last);
        st.last = t;
        st.tie_rows[0] = static_cast<int32_t>(i);
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
          st.tie_rows[st.ties++] = static_cast<int32_t>(i);
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
      if (st.irregular && st.MajorityKnown()) out.series[k].spacing_ns = static_cast<double>(st.candidate) * ticks();
    }
    MedianSpacings(w, states);
    if (any_gathered) Gather(w, states);
  }

 private:
  [[nodiscard]] double ticks() const { return static_cast<double>(static_cast<int64_t>(s_.time_unit)); }

  // In-order series with uneven spacing and no majority: their differences
  // gathered into one arena by a second look at their rows, then a median
  // each. They are few, so a byte per series (in cache) skips the others.
  void MedianSpacings(int w, std::vector<ScanState>& states) {
    WorkerSeries& out = chunk_.by_worker[w];
    std::vector<int64_t> offset(states.size() + 1, 0);
    std::vector<uint8_t> wanted(states.size(), 0);
    bool any = false;
    for (size_t k = 0; k < states.size(); ++k) {
      wanted[k] = states[k].irregular && !states[k].gathered && !states[k].MajorityKnown() ? 1 : 0;
      offset[k + 1] = wanted[k] ? states[k].diffs : 0;
      any |= wanted[k] != 0;
    }
    if (!any) return;
    std::partial_sum(offset.begin(), offset.end(), offset.begin());
    auto arena = AllocateUncleared<int64_t>(static_cast<size_t>(offset.back()));
    std::vector<int64_t> at(offset.begin(), offset.end() - 1);
    for (ScanState& st : states) st.last = std::numeric_limits<int64_t>::min();
    const int64_t* ts = s_.timestamp.data();
    const int32_t* series_of_row = chunk_.series_of_row.get();
    ForOwnedRows(chunk_, s_, w, [&](int64_t i) {
      const int32_t id = series_of_row[i];
      if (id < 0 || (id & kDroppedBit) != 0 || !wanted[id]) return;
      ScanState& st = states[id];
      const int64_t t = ts[i];
      if (t < bounds_.ts_lo || t >= bounds_.ts_hi || t <= st.last) return;
      if (st.last != std::numeric_limits<int64_t>::min()) arena[at[id]++] = t - st.last;
      st.last = t;
    });
    std::vector<int64_t> scratch;
    for (size_t k = 0; k < states.size(); ++k) {
      if (offset[k + 1] == offset[k]) continue;
      const auto count = static_cast<size_t>(offset[k + 1] - offset[k]);
      out.series[k].spacing_ns = MedianOfSpacings(arena.get() + offset[k], count, scratch) * ticks();
    }
  }

  // Series out of time order: their rows gathered with their values (a
  // counting pass), each series put in time order, ties in row order, then
  // scanned as a whole.
  void Gather(int w, const std::vector<ScanState>& states) {
    WorkerSeries& out = chunk_.by_worker[w];
    std::vector<int64_t> begin(states.size() + 1, 0);
    int32_t* series_of_row = chunk_.series_of_row.get();
    // A byte per series stays in cache where the states would not.
    std::vector<uint8_t> gathered(states.size());
    for (size_t k = 0; k < states.size(); ++k) gathered[k] = states[k].gathered ? 1 : 0;
    ForOwnedRows(chunk_, s_, w, [&](int64_t i) {
      const int32_t id = series_of_row[i];
      if (id == kBadRow) return;
      if (gathered[id & kSeriesBits]) ++begin[(id & kSeriesBits) + 1];
    });
    std::partial_sum(begin.begin(), begin.end(), begin.begin());
    out.gathered_rows = AllocateUncleared<GatheredRow>(static_cast<size_t>(begin.back()));
    GatheredRow* rows = out.gathered_rows.get();
    // Rows go to their series in two scatters: first to one of at most 64
    // groups of series (a few write streams), then within each group. One
    // scatter to thousands of series would miss the TLB on every row, and
    // 65 to 128 streams took this scatter 2.4x as long as 33 to 64 (3,230
    // series: 101 groups 75-83 ms, 51 groups 31 ms; the second scatter, over
    // groups twice as large, 20 -> 23 ms).
    const auto num_series = static_cast<uint32_t>(states.size());
    const int shift = std::max(0, static_cast<int>(std::bit_width(num_series)) - 6);
    const size_t groups = ((num_series - 1) >> shift) + 1;
    std::vector<int64_t> next(groups);
    for (size_t g = 0; g < groups; ++g) next[g] = begin[g << shift];
    const int64_t* ts = s_.timestamp.data();
    const double* share = s_.share.data();
    const double* util = s_.util.data();
    const double* mem = s_.mem_used.data();
    const int64_t* dur = s_.duration ? s_.duration->data() : nullptr;
    ForOwnedRows(chunk_, s_, w, [&](int64_t i) {
      const int32_t raw = series_of_row[i];
      if (raw == kBadRow) return;
      const int32_t id = raw & kSeriesBits;
      if (!gathered[id]) return;
      series_of_row[i] = id | kGatheredBit;  // copies are found again in time order
      rows[next[static_cast<uint32_t>(id) >> shift]++] = {ts[i], static_cast<int32_t>(i), id, share[i], util[i], mem[i],
                                                         dur != nullptr ? dur[i] : 0};
    });
    // Then group by group, while the group is in cache: its rows to their
    // series, each series in time order, and its copies and spacing.
    std::vector<GatheredRow> group;
    SortScratch scratch;
    std::vector<int64_t> next_of_series(size_t{1} << shift);
    std::vector<int64_t> diffs, median_scratch;
    for (size_t g = 0; g < groups; ++g) {
      const auto first = static_cast<uint32_t>(g << shift);
      const auto last = static_cast<uint32_t>(std::min<size_t>((g + 1) << shift, num_series));
      if (begin[first] == begin[last]) continue;
      if (shift > 0) {
        group.assign(rows + begin[first], rows + begin[last]);
        std::copy(begin.begin() + first, begin.begin() + last, next_of_series.begin());
        for (const GatheredRow& r : group) rows[next_of_series[r.series - first]++] = r;
      }
      for (uint32_t k = first; k < last; ++k) {
        if (!states[k].gathered) continue;
        Series& series = out.series[k];
        series.gathered = true;
        series.sorted_begin = begin[k];
        series.sorted_end = begin[k + 1];
        SortByInstant(rows + begin[k], rows + begin[k + 1], scratch);
        ScanSorted(rows + begin[k], rows + begin[k + 1], static_cast<int32_t>(k), series, out, diffs, median_scratch);
      }
    }
  }

  // One gathered series in time order: copies among the rows of each
  // instant, and the spacing.
  void ScanSorted(GatheredRow* b, GatheredRow* e, int32_t id, Series& series, WorkerSeries& out,
                  std::vector<int64_t>& diffs, std::vector<int64_t>& scratch) {
    int32_t* series_of_row = chunk_.series_of_row.get();
    auto same_values = [](const GatheredRow& x, const GatheredRow& y) {
      return x.share == y.share && x.util == y.util && x.mem == y.mem && x.duration == y.duration;
    };
    diffs.clear();
    int64_t prev = std::numeric_limits<int64_t>::min();
    GatheredRow* tie_begin = b;
    for (GatheredRow* p = b; p != e; ++p) {
      const int64_t t = p->t;
      if (t < bounds_.ts_lo || t >= bounds_.ts_hi) [[unlikely]] continue;
      if (t == prev) {
        for (const GatheredRow* q = tie_begin; q != p; ++q) {
          if (q->t != t || q->dropped()) continue;
          if (same_values(*q, *p)) {
            series_of_row[p->row] = id | kGatheredBit | kDroppedBit;
            p->row = ~p->row;
            ++out.duplicates;
            break;
          }
        }
        continue;
      }
      if (prev != std::numeric_limits<int64_t>::min()) diffs.push_back(t - prev);
      prev = t;
      tie_begin = p;
    }
    if (diffs.empty()) return;
    series.spacing_ns = MedianOfSpacings(diffs.data(), diffs.size(), scratch) * ticks();
  }

  const SampleColumns& s_;
  const std::vector<int32_t>& devices_of_code_;
  ChunkSeries& chunk_;
  RawBounds bounds_;
  int64_t devices_ = 0;
  bool dense_ = true;
  std::vector<DeviceCache> caches_;  // dense: per (resource code, device); owned by one worker each
  // [part][worker]: the runs FindRunsIn found, or the rows CountRowsIn
  // counted (several workers only).
  std::vector<std::vector<std::vector<std::pair<uint32_t, uint32_t>>>> runs_in_part_;
  std::vector<std::vector<int64_t>> rows_in_part_;
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
  chunk.series_of_row = AllocateUncleared<int32_t>(samples.size());
  chunk.by_worker.resize(chunk.workers);
  chunk.runs.resize(chunk.workers);
  chunk.rows.resize(chunk.workers);
  const bool listed = chunk.workers > 1 && RunsAreShort(samples, chunk.owner);
  if (listed) chunk.listed_rows = AllocateUncleared<uint32_t>(samples.size());
  Scanner scanner(samples, devices_of_code, chunk);
  // Every part's runs (or counts) before any worker reads them: barriers,
  // not a second start of the threads.
  std::barrier parts_done(chunk.workers);
  RunOnWorkers(chunk.workers, [&](int w) {
    if (listed) {
      scanner.CountRowsIn(w);
      parts_done.arrive_and_wait();
      scanner.ListRowsIn(w);
      parts_done.arrive_and_wait();
    } else if (chunk.workers > 1) {
      scanner.FindRunsIn(w);
      parts_done.arrive_and_wait();
      scanner.JoinRuns(w);
    }
    scanner.Run(w);
  });
  return chunk;
}

}  // namespace gpucost::internal
