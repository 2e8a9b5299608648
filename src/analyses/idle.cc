// Idle detection (include/gpucost/analyses/idle.h). Layout of the work:
//
// 1. Index the inventory and the cost lines' billed intervals per resource;
//    each chunk's samples grouped by device (a counting sort; every row
//    validated).
// 2. Per resource, on a grid of `resolution` from its first billed instant to
//    its last: each device's busy, held and observed time per bin, and
//    whether an exempt workload held it. Only the bins near the chunks'
//    frontier are kept; the rest are decided (steps 3-5) and dropped.
// 3. Per device, windows of `window` bins that are wholly billed and average
//    below `threshold`; their union is the device's idle time.
// 4. Idle bins get a kind (terminate / release / exempt / right-size); runs
//    of one kind become spans; a second pass over the device's samples names
//    the workloads holding each held span.
// 5. The policy replays alert / cancel / terminate over the resource's
//    instance-level busy fraction.
#include "gpucost/analyses/idle.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gpucost/status.h"
#include "samples.h"

namespace gpucost {
namespace {

using analyses_internal::DeviceIndex;
using analyses_internal::DeviceRows;
using analyses_internal::SampleReader;
using analyses_internal::ToNanos;

constexpr std::string_view kCosts = "costs";

struct Interval {
  int64_t start;
  int64_t end;
};

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }

// Each column's values in `order` (row indices).
template <typename... Column>
void Reorder(const std::vector<int64_t>& order, Column&... columns) {
  auto one = [&](auto& column) {
    std::remove_reference_t<decltype(column)> out;
    out.reserve(order.size());
    for (int64_t k : order) out.push_back(column[k]);
    column = std::move(out);
  };
  (one(columns), ...);
}

absl::Status CheckOptions(const IdleOptions& o) {
  if (!(o.threshold >= 0.0 && o.threshold <= 1.0)) {
    return ParameterError("threshold", absl::StrCat(o.threshold, " is outside [0, 1]"));
  }
  if (o.resolution_ns <= 0) return ParameterError("resolution", "must be positive");
  if (o.window_ns < o.resolution_ns || o.window_ns % o.resolution_ns != 0) {
    return ParameterError("window", absl::StrCat(static_cast<double>(o.window_ns) / 1e9, " s is not a positive multiple of the resolution (",
                                                 static_cast<double>(o.resolution_ns) / 1e9, " s)"));
  }
  if (o.grace_ns < 0 || o.grace_ns % o.resolution_ns != 0) {
    return ParameterError("grace", absl::StrCat(static_cast<double>(o.grace_ns) / 1e9, " s is not a non-negative multiple of the resolution (",
                                                static_cast<double>(o.resolution_ns) / 1e9, " s)"));
  }
  return absl::OkStatus();
}

// The cost lines' intervals per inventory resource; lines of other resources
// (storage, network, taxes) are checked and left out.
absl::StatusOr<std::vector<std::vector<Interval>>> BilledIntervals(const CostColumns& costs,
                                                                   const DeviceIndex& index) {
  const size_t n = costs.resource_id.size();
  if (costs.start.size() != n || costs.end.size() != n) {
    const bool start_bad = costs.start.size() != n;
    const size_t actual = start_bad ? costs.start.size() : costs.end.size();
    const std::string_view column = start_bad ? "start" : "end";
    const absl::string_view name(column.data(), column.size());
    if (actual == 0) return TableError(kCosts, absl::StrCat("missing required column '", name, "'"));
    return TableError(kCosts, absl::StrCat("column '", name, "' has ", actual, " values for ", n, " rows"));
  }
  std::vector<int32_t> resource_of(costs.resource_id.dictionary.size());
  for (size_t d = 0; d < resource_of.size(); ++d) resource_of[d] = index.Find(costs.resource_id.dictionary[d]);
  std::vector<std::vector<Interval>> out(index.names.size());
  const auto dict_size = static_cast<int32_t>(resource_of.size());
  for (size_t i = 0; i < n; ++i) {
    const auto row = static_cast<int64_t>(i);
    const int32_t code = costs.resource_id.codes[i];
    if (code < kNullCode || code >= dict_size) {
      return RowError(kCosts, row, "resource_id", absl::StrCat("code ", code, " is not in the dictionary"));
    }
    if (costs.start[i] == kMissingInstant) return RowError(kCosts, row, "start", "missing instant");
    if (costs.end[i] == kMissingInstant) return RowError(kCosts, row, "end", "missing instant");
    const int64_t start = ToNanos(costs.start[i], costs.time_unit);
    const int64_t end = ToNanos(costs.end[i], costs.time_unit);
    if (end <= start) return RowError(kCosts, row, "end", "end is not after start");
    if (code == kNullCode || resource_of[code] < 0) continue;
    out[resource_of[code]].push_back({start, end});
  }
  return out;
}

}  // namespace

namespace idle_internal {

// A sample that may still overlap an undecided bin, kept for the holders.
struct HeldSample {
  int32_t consumer;
  int64_t start;
  int64_t end;
  double share;
  double util;
};

// Per cell (bin and device) of a grid: busy, held and observed ns, and
// whether an exempt workload held it.
struct Cells {
  std::vector<double> busy, held, observed;
  std::vector<uint8_t> exempt;
  void Clear() {
    busy.clear();
    held.clear();
    observed.clear();
    exempt.clear();
  }
};

// One billed resource: its grid of `bins` steps from `t0`, and the part of it
// kept in memory, bins [base, base + span), device-major with room for
// `stride` bins per device ([device * stride + b - base]); cells past `span`
// are zero.
struct Grid {
  int32_t resource = 0;
  int32_t devices = 0;
  int64_t t0 = 0;
  int64_t res = 0;
  int64_t bins = 0;
  int64_t billing_end = 0;
  std::vector<uint8_t> billed;  // [bin]
  int64_t base = 0;
  int64_t span = 0;
  int64_t stride = 0;
  int64_t decided = 0;  // bins before it have their spans and decisions
  Cells cells;
  std::vector<std::vector<HeldSample>> carry;  // [device]: samples reaching past `decided`
  std::vector<int64_t> open;                   // per slot (devices, terminate, no telemetry): its last span, or -1
  // The policy between decisions.
  int policy_state = 0;
  int64_t reset = 0;
  int64_t alert_bin = 0;
  int64_t terminate_row = -1;

  [[nodiscard]] int64_t BinStart(int64_t b) const { return t0 + b * res; }
  [[nodiscard]] size_t cell(int64_t b, int32_t d) const { return static_cast<size_t>(d * stride + (b - base)); }
  // Keeps bins [base, end) in memory; a wider stride copies each device's row once.
  void ExtendTo(int64_t end) {
    const int64_t need = end - base;
    if (need <= span) return;
    if (need > stride) {
      const int64_t wider = std::max(need, stride + stride / 2);
      Cells moved;
      if (span > 0) std::swap(moved, cells);  // else the cells' memory is reused
      const auto size = static_cast<size_t>(wider * devices);
      cells.busy.assign(size, 0.0);
      cells.held.assign(size, 0.0);
      cells.observed.assign(size, 0.0);
      cells.exempt.assign(size, 0);
      for (int32_t d = 0; d < devices && span > 0; ++d) {
        const auto from = static_cast<std::ptrdiff_t>(d * stride), to = static_cast<std::ptrdiff_t>(d * wider);
        std::copy_n(moved.busy.begin() + from, span, cells.busy.begin() + to);
        std::copy_n(moved.held.begin() + from, span, cells.held.begin() + to);
        std::copy_n(moved.observed.begin() + from, span, cells.observed.begin() + to);
        std::copy_n(moved.exempt.begin() + from, span, cells.exempt.begin() + to);
      }
      stride = wider;
    }
    span = need;
  }
  // Forgets the bins before `bin`: each device's row moves to the front.
  void DropBefore(int64_t bin) {
    const int64_t cut = std::min(bin - base, span);
    if (cut <= 0) return;
    const int64_t left = span - cut;
    auto shift = [&](auto& column, auto zero) {
      for (int32_t d = 0; d < devices; ++d) {
        auto row = column.begin() + static_cast<std::ptrdiff_t>(d * stride);
        std::copy(row + cut, row + span, row);
        std::fill(row + left, row + span, zero);
      }
    };
    shift(cells.busy, 0.0);
    shift(cells.held, 0.0);
    shift(cells.observed, 0.0);
    shift(cells.exempt, uint8_t{0});
    base += cut;
    span = left;
  }
  // A decided grid gives its cells' memory away.
  void Release(Cells& spare) {
    cells.Clear();
    if (cells.busy.capacity() > spare.busy.capacity()) std::swap(cells, spare);
    cells = {};
    span = stride = 0;
  }
};

// A chunk's rows of known resources, grouped by device, with its consumers
// numbered as the stream numbers them.
struct ChunkRows {
  const SampleReader& reader;
  const DeviceRows& rows;
  const std::vector<int32_t>& consumer_ids;
  [[nodiscard]] int32_t consumer(int64_t i) const {
    const int32_t c = reader.consumer(i);
    return c < 0 ? -1 : consumer_ids[c];
  }
};

// A held span's part decided in one step.
struct Piece {
  int64_t span;
  int64_t start;
  int64_t end;
};

// Working arrays of one decision step, over the bins [base, frontier) of a grid.
struct Workspace {
  std::vector<int64_t> billed_prefix;      // [bin + 1]
  std::vector<uint8_t> idle;               // [device * bins + bin]
  std::vector<double> prefix;              // [bin + 1]
  std::vector<int64_t> observed_prefix;    // [bin + 1]: bins of the device with a sample
  std::vector<int32_t> diff;               // [bin + 1]
  std::vector<uint8_t> all_unheld, terminate;  // [bin]
  std::vector<uint8_t> instance_observed;  // [bin]: any device of the resource has a sample
  std::vector<double> instance_busy;       // [bin]
  std::vector<uint8_t> instance_exempt;    // [bin]
  std::vector<double> busy_prefix;         // [bin + 1]
  std::vector<int64_t> exempt_prefix, instance_observed_prefix;  // [bin + 1]
  std::vector<Piece> held_pieces;
};

enum PolicyState : int8_t { kWatching = 0, kGrace = 1, kTerminated = 2 };

}  // namespace idle_internal

using namespace idle_internal;  // NOLINT: this file's own helpers

// How far a bin's spans and decisions look: an idle mark reads the windows
// around it (one window each side), trimming a busy edge reads at most two
// windows further, a terminate run's length one more; the policy looks back
// a window or its grace. Bins are decided `margin` bins behind the frontier
// and kept `margin` bins behind the decided ones.
struct IdleStream::State {
  IdleOptions options;
  DeviceIndex index;
  int64_t window_bins = 0;
  int64_t grace_bins = 0;
  int64_t margin = 0;
  std::vector<int32_t> grid_of;  // per resource: its grid, or -1 when no cost line bills it
  std::vector<Grid> grids;
  absl::flat_hash_set<std::string> exempt_names;
  absl::flat_hash_map<std::string, int32_t> consumer_ids;
  std::vector<uint8_t> exempt;  // per consumer
  std::vector<uint8_t> seen;    // per global device: any sample
  int64_t newest = std::numeric_limits<int64_t>::min();
  bool last = false;  // no chunk follows the one being added
  bool finished = false;
  int64_t chunk_end = 0;  // the latest sample end of the chunks so far
  std::vector<std::vector<HeldSample>> fresh;  // [device]: the chunk's samples to carry
  IdleResult out;
  Workspace w;
  Cells spare;  // a decided grid's cells, for the next
  absl::flat_hash_map<uint64_t, uint32_t> holder_ids;

  void TakeSpare(Grid& g) {
    if (g.cells.busy.capacity() == 0) std::swap(g.cells, spare);
  }

  std::vector<int32_t> Consumers(const SampleReader& reader);
  // The bins a step decides, [decided, until), from those before `frontier`.
  struct Step {
    int64_t frontier;
    int64_t until;
  };
  [[nodiscard]] Step Plan(const Grid& g, bool finishing) const;
  absl::Status Accumulate(Grid& g, const ChunkRows& chunk, int64_t until);
  void Settle(Grid& g);
  void Decide(Grid& g, int64_t frontier, int64_t until, const ChunkRows* chunk);
  void MarkIdle(const Grid& g, int32_t d, int64_t bins);
  int64_t AddPiece(Grid& g, size_t slot, int32_t device, IdleKind kind, int64_t b0, int64_t b1, double busy,
                   double observed);
  void Holders(Grid& g, int32_t d, const ChunkRows* chunk);
  void Policy(Grid& g, int64_t lo, int64_t hi);
};


std::vector<int32_t> IdleStream::State::Consumers(const SampleReader& reader) {
  std::vector<int32_t> ids(reader.consumer_names().size());
  for (size_t c = 0; c < ids.size(); ++c) {
    const std::string& name = reader.consumer_names()[c];
    auto [it, inserted] = consumer_ids.try_emplace(name, static_cast<int32_t>(out.consumer_names.size()));
    if (inserted) {
      out.consumer_names.push_back(name);
      exempt.push_back(exempt_names.contains(name) ? 1 : 0);
    }
    ids[c] = it->second;
  }
  return ids;
}

// Adds the chunk's samples of the grid's resource to its bins, and keeps
// aside the held ones that reach past `until`, for the holders of later steps.
absl::Status IdleStream::State::Accumulate(Grid& g, const ChunkRows& chunk, int64_t until) {
  const int64_t res = g.res;
  const int64_t grid_end = g.BinStart(g.bins);
  const int64_t keep_after = g.BinStart(until);
  const SampleReader& reader = chunk.reader;
  TakeSpare(g);
  g.ExtendTo((std::clamp(chunk_end, g.t0 + 1, grid_end) - 1 - g.t0) / res + 1);  // grown once, not sample by sample
  fresh.resize(static_cast<size_t>(std::max<int64_t>(g.devices, static_cast<int64_t>(fresh.size()))));
  // Locals, not members: the byte stores below may alias any member.
  int64_t outside = 0, unheld = 0;
  const int64_t t0 = g.t0, bins = g.bins, base = g.base;
  const uint8_t* billed_bins = g.billed.data();
  for (int32_t d = 0; d < g.devices; ++d) {
    fresh[d].clear();
    double* busy = g.cells.busy.data() + g.cell(base, d);  // indexed by bin - base
    double* held = g.cells.held.data() + g.cell(base, d);
    double* observed = g.cells.observed.data() + g.cell(base, d);
    uint8_t* exempt_cells = g.cells.exempt.data() + g.cell(base, d);
    const int64_t device = index.first_device[g.resource] + d;
    for (int64_t k = chunk.rows.offsets[device]; k < chunk.rows.offsets[device + 1]; ++k) {
      const int64_t i = chunk.rows.rows[k];
      const int32_t c = chunk.consumer(i);
      unheld += c < 0 ? 1 : 0;
      const int64_t s = reader.start(i);
      const int64_t e = s + reader.duration(i);
      if (e <= t0 || s >= grid_end) {
        ++outside;
        continue;
      }
      const int64_t lo = std::max(s, t0), hi = std::min(e, grid_end);
      const int64_t first = (lo - t0) / res;
      if (first < base) return absl::InternalError("idle stream: a sample reaches a bin already decided");
      const double busy_rate = reader.share(i) * reader.util(i);
      const double held_rate = c >= 0 ? reader.share(i) : 0.0;
      const uint8_t is_exempt = c >= 0 ? exempt[c] : 0;
      if (c >= 0 && e > keep_after) fresh[d].push_back({c, s, e, reader.share(i), reader.util(i)});
      bool billed = false;
      for (int64_t b = first; b < bins; ++b) {
        const int64_t bs = t0 + b * res;
        if (bs >= hi) break;
        const auto o = static_cast<double>(std::min(hi, bs + res) - std::max(lo, bs));
        const int64_t at = b - base;
        busy[at] += busy_rate * o;
        observed[at] += o;
        held[at] += held_rate * o;
        exempt_cells[at] |= is_exempt;
        billed |= billed_bins[b] != 0;
      }
      if (!billed) ++outside;
    }
  }
  out.diagnostics.samples_outside_billing += outside;
  out.diagnostics.samples_no_consumer += unheld;
  return absl::OkStatus();
}

// Where the next step ends: `margin` bins behind the bins no later sample can
// reach (all of them once the newest sample is past the grid, or when no
// chunk follows); when finishing, in steps that keep a few windows beyond a
// step in memory. `until` is `decided` when there is too little to decide.
IdleStream::State::Step IdleStream::State::Plan(const Grid& g, bool finishing) const {
  constexpr int64_t kStepBins = int64_t{1} << 14;
  const int64_t reached = newest == std::numeric_limits<int64_t>::min()
                              ? 0
                              : std::clamp(FloorDiv(newest - g.t0, g.res), int64_t{0}, g.bins);
  const int64_t frontier = finishing || last ? g.bins : reached;
  const int64_t step_end = finishing ? std::min(frontier, g.decided + kStepBins + margin) : frontier;
  const int64_t until = step_end == g.bins ? g.bins : step_end - margin;
  // A step shorter than the margin would redo more than it decides.
  if (until <= g.decided || (until < g.bins && until - g.decided < margin)) return {step_end, g.decided};
  return {step_end, until};
}

// After a step: the held samples still reaching past the decided bins are
// carried (with the chunk's, set aside by Accumulate), the bins no later step
// reads are dropped, and a finished grid's cells go to the next grid that
// needs some (no fresh pages per resource).
void IdleStream::State::Settle(Grid& g) {
  const int64_t cut = g.BinStart(g.decided);
  for (int32_t d = 0; d < g.devices; ++d) {
    std::vector<HeldSample>& kept = g.carry[d];
    std::erase_if(kept, [&](const HeldSample& x) { return x.end <= cut; });
    if (static_cast<size_t>(d) < fresh.size()) {
      kept.insert(kept.end(), fresh[d].begin(), fresh[d].end());
      fresh[d].clear();
    }
  }
  g.DropBefore(std::max(int64_t{0}, g.decided - margin));
  if (g.decided == g.bins) g.Release(spare);
}

// Spans and decisions of the bins [decided, until), from the bins
// [base, frontier) in memory.
void IdleStream::State::Decide(Grid& g, int64_t frontier, int64_t until, const ChunkRows* chunk) {
  TakeSpare(g);
  g.ExtendTo(frontier);
  const int64_t res = g.res;
  const int64_t base = g.base;
  const int64_t bins = frontier - base;
  const int64_t lo = g.decided - base, hi = until - base;
  const int32_t n = g.devices;
  const int64_t window = window_bins;
  const auto count = static_cast<size_t>(bins);
  // Rows of device d, indexed by bin - base.
  auto row = [&](const auto& column, int32_t d) { return column.data() + g.cell(base, d); };
  auto busy_at = [&](int64_t b, int32_t d) { return std::min(row(g.cells.busy, d)[b], static_cast<double>(res)); };
  auto observed_at = [&](int64_t b, int32_t d) {
    return std::min(row(g.cells.observed, d)[b], static_cast<double>(res));
  };

  w.billed_prefix.assign(count + 1, 0);
  for (int64_t b = 0; b < bins; ++b) w.billed_prefix[b + 1] = w.billed_prefix[b] + g.billed[base + b];
  w.idle.assign(count * n, 0);
  for (int32_t d = 0; d < n; ++d) MarkIdle(g, d, bins);

  // Bins where every device is idle and nobody holds any; runs of at least a
  // window are terminate spans.
  w.all_unheld.assign(count, 1);
  w.terminate.assign(count, 0);
  for (int32_t d = 0; d < n; ++d) {
    const uint8_t* idle = w.idle.data() + d * bins;
    const double* held = row(g.cells.held, d);
    for (int64_t b = 0; b < bins; ++b) {
      if (!idle[b] || held[b] > 0) w.all_unheld[b] = 0;
    }
  }
  for (int64_t b = 0; b < bins;) {
    if (!w.all_unheld[b]) {
      ++b;
      continue;
    }
    int64_t e = b;
    while (e < bins && w.all_unheld[e]) ++e;
    if (e - b >= window) {
      std::fill(w.terminate.begin() + b, w.terminate.begin() + e, 1);
      const int64_t p0 = std::max(b, lo), p1 = std::min(e, hi);
      if (p0 < p1) {
        double busy = 0, observed = 0;
        for (int32_t d = 0; d < n; ++d) {
          for (int64_t k = p0; k < p1; ++k) {
            busy += busy_at(k, d);
            observed += observed_at(k, d);
          }
        }
        AddPiece(g, n, -1, IdleKind::kTerminate, base + p0, base + p1, busy, observed);
      }
    }
    b = e;
  }

  // Billed stretches of at least a window where no device has a sample:
  // "no telemetry" spans, reported apart from idle and never flagged.
  w.instance_observed.assign(count, 0);
  for (int32_t d = 0; d < n; ++d) {
    const double* observed = row(g.cells.observed, d);
    for (int64_t b = 0; b < bins; ++b) w.instance_observed[b] |= observed[b] > 0 ? 1 : 0;
  }
  for (int64_t b = 0; b < bins;) {
    if (w.instance_observed[b] || !g.billed[base + b]) {
      ++b;
      continue;
    }
    int64_t e = b;
    while (e < bins && !w.instance_observed[e] && g.billed[base + e]) ++e;
    const int64_t p0 = std::max(b, lo), p1 = std::min(e, hi);
    if (e - b >= window && p0 < p1) AddPiece(g, n + 1, -1, IdleKind::kNoTelemetry, base + p0, base + p1, 0.0, 0.0);
    b = e;
  }

  // Per device: runs of release / exempt / right-size bins.
  for (int32_t d = 0; d < n; ++d) {
    w.held_pieces.clear();
    const uint8_t* idle = w.idle.data() + d * bins;
    const double* held = row(g.cells.held, d);
    const uint8_t* exempt_cells = row(g.cells.exempt, d);
    auto kind_of = [&](int64_t b) -> int {
      if (!idle[b]) return -1;
      if (held[b] > 0) return static_cast<int>(exempt_cells[b] ? IdleKind::kExempt : IdleKind::kRelease);
      return w.terminate[b] ? -1 : static_cast<int>(IdleKind::kRightSize);
    };
    for (int64_t b = lo; b < hi;) {
      const int kind = kind_of(b);
      int64_t e = b + 1;
      while (e < hi && kind_of(e) == kind) ++e;
      if (kind >= 0) {
        double busy = 0, observed = 0;
        for (int64_t k = b; k < e; ++k) {
          busy += busy_at(k, d);
          observed += observed_at(k, d);
        }
        const int64_t span = AddPiece(g, d, d, static_cast<IdleKind>(kind), base + b, base + e, busy, observed);
        if (kind != static_cast<int>(IdleKind::kRightSize)) {
          w.held_pieces.push_back({span, g.BinStart(base + b), g.BinStart(base + e)});
        }
      }
      b = e;
    }
    if (!w.held_pieces.empty()) Holders(g, d, chunk);
  }

  Policy(g, lo, hi);
  g.decided = until;
}

// Idle marks of device d over the bins in memory: windows wholly billed and
// observed that average below the threshold, less busy steps at their edges.
void IdleStream::State::MarkIdle(const Grid& g, int32_t d, int64_t bins) {
  const int64_t res = g.res;
  const int64_t window = window_bins;
  const auto count = static_cast<size_t>(bins);
  uint8_t* idle = w.idle.data() + d * bins;
  const double* busy_cells = g.cells.busy.data() + g.cell(g.base, d);
  const double* observed_cells = g.cells.observed.data() + g.cell(g.base, d);
  auto busy_at = [&](int64_t b) { return std::min(busy_cells[b], static_cast<double>(res)); };
  w.prefix.assign(count + 1, 0.0);
  w.observed_prefix.assign(count + 1, 0);
  for (int64_t b = 0; b < bins; ++b) {
    w.prefix[b + 1] = w.prefix[b] + busy_at(b);
    w.observed_prefix[b + 1] = w.observed_prefix[b] + (observed_cells[b] > 0 ? 1 : 0);
  }
  w.diff.assign(count + 1, 0);
  const double limit = options.threshold * static_cast<double>(options.window_ns);
  for (int64_t k = 0; k + window <= bins; ++k) {
    if (w.billed_prefix[k + window] - w.billed_prefix[k] != window) continue;
    // Time without a sample is unobserved, not idle (SEMANTICS 2): only
    // windows the telemetry covers can be idle.
    if (w.observed_prefix[k + window] - w.observed_prefix[k] != window) continue;
    if (w.prefix[k + window] - w.prefix[k] < limit) {
      w.diff[k] += 1;
      w.diff[k + window] -= 1;
    }
  }
  for (int64_t b = 0, active = 0; b < bins; ++b) {
    active += w.diff[b];
    idle[b] = active > 0 ? 1 : 0;
  }
  // A low window may begin or end with a few busy steps (5 busy minutes
  // still average below 5 % over 2 h); an idle span starts and ends idle.
  const double busy_step = options.threshold * static_cast<double>(res);
  auto busy = [&](int64_t b) { return busy_at(b) >= busy_step; };
  for (int64_t b = 0; b < bins;) {
    if (!idle[b]) {
      ++b;
      continue;
    }
    int64_t e = b;
    while (e < bins && idle[e]) ++e;
    for (int64_t k = b; k < e && busy(k); ++k) idle[k] = 0;
    for (int64_t k = e - 1; k >= b && idle[k] && busy(k); --k) idle[k] = 0;
    b = e;
  }
}

// A span's part over bins [b0, b1): joined to the slot's last span when
// that one ends where it starts with the same kind (a run cut by a step).
int64_t IdleStream::State::AddPiece(Grid& g, size_t slot, int32_t device, IdleKind kind, int64_t b0, int64_t b1,
                                    double busy, double observed) {
  IdleSpans& s = out.spans;
  int64_t& open = g.open[slot];
  if (open >= 0 && s.kind[open] == static_cast<int8_t>(kind) && s.end[open] == g.BinStart(b0)) {
    s.end[open] = g.BinStart(b1);
    s.busy_ns[open] += busy;
    s.observed_ns[open] += observed;
    return open;
  }
  s.resource.push_back(g.resource);
  s.device.push_back(device);
  s.devices.push_back(device < 0 ? g.devices : 1);
  s.kind.push_back(static_cast<int8_t>(kind));
  s.start.push_back(g.BinStart(b0));
  s.end.push_back(g.BinStart(b1));
  s.busy_ns.push_back(busy);
  s.observed_ns.push_back(observed);
  open = static_cast<int64_t>(s.size()) - 1;
  return open;
}

// Adds, for the held pieces of device d just decided (in time order), the
// time each workload held and used them: from the samples carried from
// earlier chunks and the chunk's own.
void IdleStream::State::Holders(Grid& g, int32_t d, const ChunkRows* chunk) {
  IdleHolders& h = out.holders;
  const std::vector<Piece>& pieces = w.held_pieces;
  auto add = [&](int32_t c, int64_t start, int64_t end, double share, double util) {
    auto it = std::upper_bound(pieces.begin(), pieces.end(), start,
                               [](int64_t t, const Piece& p) { return t < p.end; });
    for (; it != pieces.end() && it->start < end; ++it) {
      const int64_t o = std::min(end, it->end) - std::max(start, it->start);
      if (o <= 0) continue;
      const uint64_t key = (static_cast<uint64_t>(it->span) << 32) | static_cast<uint32_t>(c);
      auto [slot, inserted] = holder_ids.try_emplace(key, static_cast<uint32_t>(h.size()));
      if (inserted) {
        h.span.push_back(it->span);
        h.consumer.push_back(c);
        h.held_ns.push_back(0);
        h.used_ns.push_back(0);
      }
      h.held_ns[slot->second] += share * static_cast<double>(o);
      h.used_ns[slot->second] += share * util * static_cast<double>(o);
    }
  };
  for (const HeldSample& x : g.carry[d]) add(x.consumer, x.start, x.end, x.share, x.util);
  if (chunk == nullptr) return;
  const SampleReader& reader = chunk->reader;
  const int64_t device = index.first_device[g.resource] + d;
  for (int64_t k = chunk->rows.offsets[device]; k < chunk->rows.offsets[device + 1]; ++k) {
    const int64_t i = chunk->rows.rows[k];
    const int32_t c = chunk->consumer(i);
    if (c < 0) continue;
    const int64_t start = reader.start(i);
    add(c, start, start + reader.duration(i), reader.share(i), reader.util(i));
  }
}

// The seed policy, evaluated at every grid instant t (after the bin ending
// at t is complete), for the bins [lo, hi) of the step (offsets from base):
//   watching:   alert when the window ending at t is wholly billed, began
//               after the last activity, holds no exempt workload and the
//               instance's mean busy fraction over it is below threshold;
//   grace:      cancel when a bin has activity (busy fraction >= threshold
//               or an exempt workload); "ended" when billing stops;
//               terminate when the grace period passes without either;
//   terminated: the idle stretch lasts until activity or end of billing.
void IdleStream::State::Policy(Grid& g, int64_t lo, int64_t hi) {
  const int64_t res = g.res;
  const int64_t base = g.base;
  const int64_t bins = static_cast<int64_t>(w.instance_observed.size());
  const auto count = static_cast<size_t>(bins);
  const int32_t devices = g.devices;
  const double capacity = static_cast<double>(devices) * static_cast<double>(res);  // per bin
  w.instance_busy.assign(count, 0.0);
  w.instance_exempt.assign(count, 0);
  for (int32_t d = 0; d < devices; ++d) {
    const double* busy = g.cells.busy.data() + g.cell(base, d);
    const uint8_t* exempt_cells = g.cells.exempt.data() + g.cell(base, d);
    for (int64_t b = 0; b < bins; ++b) {
      w.instance_busy[b] += std::min(busy[b], static_cast<double>(res));
      w.instance_exempt[b] |= exempt_cells[b];
    }
  }
  w.busy_prefix.assign(count + 1, 0.0);
  w.exempt_prefix.assign(count + 1, 0);
  w.instance_observed_prefix.assign(count + 1, 0);
  for (int64_t b = 0; b < bins; ++b) {
    w.busy_prefix[b + 1] = w.busy_prefix[b] + w.instance_busy[b];
    w.exempt_prefix[b + 1] = w.exempt_prefix[b] + w.instance_exempt[b];
    w.instance_observed_prefix[b + 1] = w.instance_observed_prefix[b] + w.instance_observed[b];
  }
  // A bin without telemetry stops a pending decision, as activity does:
  // nobody terminates what nothing measured.
  auto active = [&](int64_t b) {
    return w.instance_busy[b] >= options.threshold * capacity || w.instance_exempt[b] != 0 ||
           w.instance_observed[b] == 0;
  };
  PolicyDecisions& out_rows = out.decisions;
  // Bins here are offsets from base; decisions name grid instants.
  auto emit = [&](int64_t time, PolicyDecision decision, int64_t from_bin, int64_t to_bin) {
    out_rows.resource.push_back(g.resource);
    out_rows.time.push_back(time);
    out_rows.decision.push_back(static_cast<int8_t>(decision));
    out_rows.window_start.push_back(g.BinStart(base + from_bin));
    const double span = capacity * static_cast<double>(to_bin - from_bin);
    out_rows.util.push_back(span > 0 ? (w.busy_prefix[to_bin] - w.busy_prefix[from_bin]) / span : 0.0);
    out_rows.until.push_back(kMissingInstant);
  };
  auto at = [&](int64_t b) { return g.BinStart(base + b); };
  const int64_t window = window_bins;
  const double limit = options.threshold * capacity * static_cast<double>(window);
  auto state = static_cast<PolicyState>(g.policy_state);
  int64_t reset = g.reset - base;  // the next window may not start before this bin
  int64_t alert_bin = g.alert_bin - base;
  for (int64_t k = lo + 1; k <= hi; ++k) {
    const int64_t b = k - 1;  // the bin that just completed
    switch (state) {
      case kWatching: {
        const int64_t from = k - window;
        if (from < reset || from < 0) break;
        if (w.billed_prefix[k] - w.billed_prefix[from] != window) break;
        if (w.exempt_prefix[k] != w.exempt_prefix[from]) break;
        if (w.instance_observed_prefix[k] - w.instance_observed_prefix[from] != window) break;
        if (!(w.busy_prefix[k] - w.busy_prefix[from] < limit)) break;
        emit(at(k), PolicyDecision::kAlert, from, k);
        alert_bin = k;
        state = kGrace;
        if (grace_bins == 0) {
          emit(at(k), PolicyDecision::kTerminate, k, k);
          g.terminate_row = static_cast<int64_t>(out_rows.size()) - 1;
          state = kTerminated;
        }
        break;
      }
      case kGrace:
        if (!g.billed[base + b]) {
          emit(at(b), PolicyDecision::kEnded, alert_bin, b);
          state = kWatching;
          reset = k;
        } else if (active(b)) {
          emit(at(k), PolicyDecision::kCancel, alert_bin, k);
          state = kWatching;
          reset = k;
        } else if (k == alert_bin + grace_bins) {
          emit(at(k), PolicyDecision::kTerminate, alert_bin, k);
          g.terminate_row = static_cast<int64_t>(out_rows.size()) - 1;
          state = kTerminated;
        }
        break;
      case kTerminated:
        if (!g.billed[base + b] || active(b)) {
          out_rows.until[g.terminate_row] = at(b);
          state = kWatching;
          reset = k;
        }
        break;
    }
  }
  g.policy_state = state;
  g.reset = reset + base;
  g.alert_bin = alert_bin + base;
}


std::string_view IdleKindName(IdleKind kind) {
  switch (kind) {
    case IdleKind::kTerminate: return "terminate";
    case IdleKind::kRelease: return "release";
    case IdleKind::kRightSize: return "right-size";
    case IdleKind::kExempt: return "exempt";
    case IdleKind::kNoTelemetry: return "no-telemetry";
  }
  return "?";
}

std::string_view PolicyDecisionName(PolicyDecision decision) {
  switch (decision) {
    case PolicyDecision::kAlert: return "alert";
    case PolicyDecision::kCancel: return "cancel";
    case PolicyDecision::kTerminate: return "terminate";
    case PolicyDecision::kEnded: return "ended";
  }
  return "?";
}

IdleStream::IdleStream(std::unique_ptr<State> state) : state_(std::move(state)) {}
IdleStream::IdleStream(IdleStream&&) noexcept = default;
IdleStream& IdleStream::operator=(IdleStream&&) noexcept = default;
IdleStream::~IdleStream() = default;

absl::StatusOr<IdleStream> IdleStream::Create(const CostColumns& costs, const InventoryColumns& inventory,
                                              std::span<const std::string_view> exempt_consumers,
                                              const IdleOptions& options) {
  GPUCOST_RETURN_IF_ERROR(CheckOptions(options));
  auto st = std::make_unique<State>();
  st->options = options;
  GPUCOST_ASSIGN_OR_RETURN(st->index, analyses_internal::IndexDevices(inventory));
  GPUCOST_ASSIGN_OR_RETURN(auto billed, BilledIntervals(costs, st->index));
  const DeviceIndex& index = st->index;
  const int64_t res = options.resolution_ns;
  st->window_bins = options.window_ns / res;
  st->grace_bins = options.grace_ns / res;
  st->margin = 4 * st->window_bins + st->grace_bins + 2;
  for (std::string_view name : exempt_consumers) st->exempt_names.insert(std::string(name));
  st->out.resource_names = index.names;
  st->out.resource_devices = index.device_count;
  st->out.diagnostics.devices = index.num_devices();
  st->seen.assign(static_cast<size_t>(index.num_devices()), 0);
  st->grid_of.assign(index.names.size(), -1);
  for (int32_t r = 0; r < static_cast<int32_t>(index.names.size()); ++r) {
    if (billed[r].empty()) continue;
    Grid g;
    g.resource = r;
    g.devices = index.device_count[r];
    g.res = res;
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    for (const Interval& line : billed[r]) {
      lo = std::min(lo, line.start);
      hi = std::max(hi, line.end);
    }
    g.t0 = FloorDiv(lo, res) * res;
    g.bins = FloorDiv(hi - g.t0 + res - 1, res);
    g.billing_end = hi;
    if (static_cast<double>(g.bins) * g.devices > 2e9) {
      return ParameterError("resolution", absl::StrCat("resource ", analyses_internal::Quoted(index.names[r]),
                                                       " is billed for ", g.bins, " steps of the grid; use a coarser "
                                                       "resolution or a shorter range"));
    }
    std::vector<int32_t> diff(static_cast<size_t>(g.bins) + 1, 0);
    for (const Interval& line : billed[r]) {
      diff[(line.start - g.t0) / res] += 1;
      diff[FloorDiv(line.end - g.t0 + res - 1, res)] -= 1;
    }
    g.billed.assign(static_cast<size_t>(g.bins), 0);
    for (int64_t b = 0, active = 0; b < g.bins; ++b) {
      active += diff[b];
      g.billed[b] = active > 0 ? 1 : 0;
    }
    g.carry.resize(static_cast<size_t>(g.devices));
    g.open.assign(static_cast<size_t>(g.devices) + 2, -1);
    st->out.diagnostics.devices_billed += g.devices;
    st->grid_of[r] = static_cast<int32_t>(st->grids.size());
    st->grids.push_back(std::move(g));
  }
  return IdleStream(std::move(st));
}

absl::Status IdleStream::Add(const SampleColumns& samples, bool last) {
  State& st = *state_;
  if (st.finished) return absl::FailedPreconditionError("idle stream: Add after Finish");
  st.last = last;
  GPUCOST_ASSIGN_OR_RETURN(SampleReader reader,
                           SampleReader::Create(samples, st.index, st.options.interval_seconds));
  GPUCOST_ASSIGN_OR_RETURN(DeviceRows rows, analyses_internal::GroupByDevice(reader, st.index));
  const auto n = static_cast<int64_t>(reader.size());
  int64_t newest = st.newest;
  if (last && st.newest == std::numeric_limits<int64_t>::min()) {
    st.chunk_end = std::numeric_limits<int64_t>::max();  // one chunk: no order to check, every bin decided now
  } else if (n > 0) {
    // Every row has an instant (GroupByDevice checked), and a unit's scaling keeps the order.
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    for (const int64_t t : samples.timestamp) {
      lo = std::min(lo, t);
      hi = std::max(hi, t);
    }
    if (ToNanos(lo, samples.time_unit) < st.newest) {
      for (int64_t i = 0; i < n; ++i) {
        const int64_t start = reader.start(i);
        if (start >= st.newest) continue;
        return RowError(analyses_internal::kUsage, i, "timestamp",
                        absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", absl::FromUnixNanos(start),
                                                      absl::UTCTimeZone()),
                                     " is before the newest sample of an earlier chunk (",
                                     absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", absl::FromUnixNanos(st.newest),
                                                      absl::UTCTimeZone()),
                                     "): idle detection takes chunks in time order"));
      }
    }
    int64_t longest = std::llround(st.options.interval_seconds * 1e9);
    if (samples.duration.has_value()) {
      longest = 0;
      for (const int64_t duration : *samples.duration) longest = std::max(longest, duration);
      longest = ToNanos(longest, samples.time_unit);
    }
    newest = std::max(st.newest, ToNanos(hi, samples.time_unit));
    st.chunk_end = std::max(st.chunk_end, newest + longest);
  }
  const std::vector<int32_t> ids = st.Consumers(reader);
  const ChunkRows chunk{reader, rows, ids};
  IdleDiagnostics& diag = st.out.diagnostics;
  diag.samples_total += n;
  diag.samples_unknown_resource += rows.unknown_resource;
  for (int64_t g = 0; g < st.index.num_devices(); ++g) {
    if (rows.offsets[g] != rows.offsets[g + 1]) st.seen[g] = 1;
  }
  st.newest = newest;
  for (int32_t r = 0; r < static_cast<int32_t>(st.index.names.size()); ++r) {
    if (st.grid_of[r] < 0) {
      // Not billed: its samples waste nothing; they count as outside billing.
      const int64_t first = st.index.first_device[r];
      for (int64_t k = rows.offsets[first]; k < rows.offsets[first + st.index.device_count[r]]; ++k) {
        ++diag.samples_outside_billing;
        if (chunk.consumer(rows.rows[k]) < 0) ++diag.samples_no_consumer;
      }
      continue;
    }
    // One resource at a time: a chunk's grid is decided before the next one grows.
    Grid& g = st.grids[st.grid_of[r]];
    const State::Step step = st.Plan(g, /*finishing=*/false);
    GPUCOST_RETURN_IF_ERROR(st.Accumulate(g, chunk, step.until));
    if (step.until > g.decided) st.Decide(g, step.frontier, step.until, &chunk);
    st.Settle(g);
  }
  return absl::OkStatus();
}

absl::StatusOr<IdleResult> IdleStream::Finish() && {
  State& st = *state_;
  if (st.finished) return absl::FailedPreconditionError("idle stream: Finish called twice");
  st.finished = true;
  for (Grid& g : st.grids) {
    while (g.decided < g.bins) {
      const State::Step step = st.Plan(g, /*finishing=*/true);
      st.Decide(g, step.frontier, step.until, nullptr);
      st.Settle(g);
    }
    if (g.policy_state == kTerminated) {
      st.out.decisions.until[g.terminate_row] = std::min(g.BinStart(g.bins), g.billing_end);
    }
    for (int32_t d = 0; d < g.devices; ++d) {
      if (!st.seen[st.index.first_device[g.resource] + d]) ++st.out.diagnostics.devices_unobserved;
    }
  }
  IdleResult out = std::move(st.out);
  // FindIdle's order: per resource its terminate spans, its no-telemetry
  // spans, then each device's, each in time order.
  IdleSpans& s = out.spans;
  auto group = [&](size_t k) {
    if (s.kind[k] == static_cast<int8_t>(IdleKind::kTerminate)) return -2;
    if (s.kind[k] == static_cast<int8_t>(IdleKind::kNoTelemetry)) return -1;
    return s.device[k];
  };
  std::vector<int64_t> order(s.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int64_t>(k);
  auto span_before = [&](int64_t a, int64_t b) {
    return std::tuple(s.resource[a], group(a), s.start[a]) < std::tuple(s.resource[b], group(b), s.start[b]);
  };
  IdleHolders& h = out.holders;
  if (!std::is_sorted(order.begin(), order.end(), span_before)) {  // one chunk decided at once is in order
    std::sort(order.begin(), order.end(), span_before);
    std::vector<int64_t> renumber(s.size());
    for (size_t k = 0; k < order.size(); ++k) renumber[order[k]] = static_cast<int64_t>(k);
    Reorder(order, s.resource, s.device, s.devices, s.kind, s.start, s.end, s.busy_ns, s.observed_ns);
    for (int64_t& span : h.span) span = renumber[span];
  }
  // Holders in (span, consumer) order.
  std::vector<int64_t> rows(h.size());
  for (size_t k = 0; k < rows.size(); ++k) rows[k] = static_cast<int64_t>(k);
  std::sort(rows.begin(), rows.end(), [&](int64_t a, int64_t b) {
    return h.span[a] != h.span[b] ? h.span[a] < h.span[b] : h.consumer[a] < h.consumer[b];
  });
  Reorder(rows, h.span, h.consumer, h.held_ns, h.used_ns);
  // Decisions per resource, each in time order.
  PolicyDecisions& p = out.decisions;
  if (!std::is_sorted(p.resource.begin(), p.resource.end())) {
    std::vector<int64_t> by(p.size());
    for (size_t k = 0; k < by.size(); ++k) by[k] = static_cast<int64_t>(k);
    std::stable_sort(by.begin(), by.end(), [&](int64_t a, int64_t b) { return p.resource[a] < p.resource[b]; });
    Reorder(by, p.resource, p.time, p.decision, p.window_start, p.util, p.until);
  }
  return out;
}

absl::StatusOr<IdleResult> FindIdle(const CostColumns& costs, const SampleColumns& samples,
                                    const InventoryColumns& inventory,
                                    std::span<const std::string_view> exempt_consumers, const IdleOptions& options) {
  GPUCOST_ASSIGN_OR_RETURN(IdleStream stream, IdleStream::Create(costs, inventory, exempt_consumers, options));
  GPUCOST_RETURN_IF_ERROR(stream.Add(samples, /*last=*/true));
  return std::move(stream).Finish();
}

}  // namespace gpucost
