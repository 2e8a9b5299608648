// File: analyses/profile.h
//
// Per-workload statistics over usage samples, for right-sizing, diagnosis
// and KPIs: one row per (consumer, resource, device, period) with the time
// held and busy, peak and mean memory, memory-pressure time and the
// time-weighted mean and maximum of any extra per-sample field (DCGM
// profiling fields: tensor-pipe active, DRAM active, PCIe bytes/s, power...).
//
// A sample counts wholly in the period where it starts. Weights are
// share * duration (GPU-time), so a MIG slice or a time-sliced pod weighs its
// part of the device. A NaN field value means "not reported" and is left out
// of that field's mean and maximum. Samples with no consumer or on a resource
// missing from the inventory are counted in the diagnostics, not profiled.
//
// Example:
//   gpucost::ProfileOptions options;
//   options.freq = gpucost::PeriodFreq::kDay;
//   std::vector<gpucost::ProfileField> fields = {{"tensor_active", tensor}};
//   absl::StatusOr<gpucost::UsageProfile> profile =
//       gpucost::ProfileUsage(samples, inventory, fields, options);
#ifndef GPUCOST_ANALYSES_PROFILE_H_
#define GPUCOST_ANALYSES_PROFILE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gpucost/columns.h"
#include "gpucost/time.h"

namespace gpucost {

struct ProfileOptions {
  // Seconds a sample stands for when the samples have no duration column.
  double interval_seconds = 60.0;
  // Rows per period of this length; none = one period for all time.
  std::optional<PeriodFreq> freq;
  // A sample is under memory pressure when mem_used >= this fraction of the
  // memory its share of the device has (share * mem_capacity).
  double mem_pressure = 0.85;
};

// An extra per-sample column; NaN = not reported.
struct ProfileField {
  std::string_view name;
  std::span<const double> values;
};

struct UsageProfile {
  std::vector<std::string> consumer_names;
  std::vector<std::string> resource_names;
  std::vector<std::string> field_names;
  // One row per (consumer, resource, device, period).
  std::vector<int32_t> consumer;
  std::vector<int32_t> resource;
  std::vector<int32_t> device;
  std::vector<int64_t> period;           // ns; 0 without freq
  std::vector<int64_t> first;            // earliest sample start, ns
  std::vector<int64_t> last;             // latest sample end, ns
  std::vector<int64_t> samples;
  std::vector<double> held_ns;           // share * time
  std::vector<double> used_ns;           // share * util * time
  std::vector<double> mem_byte_ns;       // mem_used * time
  std::vector<double> mem_peak;          // bytes, max of mem_used
  std::vector<double> mem_capacity;      // bytes, of the device
  std::vector<double> mem_pressure_ns;   // share * time under memory pressure
  // Per field (field_names order), one value per row: time-weighted sum
  // (value * share * time), its weight, and the maximum (NaN if none).
  std::vector<std::vector<double>> field_sum;
  std::vector<std::vector<double>> field_weight;
  std::vector<std::vector<double>> field_max;
  int64_t samples_total = 0;
  int64_t samples_no_consumer = 0;
  int64_t samples_unknown_resource = 0;

  [[nodiscard]] size_t size() const { return consumer.size(); }
};

// Validates the samples and fields like gpucost::Allocate (table, row and
// column in every error; a field value must be finite or NaN).
[[nodiscard]] absl::StatusOr<UsageProfile> ProfileUsage(
    const SampleColumns& samples, const InventoryColumns& inventory,
    std::span<const ProfileField> fields, const ProfileOptions& options);

}  // namespace gpucost

#endif  // GPUCOST_ANALYSES_PROFILE_H_
