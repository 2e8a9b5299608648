// File: io/dcgm.h
//
// DCGM exporter series -> usage samples (SEMANTICS 1.3).
//
// One sample per (instant, node, GPU [, MIG instance], pod [, container]):
//   resource_id  the node's cloud instance id from a nodes table
//                (node name -> resource id); the node name itself when no
//                table is given
//   device       the `gpu` label (the parent GPU's index for a MIG instance)
//   consumer     "namespace/pod" (the `exported_` forms win when present);
//                "" when the exporter reported no pod (the GPU was free)
//   util         DCGM_FI_DEV_GPU_UTIL for a whole GPU, DCGM_FI_PROF_GR_ENGINE_ACTIVE
//                for a MIG instance (GPU_UTIL is not reported per instance)
//   mem_used     DCGM_FI_DEV_FB_USED in bytes
//   share        1 for a whole GPU, the MIG profile's fraction for a MIG
//                instance, divided by k when k pods are reported on the same
//                GPU (or MIG instance) at the same instant (time-slicing)
//
// AMD Instinct (ROCm device-metrics-exporter, amd-smi via ParseAmdSmiMetric)
// is read by the same rules under its own names: gpu_gfx_activity (%),
// gpu_used_vram / gpu_free_vram (MB), gpu_power_usage (W); labels gpu_id,
// card_series / card_model, gpu_uuid / serial_number. A compute partition
// (gpu_compute_partition_type DPX/TPX/QPX/CPX) is an instance of share 1/k of
// its physical GPU; partitioned nodes number their physical GPUs by serial
// number in the order of their lowest gpu_id. A holder's (or the free)
// instances of one GPU at one instant are merged into one sample.
//
// Units. Exporters up to 4.8 print utilisation in percent and memory in MiB
// (DCGM_FI_DEV_GPU_UTIL, DCGM_FI_DEV_FB_USED, ...); 4.9 and later print
// ratios and bytes under DCGM 4.7's names (DCGM_FI_DEV_GPU_UTIL_RATIO,
// DCGM_FI_DEV_FB_USED_BYTES, ...). The unit is read from the field's name,
// never from its values; values outside the unit's range are errors, and the
// convention seen is reported (DcgmDiagnostics::units).
//
// Example:
//   GPUCOST_ASSIGN_OR_RETURN(auto series, gpucost::ParseExposition(text, "scrape.prom", t));
//   gpucost::DcgmOptions options;   // nodes, MIG shares, interval
//   GPUCOST_ASSIGN_OR_RETURN(gpucost::DcgmUsage usage, gpucost::DcgmToUsage(series, options));
//   gpucost::SampleColumns samples = usage.columns();
#ifndef GPUCOST_IO_DCGM_H_
#define GPUCOST_IO_DCGM_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gpucost/catalog.h"
#include "gpucost/columns.h"
#include "gpucost/io/prometheus.h"
#include "gpucost/io/usage.h"

namespace gpucost {

// The DCGM fields gpucost reads, whatever they are called.
enum class DcgmField : int8_t {
  kGpuUtil,         // DCGM_FI_DEV_GPU_UTIL (%)      | DCGM_FI_DEV_GPU_UTIL_RATIO
  kGrEngineActive,  // DCGM_FI_PROF_GR_ENGINE_ACTIVE | DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO
  kTensorActive,    // DCGM_FI_PROF_PIPE_TENSOR_ACTIVE | DCGM_FI_PROF_TENSOR_UTIL_RATIO
  kFbUsed,          // DCGM_FI_DEV_FB_USED (MiB)     | DCGM_FI_DEV_FB_USED_BYTES
  kFbFree,          // DCGM_FI_DEV_FB_FREE (MiB)     | DCGM_FI_DEV_FB_FREE_BYTES
  kMemCopyUtil,     // DCGM_FI_DEV_MEM_COPY_UTIL (%) | DCGM_FI_DEV_MEMORY_UTIL_RATIO
  kPowerUsage,      // DCGM_FI_DEV_POWER_USAGE (W)   | DCGM_FI_DEV_BOARD_POWER_WATTS
  kTotalEnergy,     // DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ since the driver loaded, a counter)
};
inline constexpr int kDcgmFieldCount = 8;

// Which naming/unit convention the series used.
enum class DcgmUnits : int8_t {
  kNone,        // no field whose unit depends on the convention was seen
  kLegacy,      // exporter <= 4.8: percent and MiB
  kRatioBytes,  // exporter >= 4.9: ratios and bytes
  kMixed,       // both (e.g. a fleet mid-upgrade); each value read by its name
};
[[nodiscard]] std::string_view DcgmUnitsName(DcgmUnits units);  // "none", "legacy", "ratio_bytes", "mixed"

// One metric name the exporter may print for a field, with its scale to
// gpucost's units (ratio 0-1, bytes, watts).
struct DcgmMetric {
  std::string_view name;
  DcgmField field;
  DcgmUnits units;  // kNone for names whose unit is the same in both conventions
  double scale;     // multiply the printed value by this
};
// Every metric name gpucost reads (for filtering exposition text and for
// building queries).
[[nodiscard]] std::span<const DcgmMetric> DcgmMetrics();
[[nodiscard]] std::vector<std::string_view> DcgmMetricNames();

struct DcgmOptions {
  // Labels naming the node, tried in order; the first present and non-empty
  // wins. Relabelled setups usually have `node` or `kubernetes_node`; the
  // exporter itself prints `Hostname` (<= 4.5) or `hostname`.
  std::vector<std::string> node_labels = {"node", "kubernetes_node", "Hostname", "hostname"};
  // Nodes table: node name -> resource id. Empty: the node name is the
  // resource id.
  StringColumn nodes_node;
  StringColumn nodes_resource_id;
  // A node missing from a non-empty nodes table is an error, unless this is
  // set: then the node name is used as the resource id.
  bool keep_unknown_nodes = false;
  // "auto" reads each name's own unit; kLegacy or kRatioBytes demands that
  // convention and rejects the other's names.
  DcgmUnits require_units = DcgmUnits::kNone;
  // The share of a MIG instance (modelName and GPU_I_PROFILE labels), first
  // found of: `mig_share` when set; a row of `mig_shares` (models compared by
  // CanonicalGpuModel, so "NVIDIA A100-SXM4-80GB" matches "A100 80GB"); the
  // catalog's profile on `mig_basis` (compute slices g/7 by default).
  std::function<absl::StatusOr<double>(std::string_view gpu_model, std::string_view profile)> mig_share;
  struct MigShareRow {
    std::string gpu_model;
    std::string profile;
    double share;
  };
  std::vector<MigShareRow> mig_shares;
  MigBasis mig_basis = MigBasis::kCompute;
  const Catalog* catalog = nullptr;  // nullptr: Catalog::Embedded()
  // Seconds between samples as the caller states them (the query step, the
  // scrape interval). Durations come from the data (DurationsFromSeries in
  // io/usage.h): each series' gap to its next sample, capped at its spacing.
  // A value given here is checked against that spacing (more than 2x apart
  // is an error) and stands for the spacing only where the data has no
  // order (one scrape); unset, that case gets 60 s.
  std::optional<double> interval_seconds;
  std::string interval_name = "interval";  // the caller's name for it, in errors ("step" for queries)
  // The exporter's own names: a series whose workload labels are the
  // scrape target's own (container one of these, or pod `<name>-<suffix>`
  // for one of these or the series' job/service label) is a free GPU, not
  // a workload (kube-prometheus-stack honorLabels, Google Managed
  // Prometheus). A node label whose value is such a pod is not a node.
  std::vector<std::string> exporter_names = {"nvidia-dcgm-exporter", "dcgm-exporter"};
  // Labels naming a scheduler job on bare metal, tried in order when a series
  // has no pod: dcgm-exporter's `hpc_job` (its --hpc-job-mapping-dir, files
  // named by GPU index that a Slurm prolog writes with the job id). The job
  // id is the consumer; k jobs on one GPU share it 1/k (the exporter prints
  // one series per job). JoinJobsToTelemetry (io/job_join.h) joins them to
  // the scheduler's accounting.
  std::vector<std::string> job_labels = {"hpc_job"};
  // Instant (/api/v1/query) answers saved a few seconds apart are joined at
  // one instant: instants within this many seconds of the first of a group
  // are read as that first one.
  double instant_tolerance_seconds = 30.0;
  // Only samples with timestamp in [start_ns, end_ns) are kept (query
  // answers may include the range's end point).
  int64_t start_ns = INT64_MIN;
  int64_t end_ns = INT64_MAX;
};

struct DcgmDiagnostics {
  DcgmUnits units = DcgmUnits::kNone;
  int64_t series_total = 0;
  int64_t series_ignored = 0;   // series of metrics gpucost does not read
  int64_t points_total = 0;
  int64_t points_outside = 0;   // points outside [start_ns, end_ns)
  int64_t samples = 0;
  int64_t samples_mig = 0;
  int64_t samples_time_sliced = 0;  // samples with k > 1
  // Free-GPU readings (no pod) at an instant where pods were also reported
  // on the same GPU: the GPU was held, so they are not emitted as samples.
  int64_t free_readings_shadowed = 0;
  // Durations from the data (io/usage.h).
  int64_t series = 0;            // distinct (node, GPU [, MIG instance], pod, container)
  int64_t spacing_ns = 0;        // median gap between a series' samples (0: one instant)
  int64_t gaps = 0;              // samples followed by a gap over 1.25x the spacing
  // Series whose workload labels were the exporter's own, read as free.
  int64_t exporter_series_freed = 0;
  // Node labels that named the exporter pod (dcgm-exporter in Kubernetes
  // prints its own pod as Hostname) and were passed over for the next label.
  int64_t node_labels_exporter_pod = 0;
  // Samples of GPUs whose memory field was not in the input: mem_used 0.
  // Fine for the allocated and used bases; blended needs memory.
  int64_t samples_without_memory = 0;
  // Samples of an input with no utilisation field at all (a counters file
  // with memory or power only): util 0. Holder-only telemetry: fine for the
  // allocated basis; used and blended need utilisation.
  int64_t samples_without_util = 0;
  // Whole-GPU samples whose util is DCGM_FI_PROF_GR_ENGINE_ACTIVE because
  // the input has no DCGM_FI_DEV_GPU_UTIL (a DCP-only counters file).
  int64_t samples_util_from_gr_engine = 0;
  // Samples of one consumer (or of the free part) on a further MIG instance
  // or AMD partition of the same GPU at the same instant, merged into the
  // first: shares and memory added, utilisation share-weighted.
  int64_t samples_merged = 0;
  // Samples whose power_w is the energy counter's average draw up to the
  // device's next reading (the last reading of a device: since its previous
  // one), instead of the power gauge.
  int64_t samples_power_from_energy = 0;
  // Energy counter readings lower than the device's previous one (the
  // driver reloaded): the sample before gets the gauge, else NaN power.
  int64_t energy_counter_resets = 0;
  // Instants of instant-query answers moved to their group's first instant.
  int64_t instants_joined = 0;
  // One GPU series seen in several series differing only in these labels
  // (prometheus_replica, replica: two Prometheus replicas; job, instance:
  // one exporter scraped by two jobs). Their second values at one instant
  // are dropped and counted.
  std::vector<std::string> duplicate_labels;
  int64_t duplicate_series = 0;
  int64_t duplicate_points = 0;
  // Sample lines of fields gpucost does not read, by metric name.
  std::vector<std::pair<std::string, int64_t>> skipped_fields;
};

// Owning usage samples with the extra DCGM columns (NaN where the field was
// not reported).
struct DcgmUsage {
  UsageSamples samples;
  EncodedStrings node, gpu_uuid, gpu_model, mig_profile;
  std::vector<double> tensor_active, mem_copy_util, power_w, mem_free;
  // 0 where the input has no utilisation field for the GPU (util read as 0,
  // counted in samples_without_util: a MIG instance without
  // DCGM_FI_PROF_GR_ENGINE_ACTIVE, holder-only telemetry), else 1.
  std::vector<uint8_t> util_measured;
  DcgmDiagnostics diagnostics;

  [[nodiscard]] size_t size() const { return samples.size(); }
  [[nodiscard]] SampleColumns columns() const { return samples.columns(); }
};

// Maps DCGM series (from ParseExposition or ParseQueryRange, any number of
// them appended) to usage samples. Bad values (NaN or out-of-range
// utilisation, negative memory, a non-integer `gpu` label, a field reported
// twice by one series for one GPU and instant, a missing util field) are
// errors naming the source, the line or series, the field and the column
// `value`. A missing memory field gives mem_used 0, counted.
[[nodiscard]] absl::StatusOr<DcgmUsage> DcgmToUsage(const PromSamples& series, const DcgmOptions& options);

}  // namespace gpucost

#endif  // GPUCOST_IO_DCGM_H_
