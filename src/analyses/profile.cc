// Per-workload statistics (include/gpucost/analyses/profile.h): one pass over
// the samples in input order. Telemetry arrives in runs of one series
// (resource, device, consumer); a run keeps its output row until the series
// or the period changes, so the hash lookup is per run, not per sample.
#include "gpucost/analyses/profile.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "gpucost/status.h"
#include "samples.h"

namespace gpucost {
namespace {

using analyses_internal::DeviceIndex;
using analyses_internal::SampleReader;

struct RowKey {
  int32_t consumer;
  int64_t device;  // global device
  int64_t period;
  bool operator==(const RowKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const RowKey& k) {
    return H::combine(std::move(h), k.consumer, k.device, k.period);
  }
};

// The period containing `t` and the start of the next one.
std::pair<int64_t, int64_t> PeriodOf(int64_t t, const std::optional<PeriodFreq>& freq) {
  if (!freq.has_value()) return {0, std::numeric_limits<int64_t>::max()};
  const int64_t p = FloorToPeriod(t, *freq);
  switch (*freq) {
    case PeriodFreq::kHour: return {p, p + kNanosPerHour};
    case PeriodFreq::kDay: return {p, p + kNanosPerDay};
    case PeriodFreq::kMonthStart: return {p, FloorToPeriod(p + 32 * kNanosPerDay, *freq)};
  }
  return {p, p};
}

}  // namespace

absl::StatusOr<UsageProfile> ProfileUsage(const SampleColumns& samples, const InventoryColumns& inventory,
                                          std::span<const ProfileField> fields, const ProfileOptions& options) {
  if (!(options.mem_pressure > 0.0) || !std::isfinite(options.mem_pressure)) {
    return ParameterError("mem_pressure", absl::StrCat(options.mem_pressure, " is not a positive fraction"));
  }
  GPUCOST_ASSIGN_OR_RETURN(DeviceIndex index, analyses_internal::IndexDevices(inventory));
  GPUCOST_ASSIGN_OR_RETURN(SampleReader reader, SampleReader::Create(samples, index, options.interval_seconds));
  const auto n = static_cast<int64_t>(reader.size());
  for (const ProfileField& field : fields) {
    if (field.values.size() != static_cast<size_t>(n)) {
      return TableError(analyses_internal::kUsage,
                        absl::StrCat("column '", absl::string_view(field.name.data(), field.name.size()), "' has ",
                                     field.values.size(), " values for ", n, " rows"));
    }
  }

  UsageProfile out;
  out.consumer_names = reader.consumer_names();
  out.resource_names = index.names;
  const size_t nf = fields.size();
  for (const ProfileField& field : fields) out.field_names.emplace_back(field.name);
  out.field_sum.resize(nf);
  out.field_weight.resize(nf);
  out.field_max.resize(nf);
  out.samples_total = n;

  absl::flat_hash_map<RowKey, uint32_t> rows;
  auto row_for = [&](const RowKey& key, int32_t resource, int32_t device) -> uint32_t {
    auto [it, inserted] = rows.try_emplace(key, static_cast<uint32_t>(out.size()));
    if (inserted) {
      out.consumer.push_back(key.consumer);
      out.resource.push_back(resource);
      out.device.push_back(device);
      out.period.push_back(key.period);
      out.first.push_back(std::numeric_limits<int64_t>::max());
      out.last.push_back(std::numeric_limits<int64_t>::min());
      out.samples.push_back(0);
      out.held_ns.push_back(0);
      out.used_ns.push_back(0);
      out.mem_byte_ns.push_back(0);
      out.mem_peak.push_back(0);
      out.mem_capacity.push_back(index.mem_capacity[key.device]);
      out.mem_pressure_ns.push_back(0);
      for (size_t f = 0; f < nf; ++f) {
        out.field_sum[f].push_back(0);
        out.field_weight[f].push_back(0);
        out.field_max[f].push_back(std::numeric_limits<double>::quiet_NaN());
      }
    }
    return it->second;
  };

  // The current run: same resource code, device, consumer code and period.
  int32_t run_rc = kNullCode - 1, run_cc = kNullCode - 1, run_dev = -1;
  int64_t period_start = 0, period_end = -1;
  uint32_t row = 0;
  for (int64_t i = 0; i < n; ++i) {
    GPUCOST_RETURN_IF_ERROR(reader.Check(i));
    for (size_t f = 0; f < nf; ++f) {
      const double v = fields[f].values[i];
      if (std::isinf(v)) {
        return RowError(analyses_internal::kUsage, i, fields[f].name,
                        absl::StrCat(v, " is neither a finite number nor NaN (not reported)"));
      }
    }
    const int32_t resource = reader.resource(i);
    const int32_t consumer = reader.consumer(i);
    if (resource < 0) {
      ++out.samples_unknown_resource;
      continue;
    }
    if (consumer < 0) {
      ++out.samples_no_consumer;
      continue;
    }
    const int64_t start = reader.start(i);
    const int64_t duration = reader.duration(i);
    const int32_t rc = samples.resource_id.codes[i], cc = samples.consumer.codes[i], dev = samples.device[i];
    const bool same_period = start >= period_start && start < period_end;
    if (rc != run_rc || cc != run_cc || dev != run_dev || !same_period) {
      if (!same_period) std::tie(period_start, period_end) = PeriodOf(start, options.freq);
      run_rc = rc;
      run_cc = cc;
      run_dev = dev;
      row = row_for({consumer, reader.global_device(i), period_start}, resource, dev);
    }
    const double share = reader.share(i);
    const double time = static_cast<double>(duration);
    const double weight = share * time;
    const double mem = reader.mem_used(i);
    out.first[row] = std::min(out.first[row], start);
    out.last[row] = std::max(out.last[row], start + duration);
    out.samples[row] += 1;
    out.held_ns[row] += weight;
    out.used_ns[row] += weight * reader.util(i);
    out.mem_byte_ns[row] += mem * time;
    out.mem_peak[row] = std::max(out.mem_peak[row], mem);
    if (mem >= options.mem_pressure * share * out.mem_capacity[row]) out.mem_pressure_ns[row] += weight;
    for (size_t f = 0; f < nf; ++f) {
      const double v = fields[f].values[i];
      if (std::isnan(v)) continue;
      out.field_sum[f][row] += v * weight;
      out.field_weight[f][row] += weight;
      double& peak = out.field_max[f][row];
      peak = std::isnan(peak) ? v : std::max(peak, v);
    }
  }
  return out;
}

}  // namespace gpucost
