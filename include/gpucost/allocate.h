// File: allocate.h
//
// The proration engine: SEMANTICS.md (docs/semantics.md) implemented to the
// letter. Every cost line is prorated over the consumers whose usage samples
// overlap it, on the basis the policy names; what no consumer took is idle.
//
// Example (one shot):
//   gpucost::AllocationPolicy policy;               // allocated, keep, by consumer
//   absl::StatusOr<gpucost::Allocation> result =
//       gpucost::Allocate(costs, samples, inventory, /*workloads=*/nullptr, policy);
//
// Example (streaming, samples in chunks of any order; same result):
//   auto allocator = gpucost::Allocator::Create(costs, inventory, nullptr, policy);
//   for (const auto& chunk : chunks) (void)allocator->AddSamples(chunk);
//   absl::StatusOr<gpucost::Allocation> result = allocator->Finish();
// (chunks a day at a time, in order: policy.ordered_chunks = true, and memory
// is set by the chunk and the result, not the stream).
#ifndef GPUCOST_ALLOCATE_H_
#define GPUCOST_ALLOCATE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpucost/columns.h"
#include "gpucost/cores.h"
#include "gpucost/model.h"
#include "gpucost/time.h"

namespace gpucost {

// SEMANTICS 5. The sample counts (five, six with down time) add up to
// samples_total.
struct Diagnostics {
  int64_t lines_total = 0;
  int64_t lines_unattributed = 0;
  int64_t lines_unobserved = 0;
  int64_t lines_oversubscribed = 0;
  int64_t lines_primary_overlap = 0;
  // Seconds a sample stood for when usage had no duration column.
  std::optional<double> interval_seconds;
  int64_t samples_total = 0;
  int64_t samples_duplicate = 0;
  int64_t samples_no_consumer = 0;
  int64_t samples_unknown_resource = 0;
  int64_t samples_outside_lines = 0;
  int64_t samples_used = 0;
  // SEMANTICS 10 (with a downtime table): lines with down time inside them,
  // and samples with a consumer whose instant fell in a down window of their
  // resource, dropped whole (the sixth part of samples_total).
  int64_t lines_down = 0;
  int64_t samples_in_downtime = 0;
  // SEMANTICS 9 (samples with a power_w column): samples whose power was NaN
  // (or whose chunk had no power column), energy-driven lines that had no
  // energy and fell back to the basis, and samples whose instant no carbon
  // intensity window covered (they add energy but no CO2e).
  int64_t samples_without_power = 0;
  int64_t lines_energy_fallback = 0;
  int64_t samples_without_intensity = 0;
};

// One key column of the result. String keys are codes into `dictionary`,
// which is sorted, so code order is value order. The "period" key holds
// instants (ns, UTC) in `period` instead, and the "cost_line" key the row
// of the cost line (0-based, in the cost table given) in `cost_line`: one
// result row per line and holder, what a FOCUS split cost allocation writes.
struct KeyColumn {
  std::string name;
  std::vector<int32_t> codes;
  std::vector<std::string> dictionary;
  std::vector<int64_t> period;
  std::vector<int64_t> cost_line;

  [[nodiscard]] bool is_period() const { return name == "period"; }
  [[nodiscard]] bool is_cost_line() const { return name == "cost_line"; }
};

// How the bill and the telemetry joined: one row per (resource_id, currency)
// seen in the cost lines or the samples, sorted by both. `currency` is ""
// when the lines have none or the resource is only in the telemetry. The
// sample columns of a resource billed in several currencies are on its first
// currency's row (0 on the others). Times are ns UTC, kMissingInstant where
// there is none. Money in the row's currency; hours are GPU-hours.
struct JoinTable {
  std::vector<std::string> resource_id;
  std::vector<std::string> currency;
  std::vector<uint8_t> in_inventory;
  std::vector<int64_t> lines, primary_lines;
  // Its lines counted in lines_primary_overlap and lines_oversubscribed.
  std::vector<int64_t> lines_primary_overlap, lines_oversubscribed;
  std::vector<double> cost, cost_observed, cost_unobserved, cost_unattributed;
  std::vector<double> billed_gpu_hours;  // C / 3600 over primary lines
  std::vector<int64_t> samples;  // non-duplicate samples naming the resource
  std::vector<int64_t> samples_no_consumer, samples_outside_lines, samples_unknown_resource;
  // share * duration / 3600 of samples with a consumer that joined no line.
  std::vector<double> unjoined_gpu_hours;
  // SEMANTICS 10: money of its lines on "__down__", and its samples dropped
  // as busy inside a down window (0 without a downtime table).
  std::vector<double> cost_down;
  std::vector<int64_t> samples_in_downtime;
  std::vector<int64_t> lines_start, lines_end;      // min start / max end of its lines
  std::vector<int64_t> samples_start, samples_end;  // min timestamp / max timestamp + duration

  [[nodiscard]] size_t size() const { return resource_id.size(); }
};

// One row per group, sorted by the key columns in `by` order (then the
// "currency" key, appended when the cost lines have a currency).
struct Allocation {
  std::vector<KeyColumn> keys;
  std::vector<double> cost;
  std::vector<double> idle_cost;
  std::vector<double> list_cost;  // empty when the cost lines had none
  std::vector<double> gpu_hours;
  std::vector<double> effective_gpu_hours;
  std::vector<double> mem_gib_hours;
  std::vector<double> cost_per_effective_gpu_hour;  // NaN where no effective hours
  // SEMANTICS 9, each absent unless the samples had a power_w column (and the
  // policy a pue, or a carbon intensity): kWh over primary lines, kWh x pue,
  // kg CO2e (of the facility energy when there is a pue).
  std::optional<std::vector<double>> energy_kwh;
  std::optional<std::vector<double>> facility_energy_kwh;
  std::optional<std::vector<double>> co2e_kg;
  // Embodied (scope 3) kg CO2e: gpu_hours x the inventory's
  // embodied_kg_per_gpu_hour of each line's node (idle capacity's on
  // __idle__, spread with the idle cost under idle "share"). Absent unless the
  // inventory has the column.
  std::optional<std::vector<double>> embodied_co2e_kg;
  Diagnostics diagnostics;
  JoinTable join;

  bool has_list_cost = false;  // whether the cost lines had a list_cost column

  [[nodiscard]] size_t size() const { return cost.size(); }
};

// Streaming allocator: cost lines, inventory and workloads up front, samples
// in chunks of any size and order, then Finish(). Memory grows with cost
// lines and (line, consumer) pairs, and by 16 bytes per sample for finding
// rows read twice across chunks (none for one-shot Allocate(); with
// policy.ordered_chunks, chunks that never go back in time, only the rows
// at the newest instant).
//
// An error in AddSamples() is sticky: Finish() then returns it too, so a
// partially fed allocator never yields a result.
class Allocator {
 public:
  // Validates and indexes the tables (copied in; they need not outlive this).
  // `downtime` (SEMANTICS 10) may be nullptr: no resource was ever down.
  // `carbon` (SEMANTICS 9) may be nullptr: policy.carbon_intensity, if any,
  // holds at every instant.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Allocator>> Create(
      const CostColumns& costs, const InventoryColumns& inventory,
      const WorkloadColumns* workloads, const AllocationPolicy& policy,
      const DowntimeColumns* downtime = nullptr, const CarbonIntensityColumns* carbon = nullptr);

  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // Adds one chunk of samples. Row numbers in errors count from the first
  // row of the first chunk. Rows equal in every column to a row of this or
  // an earlier chunk are dropped and counted (samples_duplicate); to find
  // them across chunks the allocator keeps 16 bytes per sample. With
  // policy.ordered_chunks a row before an earlier chunk's newest instant is
  // an error (naming its row), and only the rows at that instant are kept.
  [[nodiscard]] absl::Status AddSamples(const SampleColumns& samples);

  // Whether AddSamples() refused a chunk only for going back in time under
  // policy.ordered_chunks. A caller that can read its chunks again (files)
  // may then start over with an allocator without the promise, and get the
  // result it would have had; any other error is the input's.
  [[nodiscard]] bool WentBackInTime() const;

  // Prorates every line and groups the result. Call once.
  [[nodiscard]] absl::StatusOr<Allocation> Finish();

 private:
  friend absl::StatusOr<Allocation> Allocate(const CostColumns&, const SampleColumns&, const InventoryColumns&,
                                             const WorkloadColumns*, const AllocationPolicy&,
                                             const DowntimeColumns*, const CarbonIntensityColumns*);
  struct State;
  explicit Allocator(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// SEMANTICS 1.3: the spacing in seconds of every series (resource_id,
// device, consumer) of `samples` that has one: the median of the positive
// differences between its consecutive distinct timestamps.
[[nodiscard]] std::vector<double> SeriesSpacings(const SampleColumns& samples);

// The interval inferred from series spacings (seconds): their median, 60
// when there is none. Distributed runners infer it once over all partitions.
[[nodiscard]] double InferInterval(std::vector<double> spacings);

// One-shot allocation: Create, AddSamples once, Finish.
[[nodiscard]] absl::StatusOr<Allocation> Allocate(
    const CostColumns& costs, const SampleColumns& samples,
    const InventoryColumns& inventory, const WorkloadColumns* workloads,
    const AllocationPolicy& policy, const DowntimeColumns* downtime = nullptr,
    const CarbonIntensityColumns* carbon = nullptr);

}  // namespace gpucost

#endif  // GPUCOST_ALLOCATE_H_
