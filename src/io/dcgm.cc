// DCGM series -> usage samples. Three passes over columns:
// 1. per series: which field, which unit, which GPU/pod it describes
//    (an "identity": node, gpu, MIG instance, namespace, pod, container);
// 2. per identity: its points (gathered by a counting sort, sorted by
//    instant: one scan when each series is in time order) joined instant by
//    instant into observations, values checked as they come; no hash per
//    point, and errors are the ones the input order meets first;
// 3. per device: the pods at each instant (time-slicing), from its holders'
//    instants sorted once; then per identity, in time order, one sample per
//    observation.
#include "gpucost/io/dcgm.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <initializer_list>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "gpucost/status.h"
#include "gpucost/time.h"

namespace gpucost {
namespace {

absl::string_view A(std::string_view s) { return {s.data(), s.size()}; }

constexpr double kMiB = 1024.0 * 1024.0;

constexpr DcgmMetric kMetrics[] = {
    {"DCGM_FI_DEV_GPU_UTIL", DcgmField::kGpuUtil, DcgmUnits::kLegacy, 0.01},
    {"DCGM_FI_DEV_GPU_UTIL_RATIO", DcgmField::kGpuUtil, DcgmUnits::kRatioBytes, 1.0},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", DcgmField::kGrEngineActive, DcgmUnits::kNone, 1.0},
    {"DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", DcgmField::kGrEngineActive, DcgmUnits::kRatioBytes, 1.0},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", DcgmField::kTensorActive, DcgmUnits::kNone, 1.0},
    {"DCGM_FI_PROF_TENSOR_UTIL_RATIO", DcgmField::kTensorActive, DcgmUnits::kRatioBytes, 1.0},
    {"DCGM_FI_DEV_FB_USED", DcgmField::kFbUsed, DcgmUnits::kLegacy, kMiB},
    {"DCGM_FI_DEV_FB_USED_BYTES", DcgmField::kFbUsed, DcgmUnits::kRatioBytes, 1.0},
    {"DCGM_FI_DEV_FB_FREE", DcgmField::kFbFree, DcgmUnits::kLegacy, kMiB},
    {"DCGM_FI_DEV_FB_FREE_BYTES", DcgmField::kFbFree, DcgmUnits::kRatioBytes, 1.0},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", DcgmField::kMemCopyUtil, DcgmUnits::kLegacy, 0.01},
    {"DCGM_FI_DEV_MEMORY_UTIL_RATIO", DcgmField::kMemCopyUtil, DcgmUnits::kRatioBytes, 1.0},
    {"DCGM_FI_DEV_POWER_USAGE", DcgmField::kPowerUsage, DcgmUnits::kNone, 1.0},
    {"DCGM_FI_DEV_BOARD_POWER_WATTS", DcgmField::kPowerUsage, DcgmUnits::kRatioBytes, 1.0},
    // AMD Instinct, ROCm device-metrics-exporter: percent, MB (amd-smi's
    // MB are MiB: an MI300X's 196592 MB is 192 GiB less reserved), watts.
    {"gpu_gfx_activity", DcgmField::kGpuUtil, DcgmUnits::kNone, 0.01},
    {"gpu_used_vram", DcgmField::kFbUsed, DcgmUnits::kNone, kMiB},
    {"gpu_free_vram", DcgmField::kFbFree, DcgmUnits::kNone, kMiB},
    {"gpu_umc_activity", DcgmField::kMemCopyUtil, DcgmUnits::kNone, 0.01},
    {"gpu_power_usage", DcgmField::kPowerUsage, DcgmUnits::kNone, 1.0},
    // A counter in mJ since the driver loaded, kept in mJ (differences exact).
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", DcgmField::kTotalEnergy, DcgmUnits::kNone, 1.0},
};

// The first of `keys` the series has (dcgm-exporter's name, then AMD's).
std::optional<std::string_view> FirstLabel(const PromSeries& series, std::initializer_list<std::string_view> keys) {
  for (std::string_view key : keys) {
    if (auto v = series.Label(key); v.has_value() && !v->empty()) return v;
  }
  return std::nullopt;
}

// An AMD compute partition mode (gpu_compute_partition_type) -> partitions
// per GPU: 0 for SPX (whole GPU) or no label, -1 for an unknown mode. CPX is
// one partition per XCD: 8 on MI300X/MI325X/MI308X/MI350, 6 on MI300A.
int AmdPartitions(std::string_view mode, std::string_view model) {
  std::string m(mode);
  for (char& c : m) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (m.empty() || m == "spx" || m == "na") return 0;
  if (m == "dpx") return 2;
  if (m == "tpx") return 3;
  if (m == "qpx") return 4;
  if (m == "cpx") return model.find("MI300A") != std::string_view::npos ? 6 : 8;
  return -1;
}

const DcgmMetric* FindMetric(std::string_view name) {
  for (const DcgmMetric& m : kMetrics) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

bool IsRatioField(DcgmField f) {
  return f == DcgmField::kGpuUtil || f == DcgmField::kGrEngineActive || f == DcgmField::kTensorActive ||
         f == DcgmField::kMemCopyUtil;
}
bool IsMemoryField(DcgmField f) { return f == DcgmField::kFbUsed || f == DcgmField::kFbFree; }

// "2026-03-01T10:00:00Z" (with milliseconds when not whole seconds).
std::string FormatInstant(int64_t ns) {
  // Floor divisions that cannot overflow, whatever the instant (even near INT64_MIN).
  const int64_t ms = ns / 1'000'000 - (ns % 1'000'000 < 0 ? 1 : 0);
  const int64_t days = ms / 86'400'000 - (ms % 86'400'000 < 0 ? 1 : 0);
  const int64_t ms_of_day = ms - days * 86'400'000;
  const CivilDate d = CivilFromDays(days);
  const int64_t s = ms_of_day / 1000;
  std::string out = absl::StrCat(d.year, "-", d.month < 10 ? "0" : "", d.month, "-", d.day < 10 ? "0" : "", d.day,
                                 "T", s / 3600 < 10 ? "0" : "", s / 3600, ":", (s / 60) % 60 < 10 ? "0" : "",
                                 (s / 60) % 60, ":", s % 60 < 10 ? "0" : "", s % 60);
  if (ms_of_day % 1000 != 0) {
    const int64_t f = ms_of_day % 1000;
    absl::StrAppend(&out, ".", f < 100 ? "0" : "", f < 10 ? "0" : "", f);
  }
  out += "Z";
  return out;
}

struct Identity {
  std::string node;
  int32_t gpu = 0;
  bool mig = false;
  std::string mig_instance, profile, model, uuid, consumer;
  int32_t device_key = 0;     // (node, gpu, MIG instance) interned
  int32_t resource = -1;      // index into resolved resource ids
  double base_share = 1.0;    // 1, or the MIG profile's fraction
  int32_t first_series = 0;   // for error messages
  int amd_partitions = 0;     // k for an AMD partition (gpu is then its logical index)
  std::string serial;         // AMD serial_number: one per physical GPU
  bool amd = false;           // named by gpu_id (AMD), for messages
};

// AMD partitions are listed as logical GPUs (gpu_id 0..63 on a CPX node of
// eight): the device is the physical GPU, numbered on each node by its
// serial number in the order of its lowest gpu_id. Nodes without partitions
// keep gpu_id as printed.
void NumberAmdPhysicalGpus(std::vector<Identity>& identities) {
  absl::flat_hash_set<std::string> partitioned_nodes;
  for (const Identity& id : identities) {
    if (id.amd_partitions > 0) partitioned_nodes.insert(id.node);
  }
  if (partitioned_nodes.empty()) return;
  // A whole GPU printed without a serial number stands for itself.
  const auto physical = [](const Identity& id) { return id.serial.empty() ? absl::StrCat("#", id.gpu) : id.serial; };
  absl::flat_hash_map<std::string, std::vector<std::pair<int32_t, std::string>>> gpus_of_node;
  absl::flat_hash_map<std::string, int32_t> lowest;  // node \x1f serial -> lowest gpu_id
  for (const Identity& id : identities) {
    if (!partitioned_nodes.contains(id.node)) continue;
    const std::string key = absl::StrCat(id.node, "\x1f", physical(id));
    auto [it, inserted] = lowest.try_emplace(key, id.gpu);
    if (!inserted) it->second = std::min(it->second, id.gpu);
  }
  for (const auto& [key, gpu] : lowest) {
    const size_t cut = key.find('\x1f');
    gpus_of_node[key.substr(0, cut)].emplace_back(gpu, key.substr(cut + 1));
  }
  absl::flat_hash_map<std::string, int32_t> number;
  for (auto& [node, gpus] : gpus_of_node) {
    std::sort(gpus.begin(), gpus.end());
    for (size_t i = 0; i < gpus.size(); ++i) {
      number[absl::StrCat(node, "\x1f", gpus[i].second)] = static_cast<int32_t>(i);
    }
  }
  for (Identity& id : identities) {
    if (partitioned_nodes.contains(id.node)) id.gpu = number[absl::StrCat(id.node, "\x1f", physical(id))];
  }
}

// A device's energy counter -> its average draw from each reading to the
// next (the last reading: since the previous one), so that power x duration
// adds up to the counter's own increase. The counter is the device's: every
// holder of a GPU at one instant reads the same value, so it is read once per
// (resource, GPU, instant). A reading below the previous one is a reset (the
// driver reloaded): no average spans it, and the sample keeps its gauge
// (else NaN power, counted by the engine).
void PowerFromEnergyCounter(const std::vector<Identity>& identities, const std::vector<int32_t>& sample_identity,
                            const std::vector<int64_t>& timestamp, const std::vector<double>& energy_mj,
                            std::vector<double>& power_w, DcgmDiagnostics& diag) {
  struct Reading {
    int64_t device, t;
    double millijoules;
  };
  const auto device_of = [&](size_t i) {
    const Identity& id = identities[sample_identity[i]];
    return static_cast<int64_t>((uint64_t{static_cast<uint32_t>(id.resource)} << 32) | static_cast<uint32_t>(id.gpu));
  };
  std::vector<Reading> readings;
  for (size_t i = 0; i < energy_mj.size(); ++i) {
    if (!std::isnan(energy_mj[i])) readings.push_back({device_of(i), timestamp[i], energy_mj[i]});
  }
  const auto before = [](const Reading& a, const Reading& b) { return a.device != b.device ? a.device < b.device : a.t < b.t; };
  std::sort(readings.begin(), readings.end(), before);
  readings.erase(std::unique(readings.begin(), readings.end(),
                             [](const Reading& a, const Reading& b) { return a.device == b.device && a.t == b.t; }),
                 readings.end());
  const auto average = [&](size_t a, size_t b) {  // mJ per ns x 1e6 = W
    const double millijoules = readings[b].millijoules - readings[a].millijoules;
    return millijoules >= 0 ? millijoules * 1e6 / static_cast<double>(readings[b].t - readings[a].t)
                            : std::numeric_limits<double>::quiet_NaN();
  };
  std::vector<double> watts(readings.size(), std::numeric_limits<double>::quiet_NaN());
  for (size_t r = 0; r < readings.size(); ++r) {
    const bool has_next = r + 1 < readings.size() && readings[r + 1].device == readings[r].device;
    const bool has_prev = r > 0 && readings[r - 1].device == readings[r].device;
    if (has_next) {
      watts[r] = average(r, r + 1);
      if (std::isnan(watts[r])) ++diag.energy_counter_resets;
    } else if (has_prev) {
      watts[r] = average(r - 1, r);
    }
  }
  for (size_t i = 0; i < energy_mj.size(); ++i) {
    if (std::isnan(energy_mj[i])) continue;
    const Reading key{device_of(i), timestamp[i], 0.0};
    const size_t r = static_cast<size_t>(std::lower_bound(readings.begin(), readings.end(), key, before) - readings.begin());
    if (std::isnan(watts[r])) continue;
    power_w[i] = watts[r];
    ++diag.samples_power_from_energy;
  }
}

// Where a point came from, for error messages.
std::string PointPlace(const PromSamples& s, size_t point) {
  const PromSeries& series = s.series[s.series_id[point]];
  return absl::StrCat(FormatInstant(s.timestamp_ns[point]), ", series ", series.ToString());
}

absl::Status PointError(const PromSamples& s, size_t point, std::string_view what) {
  const PromSeries& series = s.series[s.series_id[point]];
  const std::string& source = s.sources[series.source];
  if (s.line[point] > 0) return LineError(source, s.line[point], "value", absl::StrCat(series.name, ": ", A(what)));
  return TableError(source, absl::StrCat("series ", series.ToString(), " at ", FormatInstant(s.timestamp_ns[point]),
                                         ", column 'value': ", A(what)));
}

// The share of one MIG instance, in the order DcgmOptions documents.
absl::StatusOr<double> ResolveMigShare(const DcgmOptions& options, std::string_view model,
                                       std::string_view profile) {
  if (options.mig_share) return options.mig_share(model, profile);
  const std::string canonical = CanonicalGpuModel(model);
  for (const DcgmOptions::MigShareRow& row : options.mig_shares) {
    if (row.profile == profile && CanonicalGpuModel(row.gpu_model) == canonical) return row.share;
  }
  const Catalog& catalog = options.catalog != nullptr ? *options.catalog : Catalog::Embedded();
  return catalog.MigShare(model, profile, options.mig_basis);
}

absl::Status SeriesError(const PromSamples& s, int32_t series_id, std::string_view what) {
  const PromSeries& series = s.series[series_id];
  return TableError(s.sources[series.source], absl::StrCat("series ", series.ToString(), ": ", A(what)));
}

std::optional<std::string_view> LabelPreferExported(const PromSeries& s, std::string_view key) {
  const std::string exported = absl::StrCat("exported_", A(key));
  if (auto v = s.Label(exported)) return v;
  return s.Label(key);
}

// `pod` is `<name>-<suffix>`.
bool PodOf(std::string_view pod, std::string_view name) {
  return !name.empty() && pod.size() > name.size() + 1 && pod.substr(0, name.size()) == name && pod[name.size()] == '-';
}

// A pod of the exporter itself: named after one of `names`, or after the
// series' job or service (a PodMonitor's job is "<namespace>/<name>").
bool IsExporterPod(std::string_view pod, const PromSeries& series, std::span<const std::string> names) {
  for (const std::string& n : names) {
    if (PodOf(pod, n)) return true;
  }
  for (std::string_view key : {"job", "service"}) {
    if (auto v = series.Label(key)) {
      std::string_view name = *v;
      if (const size_t slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
      if (PodOf(pod, name)) return true;
    }
  }
  return false;
}

// Labels two series of one GPU differ in (for the duplicates report).
void DifferingLabels(const PromSeries& a, const PromSeries& b, std::vector<std::string>* out) {
  auto note = [&](const std::string& key) {
    if (std::find(out->begin(), out->end(), key) == out->end()) out->push_back(key);
  };
  for (const auto& [k, v] : a.labels) {
    if (b.Label(k) != std::optional<std::string_view>(v)) note(k);
  }
  for (const auto& [k, v] : b.labels) {
    if (!a.Label(k).has_value()) note(k);
  }
}

// One kept point of an identity: its instant (joined for instant answers)
// and its index in the input.
struct TimedPoint {
  int64_t t;
  uint32_t p;
};

bool Before(const TimedPoint& a, const TimedPoint& b) { return a.t != b.t ? a.t < b.t : a.p < b.p; }

// Sorts one identity's points by (instant, point). They come in input order,
// so each series is one run when its answer lists it in time order (as
// Prometheus does; scrapes in time order are one run too): runs are merged
// pairwise (a natural merge sort), and a sorted identity costs one scan.
// Any order is sorted right, only slower.
void SortByInstant(std::span<TimedPoint> points, std::vector<TimedPoint>& buffer) {
  std::vector<size_t> bounds = {0};
  for (size_t i = 1; i < points.size(); ++i) {
    if (Before(points[i], points[i - 1])) bounds.push_back(i);
  }
  if (bounds.size() == 1) return;
  bounds.push_back(points.size());
  buffer.resize(points.size());
  std::span<TimedPoint> from = points, to(buffer);
  while (bounds.size() > 2) {
    std::vector<size_t> merged = {0};
    for (size_t r = 0; r + 1 < bounds.size(); r += 2) {
      const size_t a = bounds[r], m = bounds[r + 1], b = r + 2 < bounds.size() ? bounds[r + 2] : m;
      std::merge(from.data() + a, from.data() + m, from.data() + m, from.data() + b, to.data() + a, Before);
      merged.push_back(b);
    }
    std::swap(from, to);
    bounds = std::move(merged);
  }
  if (from.data() != points.data()) std::copy(from.begin(), from.end(), points.begin());
}

// Observations (one identity at one instant, its fields joined) as columns.
// Identity i's are [begin[i], begin[i + 1]), in time order. A field column
// exists only when the input has that field (NaN where not reported).
struct Observations {
  std::vector<int64_t> begin;
  std::vector<int64_t> timestamp;
  std::vector<uint32_t> first_point;  // the instant's first point, for error messages
  std::vector<uint8_t> present;       // bit per DcgmField
  std::array<std::vector<double>, kDcgmFieldCount> field;

  [[nodiscard]] double Field(size_t o, DcgmField f) const {
    const std::vector<double>& column = field[static_cast<int>(f)];
    return column.empty() ? std::numeric_limits<double>::quiet_NaN() : column[o];
  }
};

// What joining points found besides observations: the first point's error
// (the one the input order meets first, whatever order the join ran in),
// and duplicate series (two replicas of one GPU series).
struct JoinFindings {
  std::optional<std::pair<size_t, absl::Status>> error;
  int64_t duplicate_points = 0;
  absl::flat_hash_set<int32_t> duplicate_series;
  // (first series, duplicate) -> the point that found the pair.
  absl::flat_hash_map<std::pair<int32_t, int32_t>, size_t> duplicate_pairs;

  [[nodiscard]] bool Earlier(size_t p) const { return !error.has_value() || p < error->first; }
  void Fail(size_t p, absl::Status status) {
    if (Earlier(p)) error.emplace(p, std::move(status));
  }
};

// A point's value in gpucost's units (ratio, bytes, W, mJ), or false and
// `error` when it is not one.
bool ScaledValue(const PromSamples& s, size_t p, const DcgmMetric& metric, double* out, absl::Status* error) {
  double v = s.value[p];
  const DcgmField f = metric.field;
  if (IsRatioField(f)) {
    const double top = metric.scale == 1.0 ? 1.0 : 100.0;
    if (std::isnan(v)) {
      if (f == DcgmField::kGpuUtil || f == DcgmField::kGrEngineActive) {
        *error = PointError(s, p, "NaN utilisation");
        return false;
      }
    } else if (v < 0 || v > top * (1 + 1e-9)) {
      *error = PointError(s, p, absl::StrCat(v, " is outside [0, ", top, "]",
                                             top == 1.0 ? " (a ratio field; was a percentage recorded under it?)"
                                                        : " (a percentage field)"));
      return false;
    }
    v = std::min(v * metric.scale, 1.0);
  } else if (IsMemoryField(f)) {
    if (std::isnan(v) || v < 0 || std::isinf(v)) {
      if (f == DcgmField::kFbUsed || !std::isnan(v)) {
        *error = PointError(s, p, absl::StrCat(v, " is not a memory size (>= 0)"));
        return false;
      }
    }
    v *= metric.scale;
  } else if (f == DcgmField::kTotalEnergy) {
    if (v < 0 || std::isinf(v)) {
      *error = PointError(s, p, absl::StrCat(v, " is not an energy counter (mJ >= 0)"));
      return false;
    }
  }
  *out = v;
  return true;
}

// Joins one identity's points, sorted by (instant, point), into its
// observations from `o` on: per instant, its points in input order, the
// first value of a field kept. A second value is a duplicate when it comes
// from another series of the same name (two Prometheus replicas, two scrape
// jobs), else an error naming both points.
void JoinIdentity(const PromSamples& s, std::span<const DcgmMetric* const> metric_of,
                  std::span<const TimedPoint> points, size_t o, Observations& obs, JoinFindings& found) {
  std::array<int32_t, kDcgmFieldCount> field_series{};
  for (size_t i = 0; i < points.size(); ++o) {
    const int64_t t = points[i].t;
    obs.timestamp[o] = t;
    obs.first_point[o] = points[i].p;
    uint8_t present = 0;
    for (; i < points.size() && points[i].t == t; ++i) {
      const size_t p = points[i].p;
      const int32_t sid = s.series_id[p];
      const DcgmMetric& metric = *metric_of[sid];
      double v = 0;
      if (absl::Status error; !ScaledValue(s, p, metric, &v, &error)) {
        found.Fail(p, std::move(error));
        continue;
      }
      const int f = static_cast<int>(metric.field);
      const auto bit = static_cast<uint8_t>(1u << f);
      if (present & bit) {
        const int32_t first = field_series[f];
        if (first != sid && s.series[first].name == s.series[sid].name) {
          ++found.duplicate_points;
          found.duplicate_series.insert(sid);
          auto [it, inserted] = found.duplicate_pairs.try_emplace({first, sid}, p);
          if (!inserted) it->second = std::min(it->second, p);
          continue;
        }
        if (found.Earlier(p)) {
          found.Fail(p, PointError(s, p, absl::StrCat("a second value for this GPU and instant (", A(metric.name),
                                                      "); the first came from ", PointPlace(s, obs.first_point[o]))));
        }
        continue;
      }
      present |= bit;
      obs.field[f][o] = v;
      field_series[f] = sid;
    }
    obs.present[o] = present;
  }
}

// Pods on each observation's device at its instant (time-slicing): per
// device, the instants of its holders' observations sorted once, then each
// identity's observations counted with a cursor.
std::vector<int32_t> PodsAt(const std::vector<Identity>& identities, const Observations& obs, size_t devices) {
  std::vector<int32_t> pods(obs.timestamp.size(), 0);
  std::vector<std::vector<int32_t>> on_device(devices);
  for (size_t i = 0; i < identities.size(); ++i) on_device[identities[i].device_key].push_back(static_cast<int32_t>(i));
  std::vector<int64_t> held;
  for (const std::vector<int32_t>& ids : on_device) {
    held.clear();
    int holders = 0;
    for (int32_t i : ids) {
      if (identities[i].consumer.empty()) continue;
      held.insert(held.end(), obs.timestamp.begin() + obs.begin[i], obs.timestamp.begin() + obs.begin[i + 1]);
      ++holders;
    }
    if (holders == 0) continue;
    if (holders > 1) std::sort(held.begin(), held.end());
    for (int32_t i : ids) {
      size_t c = 0;
      for (int64_t o = obs.begin[i]; o < obs.begin[i + 1]; ++o) {
        const int64_t t = obs.timestamp[o];
        while (c < held.size() && held[c] < t) ++c;
        size_t e = c;
        while (e < held.size() && held[e] == t) ++e;
        pods[o] = static_cast<int32_t>(e - c);
        c = e;
      }
    }
  }
  return pods;
}

// A string column whose value is its sample's identity's: codes in order of
// first appearance (as StringEncoder gives them), one lookup per identity,
// an identity's samples (contiguous) appended at once.
class IdentityStrings {
 public:
  explicit IdentityStrings(size_t samples) { out_.codes.reserve(samples); }
  void Add(std::string_view value, size_t samples) {
    auto [it, inserted] = index_.try_emplace(A(value), static_cast<int32_t>(out_.values.size()));
    if (inserted) out_.values.emplace_back(value);
    out_.codes.insert(out_.codes.end(), samples, it->second);
  }
  [[nodiscard]] EncodedStrings Finish() {
    out_.value_views.assign(out_.values.begin(), out_.values.end());
    return std::move(out_);
  }

 private:
  absl::flat_hash_map<std::string, int32_t> index_;
  EncodedStrings out_;
};

}  // namespace

std::string_view DcgmUnitsName(DcgmUnits units) {
  switch (units) {
    case DcgmUnits::kNone: return "none";
    case DcgmUnits::kLegacy: return "legacy";
    case DcgmUnits::kRatioBytes: return "ratio_bytes";
    case DcgmUnits::kMixed: return "mixed";
  }
  return "none";
}

std::span<const DcgmMetric> DcgmMetrics() { return kMetrics; }

std::vector<std::string_view> DcgmMetricNames() {
  std::vector<std::string_view> names;
  for (const DcgmMetric& m : kMetrics) names.push_back(m.name);
  return names;
}

absl::StatusOr<DcgmUsage> DcgmToUsage(const PromSamples& s, const DcgmOptions& options) {
  if (options.interval_seconds.has_value() &&
      (!(*options.interval_seconds > 0) || !(*options.interval_seconds <= 1e9))) {
    return ParameterError("interval", absl::StrCat(*options.interval_seconds, " is not a positive number of seconds"));
  }
  if (!(options.instant_tolerance_seconds >= 0) || !(options.instant_tolerance_seconds <= 1e6)) {
    return ParameterError("instant_tolerance", absl::StrCat(options.instant_tolerance_seconds,
                                                            " is not a non-negative number of seconds"));
  }
  if (options.nodes_node.size() != options.nodes_resource_id.size()) {
    return TableError("nodes", "columns 'node' and 'resource_id' differ in length");
  }
  DcgmUsage out;
  UsageSamples& u = out.samples;
  DcgmDiagnostics& diag = out.diagnostics;

  // Nodes table.
  absl::flat_hash_map<std::string, std::string> node_to_resource;
  for (size_t i = 0; i < options.nodes_node.size(); ++i) {
    const int32_t nc = options.nodes_node.codes[i], rc = options.nodes_resource_id.codes[i];
    if (nc < 0 || rc < 0) {
      return RowError("nodes", static_cast<long long>(i), nc < 0 ? "node" : "resource_id", "missing value");
    }
    std::string node(options.nodes_node.dictionary[nc]);
    std::string_view resource = options.nodes_resource_id.dictionary[rc];
    auto [it, inserted] = node_to_resource.try_emplace(node, resource);
    if (!inserted && it->second != resource) {
      return RowError("nodes", static_cast<long long>(i), "node",
                      absl::StrCat("node '", node, "' maps to both '", it->second, "' and '", A(resource), "'"));
    }
  }
  const bool have_nodes = !node_to_resource.empty();

  // 1. Series -> field metric and identity.
  bool legacy_seen = false, ratio_seen = false;
  // Which utilisation fields the input has at all: a counters file without
  // DCGM_FI_DEV_GPU_UTIL (DCP-only) reads whole GPUs from GR_ENGINE_ACTIVE;
  // one with neither is holder-only (util 0, counted).
  bool gpu_util_seen = false, gr_engine_seen = false;
  bool energy_seen = false;  // DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION
  std::array<bool, kDcgmFieldCount> field_seen{};
  std::vector<const DcgmMetric*> metric_of(s.series.size(), nullptr);
  std::vector<int32_t> identity_of(s.series.size(), -1);
  std::vector<Identity> identities;
  absl::flat_hash_map<std::string, int32_t> identity_index, device_index;
  absl::flat_hash_map<std::string, double> mig_share_cache;
  StringEncoder resources;
  absl::flat_hash_map<std::string, int32_t> resource_code;
  diag.series_total = static_cast<int64_t>(s.series.size());
  for (size_t si = 0; si < s.series.size(); ++si) {
    const PromSeries& series = s.series[si];
    const auto sid = static_cast<int32_t>(si);
    const DcgmMetric* metric = FindMetric(series.name);
    // An AMD name without AMD's gpu_id label is another exporter's metric
    // that happens to share the name (gpu_power_usage is a common one).
    const bool foreign = metric != nullptr && metric->name.substr(0, 5) != "DCGM_" && !series.Label("gpu_id");
    if (metric == nullptr || foreign) {
      ++diag.series_ignored;
      continue;
    }
    if (metric->units != DcgmUnits::kNone && options.require_units != DcgmUnits::kNone &&
        metric->units != options.require_units) {
      return SeriesError(s, sid,
                         absl::StrCat("metric ", A(metric->name), " belongs to the '", A(DcgmUnitsName(metric->units)),
                                      "' convention but '", A(DcgmUnitsName(options.require_units)),
                                      "' was required"));
    }
    legacy_seen |= metric->units == DcgmUnits::kLegacy;
    ratio_seen |= metric->units == DcgmUnits::kRatioBytes;
    gpu_util_seen |= metric->field == DcgmField::kGpuUtil;
    gr_engine_seen |= metric->field == DcgmField::kGrEngineActive;
    energy_seen |= metric->field == DcgmField::kTotalEnergy;
    field_seen[static_cast<int>(metric->field)] = true;
    metric_of[si] = metric;

    std::string_view node, exporter_pod_label, exporter_pod;
    for (const std::string& key : options.node_labels) {
      if (auto v = series.Label(key); v.has_value() && !v->empty()) {
        // dcgm-exporter in Kubernetes prints its own pod as Hostname: not a
        // node, unless the nodes table maps that name.
        if (IsExporterPod(*v, series, options.exporter_names) && !node_to_resource.contains(A(*v))) {
          if (exporter_pod.empty()) {
            exporter_pod_label = key;
            exporter_pod = *v;
          }
          continue;
        }
        node = *v;
        break;
      }
    }
    if (node.empty() && !exporter_pod.empty()) {
      return SeriesError(s, sid, absl::StrCat("label '", A(exporter_pod_label), "' is the exporter's pod '",
                                              A(exporter_pod), "', not a node, and no other node label is set: ",
                                              "add a 'node' label (relabel from __meta_kubernetes_pod_node_name) "
                                              "or map '", A(exporter_pod), "' in the nodes table"));
    }
    if (!exporter_pod.empty()) ++diag.node_labels_exporter_pod;
    if (node.empty()) {
      std::string tried;
      for (const std::string& key : options.node_labels) absl::StrAppend(&tried, tried.empty() ? "" : ", ", key);
      return SeriesError(s, sid, absl::StrCat("no node label (tried ", tried, ")"));
    }
    auto gpu_label = series.Label("gpu");
    if (!gpu_label.has_value()) gpu_label = series.Label("gpu_id");  // AMD
    if (!gpu_label.has_value()) return SeriesError(s, sid, "no 'gpu' label (nor AMD's 'gpu_id')");
    int32_t gpu = -1;
    {
      auto [ptr, ec] = std::from_chars(gpu_label->data(), gpu_label->data() + gpu_label->size(), gpu);
      if (ec != std::errc() || ptr != gpu_label->data() + gpu_label->size() || gpu < 0) {
        return SeriesError(s, sid, absl::StrCat("label 'gpu': '", A(*gpu_label), "' is not a GPU index"));
      }
    }
    std::string_view instance = series.Label("GPU_I_ID").value_or("");
    std::string_view profile = series.Label("GPU_I_PROFILE").value_or("");
    // AMD compute partitions are MIG-like instances: the partition id is the
    // instance, the mode (upper case, "CPX") the profile, 1/k the share.
    const std::string_view amd_model = FirstLabel(series, {"card_series", "card_model"}).value_or("");
    const std::string_view amd_mode = series.Label("gpu_compute_partition_type").value_or("");
    const int amd_parts = AmdPartitions(amd_mode, amd_model);
    if (amd_parts < 0) {
      return SeriesError(s, sid, absl::StrCat("label 'gpu_compute_partition_type': '", A(amd_mode),
                                              "' is not an AMD compute partition mode (SPX, DPX, TPX, QPX, CPX)"));
    }
    std::string amd_profile;
    if (amd_parts > 0) {
      instance = series.Label("gpu_partition_id").value_or("");
      for (char c : amd_mode) amd_profile += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      profile = amd_profile;
    }
    std::string_view ns = LabelPreferExported(series, "namespace").value_or("");
    std::string_view pod = LabelPreferExported(series, "pod").value_or("");
    std::string_view container = LabelPreferExported(series, "container").value_or("");
    if (!pod.empty() && IsExporterPod(pod, series, options.exporter_names)) {
      // The scrape target's own labels on a GPU no workload holds.
      ns = pod = container = {};
      ++diag.exporter_series_freed;
    }
    if (pod.empty() != ns.empty() && !pod.empty()) {
      return SeriesError(s, sid, absl::StrCat("pod '", A(pod), "' has no namespace"));
    }
    std::string_view job;  // bare metal: the scheduler's job on this GPU (hpc_job)
    if (pod.empty()) {
      for (const std::string& label : options.job_labels) {
        job = series.Label(label).value_or("");
        if (!job.empty()) break;
      }
    }
    std::string key = absl::StrCat(A(node), "\x1f", gpu, "\x1f", A(instance), "\x1f", A(ns), "\x1f", A(pod), "\x1f",
                                   A(container), "\x1f", A(job));
    auto [it, inserted] = identity_index.try_emplace(std::move(key), static_cast<int32_t>(identities.size()));
    if (inserted) {
      Identity id;
      id.node = std::string(node);
      id.gpu = gpu;
      id.mig = !instance.empty() || !profile.empty();
      id.mig_instance = std::string(instance);
      id.profile = std::string(profile);
      id.model = std::string(FirstLabel(series, {"modelName", "card_series", "card_model"}).value_or(""));
      id.uuid = std::string(FirstLabel(series, {"UUID", "gpu_uuid", "serial_number"}).value_or(""));
      id.amd_partitions = amd_parts;
      id.amd = !series.Label("gpu").has_value();  // AMD's exporter and amd-smi name the GPU gpu_id
      id.serial = std::string(series.Label("serial_number").value_or(""));
      id.consumer = !pod.empty() ? absl::StrCat(A(ns), "/", A(pod)) : std::string(job);
      id.first_series = sid;
      if (amd_parts > 0 && (instance.empty() || id.serial.empty())) {
        return SeriesError(s, sid, "an AMD partition needs the 'gpu_partition_id' and 'serial_number' labels "
                                   "(the serial number groups the partitions of one GPU)");
      }
      if (id.mig && (instance.empty() || profile.empty())) {
        return SeriesError(s, sid, "a MIG instance needs both GPU_I_ID and GPU_I_PROFILE labels");
      }
      const std::string device_key = absl::StrCat(A(node), "\x1f", gpu, "\x1f", A(instance));
      id.device_key = device_index.try_emplace(device_key, static_cast<int32_t>(device_index.size())).first->second;
      // Resource id.
      std::string resource;
      if (have_nodes) {
        auto r = node_to_resource.find(id.node);
        if (r != node_to_resource.end()) {
          resource = r->second;
        } else if (options.keep_unknown_nodes) {
          resource = id.node;
        } else {
          return SeriesError(s, sid, absl::StrCat("node '", id.node,
                                                  "' is not in the nodes table (pass keep_unknown_nodes to use "
                                                  "the node name as the resource id)"));
        }
      } else {
        resource = id.node;
      }
      auto [rit, rnew] = resource_code.try_emplace(resource, static_cast<int32_t>(resource_code.size()));
      id.resource = rit->second;
      // MIG share (an AMD partition's is 1/k of its GPU).
      if (amd_parts > 0) {
        id.base_share = 1.0 / amd_parts;
      } else if (id.mig) {
        const std::string share_key = absl::StrCat(id.model, "\x1f", id.profile);
        auto cached = mig_share_cache.find(share_key);
        if (cached != mig_share_cache.end()) {
          id.base_share = cached->second;
        } else {
          absl::StatusOr<double> share = ResolveMigShare(options, id.model, id.profile);
          if (!share.ok()) {
            return SeriesError(s, sid, absl::StrCat("MIG profile '", id.profile, "' on '", id.model,
                                                    "': ", share.status().message()));
          }
          if (!(*share > 0 && *share <= 1)) {
            return SeriesError(s, sid, absl::StrCat("MIG profile '", id.profile, "' on '", id.model,
                                                    "': share ", *share, " is outside (0, 1]"));
          }
          mig_share_cache.emplace(share_key, *share);
          id.base_share = *share;
        }
      }
      identities.push_back(std::move(id));
    }
    identity_of[si] = it->second;
  }
  NumberAmdPhysicalGpus(identities);
  diag.units = legacy_seen ? (ratio_seen ? DcgmUnits::kMixed : DcgmUnits::kLegacy)
                           : (ratio_seen ? DcgmUnits::kRatioBytes : DcgmUnits::kNone);

  // Instant answers saved seconds apart: each instant read as the first of
  // its group (instants within the tolerance of that first one).
  absl::flat_hash_map<int64_t, int64_t> joined_instant;
  {
    std::vector<int64_t> instants;
    for (size_t p = 0; p < s.size(); ++p) {
      const int32_t source = s.series[s.series_id[p]].source;
      if (static_cast<size_t>(source) < s.source_is_instant.size() && s.source_is_instant[source] != 0) {
        instants.push_back(s.timestamp_ns[p]);
      }
    }
    std::sort(instants.begin(), instants.end());
    instants.erase(std::unique(instants.begin(), instants.end()), instants.end());
    const auto tolerance = static_cast<int64_t>(std::llround(options.instant_tolerance_seconds * 1e9));
    for (size_t i = 0; i < instants.size();) {
      size_t j = i + 1;
      while (j < instants.size() && instants[j] - instants[i] <= tolerance) {
        joined_instant.emplace(instants[j], instants[i]);
        ++j;
      }
      i = j;
    }
  }
  // 2. Points -> observations. Each identity's points gathered in input
  // order (a counting sort), sorted by instant (one scan when each series
  // is in time order), then joined instant by instant: no hashing per point.
  diag.points_total = static_cast<int64_t>(s.size());
  if (s.size() > std::numeric_limits<uint32_t>::max()) {  // points are indexed in 32 bits
    return TableError(s.sources.empty() ? "series" : s.sources[0],
                      absl::StrCat(s.size(), " points in one call, more than 4,294,967,295: map them in chunks "
                                   "of time (gpucost.prometheus.iter_query_range reads a day at a time)"));
  }
  const auto instant_of = [&](size_t p) {
    const int64_t t = s.timestamp_ns[p];
    if (joined_instant.empty()) return t;
    auto j = joined_instant.find(t);
    return j != joined_instant.end() ? j->second : t;
  };
  std::vector<int64_t> identity_begin(identities.size() + 1, 0);
  for (size_t p = 0; p < s.size(); ++p) {
    const int32_t sid = s.series_id[p];
    if (metric_of[sid] == nullptr) continue;
    const int64_t t = instant_of(p);
    if (t != s.timestamp_ns[p]) ++diag.instants_joined;
    if (t < options.start_ns || t >= options.end_ns) {
      ++diag.points_outside;
      continue;
    }
    ++identity_begin[identity_of[sid] + 1];
  }
  std::partial_sum(identity_begin.begin(), identity_begin.end(), identity_begin.begin());
  std::vector<TimedPoint> points(static_cast<size_t>(identity_begin.back()));
  {
    std::vector<int64_t> next(identity_begin.begin(), identity_begin.end() - 1);
    for (size_t p = 0; p < s.size(); ++p) {
      const int32_t sid = s.series_id[p];
      if (metric_of[sid] == nullptr) continue;
      const int64_t t = instant_of(p);
      if (t < options.start_ns || t >= options.end_ns) continue;
      points[next[identity_of[sid]]++] = {t, static_cast<uint32_t>(p)};
    }
  }
  const auto points_of = [&](size_t i) {
    return std::span<TimedPoint>(points).subspan(identity_begin[i], identity_begin[i + 1] - identity_begin[i]);
  };
  Observations obs;
  obs.begin.assign(identities.size() + 1, 0);
  {
    std::vector<TimedPoint> buffer;
    for (size_t i = 0; i < identities.size(); ++i) {
      std::span<TimedPoint> mine = points_of(i);
      SortByInstant(mine, buffer);
      int64_t instants = 0;
      for (size_t k = 0; k < mine.size(); ++k) instants += k == 0 || mine[k].t != mine[k - 1].t;
      obs.begin[i + 1] = obs.begin[i] + instants;
    }
  }
  const auto n_obs = static_cast<size_t>(obs.begin.back());
  obs.timestamp.resize(n_obs);
  obs.first_point.resize(n_obs);
  obs.present.resize(n_obs);
  for (size_t f = 0; f < kDcgmFieldCount; ++f) {
    if (field_seen[f]) obs.field[f].assign(n_obs, std::numeric_limits<double>::quiet_NaN());
  }
  JoinFindings found;
  for (size_t i = 0; i < identities.size(); ++i) {
    JoinIdentity(s, metric_of, points_of(i), static_cast<size_t>(obs.begin[i]), obs, found);
  }
  if (found.error.has_value()) return std::move(found.error->second);
  diag.duplicate_points = found.duplicate_points;
  {
    // The labels duplicates differ in, from the first 64 pairs as the input order finds them.
    std::vector<std::pair<size_t, std::pair<int32_t, int32_t>>> pairs;
    for (const auto& [pair, p] : found.duplicate_pairs) pairs.push_back({p, pair});
    std::sort(pairs.begin(), pairs.end());
    if (pairs.size() > 64) pairs.resize(64);
    for (const auto& [p, pair] : pairs) DifferingLabels(s.series[pair.first], s.series[pair.second], &diag.duplicate_labels);
  }
  points = {};

  // 3. Time-slicing: pods per (GPU or MIG instance, instant).
  const std::vector<int32_t> pods = PodsAt(identities, obs, device_index.size());

  // Resource dictionary in code order.
  std::vector<std::string> resource_values(resource_code.size());
  for (const auto& [value, code] : resource_code) resource_values[code] = value;
  IdentityStrings consumers(n_obs), nodes(n_obs), uuids(n_obs), models(n_obs), profiles(n_obs);
  std::vector<int32_t> emitted_identity;
  emitted_identity.reserve(n_obs);
  std::vector<double> energy_mj;  // the counter at each emitted sample, when the input has one
  for (std::vector<double>* column : {&u.share, &u.util, &u.mem_used, &out.tensor_active, &out.mem_copy_util,
                                      &out.power_w, &out.mem_free}) {
    column->reserve(n_obs);
  }
  out.util_measured.reserve(n_obs);
  u.timestamp.reserve(n_obs);
  u.device.reserve(n_obs);
  u.resource_id.codes.reserve(n_obs);
  // One holder (or the free part) on several MIG instances or AMD
  // partitions of one GPU is one sample per instant: shares and memory add,
  // utilisation is share-weighted. Identical rows would otherwise be read by
  // the engine as one sample read twice. Groups are found per identity; only
  // samples of a group of two or more are looked up.
  std::vector<int32_t> merge_group(identities.size(), -1);
  {
    absl::flat_hash_map<std::string, int32_t> first;
    std::vector<int32_t> members(identities.size(), 0);
    for (size_t i = 0; i < identities.size(); ++i) {
      const Identity& id = identities[i];
      if (!id.mig) continue;
      const std::string key = absl::StrCat(id.resource, "\x1f", id.gpu, "\x1f", id.consumer);
      merge_group[i] = first.try_emplace(key, static_cast<int32_t>(i)).first->second;
      ++members[merge_group[i]];
    }
    for (int32_t& g : merge_group) {
      if (g >= 0 && members[g] < 2) g = -1;
    }
  }
  absl::flat_hash_map<std::pair<int32_t, int64_t>, size_t> merged_at;
  for (size_t i = 0; i < identities.size(); ++i) {
    const auto identity = static_cast<int32_t>(i);
    const Identity& id = identities[i];
    // A field the input has is required at every instant (a missing one is
    // a misaligned answer); a field the input never has is not.
    // A MIG instance's utilisation is GR_ENGINE_ACTIVE; an AMD partition's
    // is its own gpu_gfx_activity.
    const bool nvidia_mig = id.mig && id.amd_partitions == 0;
    const bool whole_from_gr = !nvidia_mig && !gpu_util_seen && gr_engine_seen;
    const DcgmField util_field = nvidia_mig || whole_from_gr ? DcgmField::kGrEngineActive : DcgmField::kGpuUtil;
    const bool util_expected = util_field == DcgmField::kGpuUtil ? gpu_util_seen : gr_engine_seen;
    const size_t emitted_before = u.timestamp.size();
    for (auto o = static_cast<size_t>(obs.begin[i]); o < static_cast<size_t>(obs.begin[i + 1]); ++o) {
      const int64_t timestamp = obs.timestamp[o];
      const int32_t pods_here = pods[o];
      if (id.consumer.empty() && pods_here > 0) {
        ++diag.free_readings_shadowed;
        continue;
      }
      const auto has = [&](DcgmField f) { return (obs.present[o] >> static_cast<int>(f)) & 1u; };
      if (util_expected && !has(util_field)) {
        std::string what = absl::StrCat(
            "no ",
            nvidia_mig ? "DCGM_FI_PROF_GR_ENGINE_ACTIVE (the utilisation of a MIG instance)"
                   : (whole_from_gr ? "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
                                    : (id.amd ? "gpu_gfx_activity" : "DCGM_FI_DEV_GPU_UTIL")),
            " for this GPU at this instant while other fields were reported");
        return PointError(s, obs.first_point[o], what);
      }
      // No memory field: 0 bytes, counted; the allocated and used bases do
      // not read memory, blended refuses such samples (see the diagnostics).
      const bool has_memory = has(DcgmField::kFbUsed);
      const int32_t k = id.consumer.empty() ? 1 : std::max(pods_here, 1);
      const double share = id.base_share / k;
      const double util = util_expected ? obs.Field(o, util_field) : 0.0;
      const double mem = has_memory ? obs.Field(o, DcgmField::kFbUsed) : 0.0;
      if (merge_group[i] >= 0) {
        auto [at, first] = merged_at.try_emplace({merge_group[i], timestamp}, u.timestamp.size());
        if (!first) {
          const size_t j = at->second;
          const double total = u.share[j] + share;
          const auto weigh = [&](double a, double b) { return (a * u.share[j] + b * share) / total; };
          u.util[j] = weigh(u.util[j], util);
          out.tensor_active[j] = weigh(out.tensor_active[j], obs.Field(o, DcgmField::kTensorActive));
          out.mem_copy_util[j] = weigh(out.mem_copy_util[j], obs.Field(o, DcgmField::kMemCopyUtil));
          out.mem_free[j] += obs.Field(o, DcgmField::kFbFree);
          u.mem_used[j] += mem;
          u.share[j] = total;
          ++diag.samples_merged;
          continue;
        }
      }
      if (!has_memory) ++diag.samples_without_memory;
      if (!util_expected) ++diag.samples_without_util;
      if (whole_from_gr) ++diag.samples_util_from_gr_engine;
      u.timestamp.push_back(timestamp);
      u.share.push_back(share);
      u.util.push_back(util);
      u.mem_used.push_back(mem);
      out.tensor_active.push_back(obs.Field(o, DcgmField::kTensorActive));
      out.mem_copy_util.push_back(obs.Field(o, DcgmField::kMemCopyUtil));
      out.power_w.push_back(obs.Field(o, DcgmField::kPowerUsage));
      if (energy_seen) energy_mj.push_back(obs.Field(o, DcgmField::kTotalEnergy));
      out.mem_free.push_back(obs.Field(o, DcgmField::kFbFree));
      out.util_measured.push_back(util_expected ? 1 : 0);
      if (id.mig) ++diag.samples_mig;
      if (k > 1) ++diag.samples_time_sliced;
    }
    // The identity's own columns, for its samples at once.
    if (const size_t n = u.timestamp.size() - emitted_before; n > 0) {
      u.device.insert(u.device.end(), n, id.gpu);
      u.resource_id.codes.insert(u.resource_id.codes.end(), n, id.resource);
      emitted_identity.insert(emitted_identity.end(), n, identity);
      consumers.Add(id.consumer, n);
      nodes.Add(id.node, n);
      uuids.Add(id.uuid, n);
      models.Add(id.model, n);
      profiles.Add(id.profile, n);
    }
  }
  if (energy_seen) PowerFromEnergyCounter(identities, emitted_identity, u.timestamp, energy_mj, out.power_w, diag);
  u.resource_id.values = std::move(resource_values);
  u.resource_id.value_views.assign(u.resource_id.values.begin(), u.resource_id.values.end());
  u.consumer = consumers.Finish();
  out.node = nodes.Finish();
  out.gpu_uuid = uuids.Finish();
  out.gpu_model = models.Finish();
  out.mig_profile = profiles.Finish();
  diag.samples = static_cast<int64_t>(out.size());

  // Durations from each series' own spacing; a stated interval is checked.
  std::optional<int64_t> given_ns;
  if (options.interval_seconds) given_ns = std::llround(*options.interval_seconds * 1e9);
  GPUCOST_ASSIGN_OR_RETURN(
      SeriesSpacing spacing,
      DurationsFromSeries(emitted_identity, u.timestamp, given_ns, 60'000'000'000, options.interval_name,
                          [&](int32_t identity) {
                            const PromSeries& series = s.series[identities[identity].first_series];
                            return absl::StrCat(s.sources[series.source], ": series ", series.ToString());
                          },
                          &u.duration));
  diag.series = spacing.series;
  diag.spacing_ns = spacing.spacing_ns;
  diag.gaps = spacing.gaps;
  diag.duplicate_series = static_cast<int64_t>(found.duplicate_series.size());
  diag.skipped_fields = s.skipped;
  for (const PromSeries& series : s.series) {
    if (FindMetric(series.name) == nullptr) {
      auto it = std::find_if(diag.skipped_fields.begin(), diag.skipped_fields.end(),
                             [&](const auto& e) { return e.first == series.name; });
      if (it == diag.skipped_fields.end()) diag.skipped_fields.emplace_back(series.name, 1);
      else ++it->second;
    }
  }
  return out;
}

}  // namespace gpucost
