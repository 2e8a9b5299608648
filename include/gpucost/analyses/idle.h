// File: analyses/idle.h
//
// Idle GPU detection over usage samples: the one pass that touches every
// sample. For each GPU device billed by a cost line, the device's busy
// fraction (sum over its consumers of share * util) is integrated on a time
// grid of `resolution`; a device is idle wherever a window of `window`
// inside billed time averages below `threshold` (trimmed so that an idle
// span neither starts nor ends on a step at or above the threshold: a low
// 2 h window may hold a few busy minutes at its edges). Only time the
// telemetry covers can be idle: a window with a bin that no sample of the
// device covers is not idle, and billed time that no sample of the resource
// covers for at least `window` is a kNoTelemetry span ("no telemetry").
// A sample's util is taken as measured: leave out samples whose reader did
// not measure it (DcgmUsage::util_measured 0, util read as 0), as the Python
// layer does, or their time reads as idle.
//
// Idle time is cut into spans of one kind (docs/analyses.md):
//   kTerminate  every device of the resource is idle and nobody holds any of
//               them, for at least `window` (one span for the whole resource)
//   kRelease    a workload holds the idle device
//   kExempt     an exempt workload holds the idle device (reported, not flagged)
//   kRightSize  nobody holds the idle device while other devices of the
//               resource are busy or held
//   kNoTelemetry no sample of any device of the resource (one span for the
//               whole resource): no telemetry, never flagged
//
// The same pass replays the idle-termination policy per resource (alert when
// the instance averages below `threshold` over `window` with no exempt
// workload, terminate after `grace` unless activity resumes) and returns the
// decisions. Dollars are not computed here: the Python layer prices spans with
// gpucost::Allocate, so they reconcile with the allocation.
//
// IdleStream takes the samples in chunks that never go back in time (days of
// a month) and keeps only a few windows of grid per resource: memory is set by
// the chunk, not the month. FindIdle is the stream fed one chunk.
//
// Example:
//   gpucost::IdleOptions options;                    // 5 %, 2 h, 1 min grid
//   absl::StatusOr<gpucost::IdleResult> idle =
//       gpucost::FindIdle(costs, samples, inventory, /*exempt=*/{}, options);
#ifndef GPUCOST_ANALYSES_IDLE_H_
#define GPUCOST_ANALYSES_IDLE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gpucost/columns.h"
#include "gpucost/time.h"

namespace gpucost {

struct IdleOptions {
  // A window is idle when its mean busy fraction is below this, in [0, 1].
  double threshold = 0.05;
  // Length of the averaging window; a multiple of `resolution`.
  int64_t window_ns = 2 * kNanosPerHour;
  // Grid step: spans start and end on multiples of it (UTC epoch aligned).
  int64_t resolution_ns = 60 * kNanosPerSecond;
  // Seconds a sample stands for when the samples have no duration column.
  double interval_seconds = 60.0;
  // Policy: time from an alert to the terminate recommendation.
  int64_t grace_ns = int64_t{1800} * kNanosPerSecond;  // 30 minutes
};

// kNoTelemetry: billed time without any sample of the resource (no telemetry,
// not idle: SEMANTICS 2); reported, never flagged.
enum class IdleKind : int8_t { kTerminate = 0, kRelease = 1, kRightSize = 2, kExempt = 3, kNoTelemetry = 4 };
enum class PolicyDecision : int8_t { kAlert = 0, kCancel = 1, kTerminate = 2, kEnded = 3 };

// Spans, one row each. Devices: `device` >= 0 for one device; -1 for a
// kTerminate or kNoTelemetry span, which covers all `devices` devices of the resource.
struct IdleSpans {
  std::vector<int32_t> resource;  // index into IdleResult::resource_names
  std::vector<int32_t> device;
  std::vector<int32_t> devices;   // devices covered: 1, or N_r for kTerminate
  std::vector<int8_t> kind;       // IdleKind
  std::vector<int64_t> start;     // ns, UTC
  std::vector<int64_t> end;       // ns, exclusive
  std::vector<double> busy_ns;    // GPU-ns busy (sum of share * util * time)
  std::vector<double> observed_ns;  // device-ns covered by at least one sample
  [[nodiscard]] size_t size() const { return start.size(); }
};

// The workloads holding each held span (kRelease, kExempt).
struct IdleHolders {
  std::vector<int64_t> span;      // row in IdleSpans
  std::vector<int32_t> consumer;  // index into IdleResult::consumer_names
  std::vector<double> held_ns;    // GPU-ns held inside the span
  std::vector<double> used_ns;    // GPU-ns busy inside the span
  [[nodiscard]] size_t size() const { return span.size(); }
};

// The policy's decisions, in time order per resource.
struct PolicyDecisions {
  std::vector<int32_t> resource;
  std::vector<int64_t> time;          // when the decision is taken
  std::vector<int8_t> decision;       // PolicyDecision
  std::vector<int64_t> window_start;  // the averaging window behind an alert;
                                      // the grace period's start otherwise
  std::vector<double> util;           // mean busy fraction over that window
  // kTerminate: when the idle stretch ended (activity resumed or billing
  // stopped); kMissingInstant otherwise.
  std::vector<int64_t> until;
  [[nodiscard]] size_t size() const { return time.size(); }
};

struct IdleDiagnostics {
  int64_t samples_total = 0;
  int64_t samples_no_consumer = 0;       // observed, nobody holds the device
  int64_t samples_unknown_resource = 0;  // resource not in the inventory
  int64_t samples_outside_billing = 0;   // no cost line of the resource overlaps
  int64_t devices = 0;                   // inventory devices
  int64_t devices_billed = 0;            // with at least one cost line
  int64_t devices_unobserved = 0;        // billed, not one sample
};

struct IdleResult {
  std::vector<std::string> resource_names;  // the inventory's resources
  std::vector<int32_t> resource_devices;    // devices of each
  std::vector<std::string> consumer_names;
  IdleSpans spans;
  IdleHolders holders;
  PolicyDecisions decisions;
  IdleDiagnostics diagnostics;
};

[[nodiscard]] std::string_view IdleKindName(IdleKind kind);
[[nodiscard]] std::string_view PolicyDecisionName(PolicyDecision decision);

// Idle spans and policy decisions. `exempt_consumers` names the workloads
// whose holding exempts a device (an active job waiting on data). Validates
// the tables like gpucost::Allocate (table, row and column in every error).
[[nodiscard]] absl::StatusOr<IdleResult> FindIdle(
    const CostColumns& costs, const SampleColumns& samples,
    const InventoryColumns& inventory,
    std::span<const std::string_view> exempt_consumers,
    const IdleOptions& options);

// Idle detection over samples given a chunk at a time, in time order: no
// sample of a chunk starts before the newest sample of an earlier chunk
// (equal instants allowed). Bins no later sample can reach are decided as
// chunks arrive, each with the windows around it that its decision depends
// on; the result equals FindIdle's over the chunks concatenated (spans cut at
// decision points are joined again; sums to rounding).
//
// Example:
//   GPUCOST_ASSIGN_OR_RETURN(gpucost::IdleStream stream,
//                            gpucost::IdleStream::Create(costs, inventory, {}, options));
//   for (const gpucost::SampleColumns& day : days) GPUCOST_RETURN_IF_ERROR(stream.Add(day));
//   GPUCOST_ASSIGN_OR_RETURN(gpucost::IdleResult idle, std::move(stream).Finish());
class IdleStream {
 public:
  // Validates the options, the cost lines and the inventory, and copies what
  // it needs: the tables may go once it returns.
  [[nodiscard]] static absl::StatusOr<IdleStream> Create(const CostColumns& costs,
                                                         const InventoryColumns& inventory,
                                                         std::span<const std::string_view> exempt_consumers,
                                                         const IdleOptions& options);
  IdleStream(IdleStream&&) noexcept;
  IdleStream& operator=(IdleStream&&) noexcept;
  ~IdleStream();

  // Adds a chunk (rows checked as FindIdle checks them; errors name the
  // chunk's row). A chunk that goes back in time is an error. `last`: no
  // chunk follows, so every bin is decided now, a resource at a time.
  [[nodiscard]] absl::Status Add(const SampleColumns& samples, bool last = false);
  // Decides the rest and returns the result, in FindIdle's order.
  [[nodiscard]] absl::StatusOr<IdleResult> Finish() &&;

 private:
  struct State;
  explicit IdleStream(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace gpucost

#endif  // GPUCOST_ANALYSES_IDLE_H_
