// Idle detection (include/gpucost/analyses/idle.h). Layout of the work:
//
// 1. Index the inventory, the cost lines' billed intervals per resource, and
//    the samples grouped by device (a counting sort; every row validated).
// 2. Per resource, on a grid of `resolution` from its first billed instant to
//    its last: each device's busy, held and observed time per bin, and
//    whether an exempt workload held it.
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
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
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

// Working arrays of one resource, reused across resources.
struct Workspace {
  std::vector<double> busy, held, observed;  // [device * bins + bin], ns
  std::vector<uint8_t> exempt, idle;         // [device * bins + bin]
  std::vector<uint8_t> billed;               // [bin]
  std::vector<int64_t> billed_prefix;        // [bin + 1]
  std::vector<double> prefix;                // [bin + 1]
  std::vector<int64_t> observed_prefix;      // [bin + 1]: bins of the device with a sample
  std::vector<uint8_t> instance_observed;    // [bin]: any device of the resource has a sample
  std::vector<int32_t> diff;                 // [bin + 1]
  std::vector<uint8_t> all_unheld, terminate;  // [bin]
  std::vector<double> instance_busy;         // [bin]
  std::vector<uint8_t> instance_exempt;      // [bin]
};

class IdlePass {
 public:
  IdlePass(const IdleOptions& options, const DeviceIndex& index, const SampleReader& reader, const DeviceRows& rows,
           const std::vector<uint8_t>& exempt, IdleResult& out)
      : o_(options), index_(index), reader_(reader), rows_(rows), exempt_(exempt), out_(out) {}

  absl::Status Resource(int32_t r, const std::vector<Interval>& lines);

 private:
  void Accumulate(int64_t device, int64_t base);
  void MarkIdle(int64_t base);
  int64_t AddSpan(int32_t r, int32_t device, int32_t devices, IdleKind kind, int64_t b0, int64_t b1, double busy,
                  double observed);
  void Holders(int64_t device, const std::vector<int64_t>& spans);
  void Policy(int32_t r, int32_t devices, int64_t billing_end);

  [[nodiscard]] int64_t BinStart(int64_t b) const { return t0_ + b * o_.resolution_ns; }

  const IdleOptions& o_;
  const DeviceIndex& index_;
  const SampleReader& reader_;
  const DeviceRows& rows_;
  const std::vector<uint8_t>& exempt_;
  IdleResult& out_;
  Workspace w_;
  int64_t t0_ = 0;    // grid origin of the current resource
  int64_t bins_ = 0;  // bins of the current resource
  absl::flat_hash_map<uint64_t, uint32_t> holder_ids_;
};

absl::Status IdlePass::Resource(int32_t r, const std::vector<Interval>& lines) {
  const int64_t res = o_.resolution_ns;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (const Interval& line : lines) {
    lo = std::min(lo, line.start);
    hi = std::max(hi, line.end);
  }
  t0_ = FloorDiv(lo, res) * res;
  bins_ = FloorDiv(hi - t0_ + res - 1, res);
  const int32_t n = index_.device_count[r];
  if (static_cast<double>(bins_) * n > 2e9) {
    return ParameterError("resolution", absl::StrCat("resource ", analyses_internal::Quoted(index_.names[r]),
                                                     " is billed for ", bins_, " steps of the grid; use a coarser "
                                                     "resolution or a shorter range"));
  }
  const auto cells = static_cast<size_t>(bins_ * n);
  const auto bins = static_cast<size_t>(bins_);
  w_.busy.assign(cells, 0.0);
  w_.held.assign(cells, 0.0);
  w_.observed.assign(cells, 0.0);
  w_.exempt.assign(cells, 0);
  w_.idle.assign(cells, 0);
  w_.diff.assign(bins + 1, 0);
  for (const Interval& line : lines) {
    w_.diff[(line.start - t0_) / res] += 1;
    w_.diff[FloorDiv(line.end - t0_ + res - 1, res)] -= 1;
  }
  w_.billed.assign(bins, 0);
  w_.billed_prefix.assign(bins + 1, 0);
  for (int64_t b = 0, active = 0; b < bins_; ++b) {
    active += w_.diff[b];
    w_.billed[b] = active > 0 ? 1 : 0;
    w_.billed_prefix[b + 1] = w_.billed_prefix[b] + w_.billed[b];
  }

  out_.diagnostics.devices_billed += n;
  for (int32_t d = 0; d < n; ++d) {
    const int64_t g = index_.first_device[r] + d;
    if (rows_.offsets[g] == rows_.offsets[g + 1]) ++out_.diagnostics.devices_unobserved;
    Accumulate(g, d * bins_);
    MarkIdle(d * bins_);
  }

  // Bins where every device is idle and nobody holds any; runs of at least a
  // window are terminate spans.
  const int64_t window_bins = o_.window_ns / res;
  w_.all_unheld.assign(bins, 1);
  w_.terminate.assign(bins, 0);
  for (int32_t d = 0; d < n; ++d) {
    const int64_t base = d * bins_;
    for (int64_t b = 0; b < bins_; ++b) {
      if (!w_.idle[base + b] || w_.held[base + b] > 0) w_.all_unheld[b] = 0;
    }
  }
  for (int64_t b = 0; b < bins_;) {
    if (!w_.all_unheld[b]) {
      ++b;
      continue;
    }
    int64_t e = b;
    while (e < bins_ && w_.all_unheld[e]) ++e;
    if (e - b >= window_bins) {
      double busy = 0, observed = 0;
      for (int32_t d = 0; d < n; ++d) {
        for (int64_t k = b; k < e; ++k) {
          busy += std::min(w_.busy[d * bins_ + k], static_cast<double>(res));
          observed += std::min(w_.observed[d * bins_ + k], static_cast<double>(res));
        }
      }
      std::fill(w_.terminate.begin() + b, w_.terminate.begin() + e, 1);
      AddSpan(r, -1, n, IdleKind::kTerminate, b, e, busy, observed);
    }
    b = e;
  }

  // Billed stretches of at least a window where no device has a sample:
  // "no telemetry" spans, reported apart from idle and never flagged.
  w_.instance_observed.assign(bins, 0);
  for (int32_t d = 0; d < n; ++d) {
    const int64_t base = d * bins_;
    for (int64_t b = 0; b < bins_; ++b) w_.instance_observed[b] |= w_.observed[base + b] > 0 ? 1 : 0;
  }
  for (int64_t b = 0; b < bins_;) {
    if (w_.instance_observed[b] || !w_.billed[b]) {
      ++b;
      continue;
    }
    int64_t e = b;
    while (e < bins_ && !w_.instance_observed[e] && w_.billed[e]) ++e;
    if (e - b >= window_bins) AddSpan(r, -1, n, IdleKind::kNoTelemetry, b, e, 0.0, 0.0);
    b = e;
  }

  // Per device: runs of release / exempt / right-size bins.
  std::vector<int64_t> held_spans;
  for (int32_t d = 0; d < n; ++d) {
    const int64_t base = d * bins_;
    held_spans.clear();
    auto kind_of = [&](int64_t b) -> int {
      if (!w_.idle[base + b]) return -1;
      if (w_.held[base + b] > 0) {
        return static_cast<int>(w_.exempt[base + b] ? IdleKind::kExempt : IdleKind::kRelease);
      }
      return w_.terminate[b] ? -1 : static_cast<int>(IdleKind::kRightSize);
    };
    for (int64_t b = 0; b < bins_;) {
      const int kind = kind_of(b);
      int64_t e = b + 1;
      while (e < bins_ && kind_of(e) == kind) ++e;
      if (kind >= 0) {
        double busy = 0, observed = 0;
        for (int64_t k = b; k < e; ++k) {
          busy += std::min(w_.busy[base + k], static_cast<double>(res));
          observed += std::min(w_.observed[base + k], static_cast<double>(res));
        }
        const int64_t span = AddSpan(r, d, 1, static_cast<IdleKind>(kind), b, e, busy, observed);
        if (kind != static_cast<int>(IdleKind::kRightSize)) held_spans.push_back(span);
      }
      b = e;
    }
    if (!held_spans.empty()) Holders(index_.first_device[r] + d, held_spans);
  }

  Policy(r, n, hi);
  return absl::OkStatus();
}

void IdlePass::Accumulate(int64_t device, int64_t base) {
  const int64_t res = o_.resolution_ns;
  const int64_t grid_end = BinStart(bins_);
  for (int64_t k = rows_.offsets[device]; k < rows_.offsets[device + 1]; ++k) {
    const int64_t i = rows_.rows[k];
    const int32_t c = reader_.consumer(i);
    if (c < 0) ++out_.diagnostics.samples_no_consumer;
    const int64_t s = reader_.start(i);
    const int64_t e = s + reader_.duration(i);
    if (e <= t0_ || s >= grid_end) {
      ++out_.diagnostics.samples_outside_billing;
      continue;
    }
    const int64_t lo = std::max(s, t0_), hi = std::min(e, grid_end);
    const double busy_rate = reader_.share(i) * reader_.util(i);
    const double held_rate = c >= 0 ? reader_.share(i) : 0.0;
    const uint8_t is_exempt = c >= 0 ? exempt_[c] : 0;
    bool billed = false;
    for (int64_t b = (lo - t0_) / res; b < bins_; ++b) {
      const int64_t bs = BinStart(b);
      if (bs >= hi) break;
      const auto o = static_cast<double>(std::min(hi, bs + res) - std::max(lo, bs));
      w_.busy[base + b] += busy_rate * o;
      w_.observed[base + b] += o;
      w_.held[base + b] += held_rate * o;
      w_.exempt[base + b] |= is_exempt;
      billed |= w_.billed[b] != 0;
    }
    if (!billed) ++out_.diagnostics.samples_outside_billing;
  }
}

void IdlePass::MarkIdle(int64_t base) {
  const int64_t res = o_.resolution_ns;
  const int64_t window_bins = o_.window_ns / res;
  w_.prefix.assign(bins_ + 1, 0.0);
  w_.observed_prefix.assign(bins_ + 1, 0);
  for (int64_t b = 0; b < bins_; ++b) {
    w_.prefix[b + 1] = w_.prefix[b] + std::min(w_.busy[base + b], static_cast<double>(res));
    w_.observed_prefix[b + 1] = w_.observed_prefix[b] + (w_.observed[base + b] > 0 ? 1 : 0);
  }
  std::fill(w_.diff.begin(), w_.diff.end(), 0);
  const double limit = o_.threshold * static_cast<double>(o_.window_ns);
  for (int64_t k = 0; k + window_bins <= bins_; ++k) {
    if (w_.billed_prefix[k + window_bins] - w_.billed_prefix[k] != window_bins) continue;
    // Time without a sample is unobserved, not idle (SEMANTICS 2): only
    // windows the telemetry covers can be idle.
    if (w_.observed_prefix[k + window_bins] - w_.observed_prefix[k] != window_bins) continue;
    if (w_.prefix[k + window_bins] - w_.prefix[k] < limit) {
      w_.diff[k] += 1;
      w_.diff[k + window_bins] -= 1;
    }
  }
  for (int64_t b = 0, active = 0; b < bins_; ++b) {
    active += w_.diff[b];
    w_.idle[base + b] = active > 0 ? 1 : 0;
  }
  // A low window may begin or end with a few busy steps (5 busy minutes
  // still average below 5 % over 2 h); an idle span starts and ends idle.
  const double busy_step = o_.threshold * static_cast<double>(res);
  auto busy = [&](int64_t b) { return std::min(w_.busy[base + b], static_cast<double>(res)) >= busy_step; };
  for (int64_t b = 0; b < bins_;) {
    if (!w_.idle[base + b]) {
      ++b;
      continue;
    }
    int64_t e = b;
    while (e < bins_ && w_.idle[base + e]) ++e;
    for (int64_t k = b; k < e && busy(k); ++k) w_.idle[base + k] = 0;
    for (int64_t k = e - 1; k >= b && w_.idle[base + k] && busy(k); --k) w_.idle[base + k] = 0;
    b = e;
  }
}

int64_t IdlePass::AddSpan(int32_t r, int32_t device, int32_t devices, IdleKind kind, int64_t b0, int64_t b1,
                          double busy, double observed) {
  IdleSpans& s = out_.spans;
  s.resource.push_back(r);
  s.device.push_back(device);
  s.devices.push_back(devices);
  s.kind.push_back(static_cast<int8_t>(kind));
  s.start.push_back(BinStart(b0));
  s.end.push_back(BinStart(b1));
  s.busy_ns.push_back(busy);
  s.observed_ns.push_back(observed);
  return static_cast<int64_t>(s.size()) - 1;
}

// Adds, for every held span of `device` (in time order), the time each
// workload held and used it inside the span.
void IdlePass::Holders(int64_t device, const std::vector<int64_t>& spans) {
  const IdleSpans& s = out_.spans;
  IdleHolders& h = out_.holders;
  for (int64_t k = rows_.offsets[device]; k < rows_.offsets[device + 1]; ++k) {
    const int64_t i = rows_.rows[k];
    const int32_t c = reader_.consumer(i);
    if (c < 0) continue;
    const int64_t start = reader_.start(i);
    const int64_t end = start + reader_.duration(i);
    auto it = std::upper_bound(spans.begin(), spans.end(), start,
                               [&](int64_t t, int64_t span) { return t < s.end[span]; });
    for (; it != spans.end() && s.start[*it] < end; ++it) {
      const int64_t o = std::min(end, s.end[*it]) - std::max(start, s.start[*it]);
      if (o <= 0) continue;
      const uint64_t key = (static_cast<uint64_t>(*it) << 32) | static_cast<uint32_t>(c);
      auto [slot, inserted] = holder_ids_.try_emplace(key, static_cast<uint32_t>(h.size()));
      if (inserted) {
        h.span.push_back(*it);
        h.consumer.push_back(c);
        h.held_ns.push_back(0);
        h.used_ns.push_back(0);
      }
      h.held_ns[slot->second] += reader_.share(i) * static_cast<double>(o);
      h.used_ns[slot->second] += reader_.share(i) * reader_.util(i) * static_cast<double>(o);
    }
  }
}

// The seed policy, evaluated at every grid instant t (after the bin ending
// at t is complete):
//   watching:   alert when the window ending at t is wholly billed, began
//               after the last activity, holds no exempt workload and the
//               instance's mean busy fraction over it is below threshold;
//   grace:      cancel when a bin has activity (busy fraction >= threshold
//               or an exempt workload); "ended" when billing stops;
//               terminate when the grace period passes without either;
//   terminated: the idle stretch lasts until activity or end of billing.
void IdlePass::Policy(int32_t r, int32_t devices, int64_t billing_end) {
  const int64_t res = o_.resolution_ns;
  const int64_t window_bins = o_.window_ns / res;
  const int64_t grace_bins = o_.grace_ns / res;
  const double capacity = static_cast<double>(devices) * static_cast<double>(res);  // per bin
  w_.instance_busy.assign(bins_, 0.0);
  w_.instance_exempt.assign(bins_, 0);
  for (int32_t d = 0; d < devices; ++d) {
    for (int64_t b = 0; b < bins_; ++b) {
      w_.instance_busy[b] += std::min(w_.busy[d * bins_ + b], static_cast<double>(res));
      w_.instance_exempt[b] |= w_.exempt[d * bins_ + b];
    }
  }
  std::vector<double> busy_prefix(bins_ + 1, 0.0);
  std::vector<int64_t> exempt_prefix(bins_ + 1, 0);
  std::vector<int64_t> observed_prefix(bins_ + 1, 0);
  for (int64_t b = 0; b < bins_; ++b) {
    busy_prefix[b + 1] = busy_prefix[b] + w_.instance_busy[b];
    exempt_prefix[b + 1] = exempt_prefix[b] + w_.instance_exempt[b];
    observed_prefix[b + 1] = observed_prefix[b] + w_.instance_observed[b];
  }
  // A bin without telemetry stops a pending decision, as activity does:
  // nobody terminates what nothing measured.
  auto active = [&](int64_t b) {
    return w_.instance_busy[b] >= o_.threshold * capacity || w_.instance_exempt[b] != 0 ||
           w_.instance_observed[b] == 0;
  };
  PolicyDecisions& out = out_.decisions;
  auto emit = [&](int64_t time, PolicyDecision decision, int64_t from_bin, int64_t to_bin) {
    out.resource.push_back(r);
    out.time.push_back(time);
    out.decision.push_back(static_cast<int8_t>(decision));
    out.window_start.push_back(BinStart(from_bin));
    const double span = capacity * static_cast<double>(to_bin - from_bin);
    out.util.push_back(span > 0 ? (busy_prefix[to_bin] - busy_prefix[from_bin]) / span : 0.0);
    out.until.push_back(kMissingInstant);
  };
  enum class State { kWatching, kGrace, kTerminated };
  State state = State::kWatching;
  int64_t reset = 0;        // the next window may not start before this bin
  int64_t alert_bin = 0;    // grid instant of the pending alert
  size_t terminate_row = 0;
  const double limit = o_.threshold * capacity * static_cast<double>(window_bins);
  for (int64_t k = 1; k <= bins_; ++k) {
    const int64_t b = k - 1;  // the bin that just completed
    switch (state) {
      case State::kWatching: {
        const int64_t from = k - window_bins;
        if (from < reset) break;
        if (w_.billed_prefix[k] - w_.billed_prefix[from] != window_bins) break;
        if (exempt_prefix[k] != exempt_prefix[from]) break;
        if (observed_prefix[k] - observed_prefix[from] != window_bins) break;
        if (!(busy_prefix[k] - busy_prefix[from] < limit)) break;
        emit(BinStart(k), PolicyDecision::kAlert, from, k);
        alert_bin = k;
        state = State::kGrace;
        if (grace_bins == 0) {
          emit(BinStart(k), PolicyDecision::kTerminate, k, k);
          terminate_row = out.size() - 1;
          state = State::kTerminated;
        }
        break;
      }
      case State::kGrace:
        if (!w_.billed[b]) {
          emit(BinStart(b), PolicyDecision::kEnded, alert_bin, b);
          state = State::kWatching;
          reset = k;
        } else if (active(b)) {
          emit(BinStart(k), PolicyDecision::kCancel, alert_bin, k);
          state = State::kWatching;
          reset = k;
        } else if (k == alert_bin + grace_bins) {
          emit(BinStart(k), PolicyDecision::kTerminate, alert_bin, k);
          terminate_row = out.size() - 1;
          state = State::kTerminated;
        }
        break;
      case State::kTerminated:
        if (!w_.billed[b] || active(b)) {
          out.until[terminate_row] = BinStart(b);
          state = State::kWatching;
          reset = k;
        }
        break;
    }
  }
  if (state == State::kTerminated) out.until[terminate_row] = std::min(BinStart(bins_), billing_end);
}

}  // namespace

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

absl::StatusOr<IdleResult> FindIdle(const CostColumns& costs, const SampleColumns& samples,
                                    const InventoryColumns& inventory,
                                    std::span<const std::string_view> exempt_consumers, const IdleOptions& options) {
  GPUCOST_RETURN_IF_ERROR(CheckOptions(options));
  GPUCOST_ASSIGN_OR_RETURN(DeviceIndex index, analyses_internal::IndexDevices(inventory));
  GPUCOST_ASSIGN_OR_RETURN(auto billed, BilledIntervals(costs, index));
  GPUCOST_ASSIGN_OR_RETURN(SampleReader reader, SampleReader::Create(samples, index, options.interval_seconds));
  GPUCOST_ASSIGN_OR_RETURN(DeviceRows rows, analyses_internal::GroupByDevice(reader, index));

  IdleResult out;
  out.resource_names = index.names;
  out.resource_devices = index.device_count;
  out.consumer_names = reader.consumer_names();
  absl::flat_hash_set<std::string> exempt_names;
  for (std::string_view name : exempt_consumers) exempt_names.insert(std::string(name));
  std::vector<uint8_t> exempt(out.consumer_names.size(), 0);
  for (size_t c = 0; c < exempt.size(); ++c) exempt[c] = exempt_names.contains(out.consumer_names[c]) ? 1 : 0;

  out.diagnostics.samples_total = static_cast<int64_t>(reader.size());
  out.diagnostics.samples_unknown_resource = rows.unknown_resource;
  out.diagnostics.devices = index.num_devices();
  IdlePass pass(options, index, reader, rows, exempt, out);
  for (int32_t r = 0; r < static_cast<int32_t>(index.names.size()); ++r) {
    if (billed[r].empty()) {
      // Not billed: its samples waste nothing; they count as outside billing.
      const int64_t first = index.first_device[r];
      const int64_t last = first + index.device_count[r];
      out.diagnostics.samples_outside_billing += rows.offsets[last] - rows.offsets[first];
      for (int64_t k = rows.offsets[first]; k < rows.offsets[last]; ++k) {
        if (reader.consumer(rows.rows[k]) < 0) ++out.diagnostics.samples_no_consumer;
      }
      continue;
    }
    GPUCOST_RETURN_IF_ERROR(pass.Resource(r, billed[r]));
  }
  // Holders in (span, consumer) order.
  IdleHolders& h = out.holders;
  std::vector<uint32_t> order(h.size());
  for (uint32_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return h.span[a] != h.span[b] ? h.span[a] < h.span[b] : h.consumer[a] < h.consumer[b];
  });
  IdleHolders sorted;
  for (uint32_t k : order) {
    sorted.span.push_back(h.span[k]);
    sorted.consumer.push_back(h.consumer[k]);
    sorted.held_ns.push_back(h.held_ns[k]);
    sorted.used_ns.push_back(h.used_ns[k]);
  }
  out.holders = std::move(sorted);
  return out;
}

}  // namespace gpucost
