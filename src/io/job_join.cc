// Scheduler jobs joined to their GPUs' telemetry (io/job_join.h). Per GPU,
// the job samples' intervals become disjoint segments, each with the jobs
// holding it; each telemetry sample walks the segments it overlaps (binary
// search, then forward). Each job sample is cut by the merged telemetry
// coverage of its GPU, or of its node when a label placed the job there.
// O(n log n) in the samples of both tables.
#include "gpucost/io/job_join.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "gpucost/status.h"

namespace gpucost {
namespace {

using Interval = std::pair<int64_t, int64_t>;  // [start, end) ns

// One input table in ns, its ids in the join's shared dictionaries.
struct Rows {
  std::vector<int64_t> start, end;
  std::vector<int32_t> resource;  // shared resource id
  std::vector<int32_t> gpu;       // shared GPU id
  std::vector<int32_t> consumer;  // the table's consumer code, as given
};

struct Shared {
  absl::flat_hash_map<std::string_view, int32_t> resource_index;
  std::vector<std::string_view> resources;
  absl::flat_hash_map<uint64_t, int32_t> gpu_index;
  std::vector<int32_t> gpu_resource, gpu_device;
};

uint64_t PairKey(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

absl::Status Convert(const SampleColumns& s, std::string_view table, int64_t fallback_ns, int64_t shift_ns,
                     Shared* shared, Rows* out) {
  const size_t n = s.timestamp.size();
  if (s.resource_id.codes.size() != n || s.device.size() != n || s.consumer.codes.size() != n ||
      s.share.size() != n || s.util.size() != n || s.mem_used.size() != n ||
      (s.duration.has_value() && s.duration->size() != n)) {
    return TableError(table, "columns of different lengths");
  }
  std::vector<int32_t> resource_of(s.resource_id.dictionary.size());
  for (size_t c = 0; c < resource_of.size(); ++c) {
    const std::string_view name = s.resource_id.dictionary[c];
    auto [it, inserted] = shared->resource_index.try_emplace(name, static_cast<int32_t>(shared->resources.size()));
    if (inserted) shared->resources.push_back(name);
    resource_of[c] = it->second;
  }
  const auto unit = static_cast<int64_t>(s.time_unit);
  out->start.resize(n);
  out->end.resize(n);
  out->resource.resize(n);
  out->gpu.resize(n);
  out->consumer.assign(s.consumer.codes.begin(), s.consumer.codes.end());
  for (size_t i = 0; i < n; ++i) {
    const auto row = static_cast<long long>(i);
    if (!InstantInRange(s.timestamp[i], s.time_unit)) {
      return RowError(table, row, "timestamp", "outside 1970-01-01..2200-01-01");
    }
    int64_t length = fallback_ns;
    if (s.duration.has_value()) {
      if (!DurationInRange((*s.duration)[i], s.time_unit)) {
        return RowError(table, row, "duration", "must be positive (and at most ten years)");
      }
      length = (*s.duration)[i] * unit;
    }
    const int32_t code = s.resource_id.codes[i];
    if (code < 0 || static_cast<size_t>(code) >= resource_of.size()) {
      return RowError(table, row, "resource_id", "missing");
    }
    const int32_t c = s.consumer.codes[i];
    if (c != kNullCode && (c < 0 || static_cast<size_t>(c) >= s.consumer.dictionary.size())) {
      return RowError(table, row, "consumer", "code outside the dictionary");
    }
    out->start[i] = s.timestamp[i] * unit + shift_ns;
    out->end[i] = out->start[i] + length;
    out->resource[i] = resource_of[code];
    auto [it, inserted] = shared->gpu_index.try_emplace(PairKey(out->resource[i], s.device[i]),
                                                        static_cast<int32_t>(shared->gpu_resource.size()));
    if (inserted) {
      shared->gpu_resource.push_back(out->resource[i]);
      shared->gpu_device.push_back(s.device[i]);
    }
    out->gpu[i] = it->second;
  }
  return absl::OkStatus();
}

// Sorts and merges overlapping or touching intervals.
void Merge(std::vector<Interval>* spans) {
  std::sort(spans->begin(), spans->end());
  size_t kept = 0;
  for (const Interval& s : *spans) {
    if (kept > 0 && s.first <= (*spans)[kept - 1].second) {
      (*spans)[kept - 1].second = std::max((*spans)[kept - 1].second, s.second);
    } else {
      (*spans)[kept++] = s;
    }
  }
  spans->resize(kept);
}

// Calls piece(start, end) for each part of [start, end) outside `cover`
// (sorted, merged).
template <typename Piece>
void Uncovered(const std::vector<Interval>& cover, int64_t start, int64_t end, Piece piece) {
  auto it = std::partition_point(cover.begin(), cover.end(), [&](const Interval& c) { return c.second <= start; });
  int64_t cursor = start;
  for (; it != cover.end() && it->first < end; ++it) {
    if (it->first > cursor) piece(cursor, it->first);
    cursor = std::max(cursor, it->second);
  }
  if (cursor < end) piece(cursor, end);
}

struct Segment {
  int64_t start, end;
  int32_t first, count;  // holders: job rows holder_rows[first, first + count)
};

}  // namespace

absl::StatusOr<JobJoin> JoinJobsToTelemetry(const SampleColumns& telemetry, const SampleColumns& jobs,
                                            const JobJoinOptions& options) {
  if (options.interval_ns <= 0) return ParameterError("interval", "must be positive");
  if (options.tolerance_ns < 0) return ParameterError("tolerance", "must not be negative");
  if (options.job_shift_ns < -kNanosPerDay || options.job_shift_ns > kNanosPerDay) {
    return ParameterError("job_shift", "must be within a day");
  }
  Shared shared;
  Rows tel, job;
  GPUCOST_RETURN_IF_ERROR(Convert(telemetry, "telemetry", options.interval_ns, 0, &shared, &tel));
  GPUCOST_RETURN_IF_ERROR(Convert(jobs, "jobs", options.interval_ns, options.job_shift_ns, &shared, &job));
  const size_t n_tel = tel.start.size(), n_job = job.start.size();
  const size_t n_gpus = shared.gpu_resource.size(), n_resources = shared.resources.size();

  // Output consumers: the telemetry's dictionary, then the jobs' (their orders kept, so a join that cuts
  // nothing gives the two tables' rows and dictionaries as concatenated), then "" when neither has it.
  std::vector<std::string_view> names;
  absl::flat_hash_map<std::string_view, int32_t> name_index;
  auto name_code = [&](std::string_view name) {
    auto [it, inserted] = name_index.try_emplace(name, static_cast<int32_t>(names.size()));
    if (inserted) names.push_back(name);
    return it->second;
  };
  // Telemetry consumers: a label names a job (maybe one without job samples); "" and processes name none.
  std::vector<int32_t> tel_code(telemetry.consumer.dictionary.size(), 0);
  std::vector<uint8_t> tel_label(telemetry.consumer.dictionary.size(), 0);
  for (size_t c = 0; c < tel_code.size(); ++c) {
    const std::string_view name = telemetry.consumer.dictionary[c];
    tel_code[c] = name_code(name);
    bool process = name.empty();
    for (const std::string& prefix : options.process_prefixes) {
      if (!prefix.empty() && name.substr(0, prefix.size()) == prefix) process = true;
    }
    tel_label[c] = process ? 0 : 1;
  }
  std::vector<int32_t> job_code(jobs.consumer.dictionary.size(), 0);  // table code -> output code
  for (size_t c = 0; c < job_code.size(); ++c) job_code[c] = name_code(jobs.consumer.dictionary[c]);
  const int32_t free = name_code("");
  auto tel_consumer = [&](size_t i) { return tel.consumer[i] == kNullCode ? free : tel_code[tel.consumer[i]]; };
  // A consumer names a job only on a node the job samples know (elsewhere it is a pod or another workload).
  std::vector<uint8_t> job_node(n_resources, 0);
  for (size_t k = 0; k < n_job; ++k) job_node[job.resource[k]] = 1;
  auto is_label = [&](size_t i) {
    return tel.consumer[i] != kNullCode && tel_label[tel.consumer[i]] != 0 && job_node[tel.resource[i]] != 0;
  };
  auto job_consumer = [&](size_t k) { return job.consumer[k] == kNullCode ? free : job_code[job.consumer[k]]; };
  std::vector<uint8_t> has_jobs(names.size(), 0);  // the name is the consumer of some job sample
  for (size_t k = 0; k < n_job; ++k) has_jobs[job_consumer(k)] = 1;
  has_jobs[free] = 0;

  // Which jobs a label places on which node; telemetry coverage per GPU and per node.
  absl::flat_hash_set<uint64_t> placed;
  std::vector<std::vector<Interval>> gpu_cover(n_gpus), node_cover(n_resources);
  for (size_t i = 0; i < n_tel; ++i) {
    gpu_cover[tel.gpu[i]].emplace_back(tel.start[i], tel.end[i]);
    node_cover[tel.resource[i]].emplace_back(tel.start[i], tel.end[i]);
    if (is_label(i)) placed.insert(PairKey(tel.resource[i], tel_consumer(i)));
  }
  for (auto& c : gpu_cover) Merge(&c);
  for (auto& c : node_cover) Merge(&c);

  // Per GPU, the segments of the job samples a label does not place on the node.
  std::vector<std::vector<size_t>> gpu_jobs(n_gpus);
  // Per (node, job): the job's samples there (for the labels' check).
  absl::flat_hash_map<uint64_t, std::vector<size_t>> job_rows;
  for (size_t k = 0; k < n_job; ++k) {
    const int32_t code = job_consumer(k);
    if (code == free) continue;
    job_rows[PairKey(job.resource[k], code)].push_back(k);
    if (!placed.contains(PairKey(job.resource[k], code))) gpu_jobs[job.gpu[k]].push_back(k);
  }
  std::vector<std::vector<Segment>> segments(n_gpus);
  std::vector<size_t> holder_rows;
  for (size_t g = 0; g < n_gpus; ++g) {
    std::vector<size_t>& rows = gpu_jobs[g];
    if (rows.empty()) continue;
    std::sort(rows.begin(), rows.end(), [&](size_t a, size_t b) { return job.start[a] < job.start[b]; });
    std::vector<int64_t> bounds;
    for (size_t k : rows) {
      bounds.push_back(job.start[k]);
      bounds.push_back(job.end[k]);
    }
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    std::vector<size_t> active;
    size_t next = 0;
    for (size_t b = 0; b + 1 < bounds.size(); ++b) {
      while (next < rows.size() && job.start[rows[next]] <= bounds[b]) active.push_back(rows[next++]);
      std::erase_if(active, [&](size_t k) { return job.end[k] <= bounds[b]; });
      if (active.empty()) continue;
      segments[g].push_back({bounds[b], bounds[b + 1], static_cast<int32_t>(holder_rows.size()),
                             static_cast<int32_t>(active.size())});
      holder_rows.insert(holder_rows.end(), active.begin(), active.end());
    }
  }

  JobJoin out;
  JobJoinDiagnostics& d = out.diagnostics;
  d.telemetry_samples = static_cast<int64_t>(n_tel);
  d.job_samples = static_cast<int64_t>(n_job);
  UsageSamples& u = out.samples;
  auto emit = [&](uint8_t origin, size_t row, int64_t start, int64_t end, int32_t resource, int32_t device,
                  int32_t consumer, double share, double util, double mem) {
    u.timestamp.push_back(start);
    u.duration.push_back(end - start);
    u.resource_id.codes.push_back(resource);
    u.device.push_back(device);
    u.consumer.codes.push_back(consumer);
    u.share.push_back(share);
    u.util.push_back(util);
    u.mem_used.push_back(mem);
    out.origin.push_back(origin);
    out.row.push_back(static_cast<int64_t>(row));
  };
  // Share-weighted GPU-seconds per output consumer (every name is known by now).
  std::vector<double> held(names.size(), 0.0), measured(names.size(), 0.0), assumed(names.size(), 0.0);
  absl::flat_hash_map<std::tuple<int32_t, int32_t, int32_t>, size_t> mismatch_index;
  std::vector<std::tuple<int32_t, int32_t, int32_t, int64_t, int64_t, double>> mismatch_rows;

  for (size_t i = 0; i < n_tel; ++i) {
    const int32_t g = tel.gpu[i], r = tel.resource[i], device = shared.gpu_device[g];
    const double share = telemetry.share[i], util = telemetry.util[i], mem = telemetry.mem_used[i];
    const int32_t consumer = tel_consumer(i);
    const int64_t t0 = tel.start[i], t1 = tel.end[i];
    if (is_label(i)) {
      emit(0, i, t0, t1, r, device, consumer, share, util, mem);
      ++d.samples_labelled;
      measured[consumer] += share * static_cast<double>(t1 - t0) / kNanosPerSecond;
      bool consistent = false;
      if (auto it = job_rows.find(PairKey(r, consumer)); it != job_rows.end()) {
        for (size_t k : it->second) {
          if (options.exact_devices && job.gpu[k] != g) continue;
          if (job.start[k] - options.tolerance_ns <= t0 && t0 < job.end[k] + options.tolerance_ns) {
            consistent = true;
            break;
          }
        }
      }
      if (!consistent) {
        auto [it, inserted] = mismatch_index.try_emplace(std::make_tuple(consumer, r, device), mismatch_rows.size());
        if (inserted) mismatch_rows.emplace_back(consumer, r, device, t0, t1, 0.0);
        auto& m = mismatch_rows[it->second];
        std::get<3>(m) = std::min(std::get<3>(m), t0);
        std::get<4>(m) = std::max(std::get<4>(m), t1);
        std::get<5>(m) += share * static_cast<double>(t1 - t0) / kNanosPerSecond;
      }
      continue;
    }
    const std::vector<Segment>& segs = segments[g];
    auto it = std::partition_point(segs.begin(), segs.end(), [&](const Segment& s) { return s.end <= t0; });
    if (it == segs.end() || it->start >= t1) {  // no job on the GPU meanwhile: as it was
      emit(0, i, t0, t1, r, device, consumer, share, util, mem);
      ++d.samples_free;
      continue;
    }
    int64_t cursor = t0;
    for (; it != segs.end() && it->start < t1; ++it) {
      if (it->start > cursor) {
        emit(0, i, cursor, it->start, r, device, consumer, share, util, mem);
        ++d.samples_free;
      }
      const int64_t from = std::max(cursor, it->start), to = std::min(t1, it->end);
      double shares = 0;
      for (int32_t h = 0; h < it->count; ++h) shares += jobs.share[holder_rows[it->first + h]];
      for (int32_t h = 0; h < it->count; ++h) {
        const size_t k = holder_rows[it->first + h];
        const int32_t holder = job_consumer(k);
        const double part = jobs.share[k];
        emit(0, i, from, to, r, device, holder, share * part, util, shares > 0 ? mem * part / shares : 0.0);
        measured[holder] += share * part * static_cast<double>(to - from) / kNanosPerSecond;
        ++d.samples_placed;
      }
      cursor = to;
    }
    if (cursor < t1) {
      emit(0, i, cursor, t1, r, device, consumer, share, util, mem);
      ++d.samples_free;
    }
  }

  for (size_t k = 0; k < n_job; ++k) {
    const int32_t g = job.gpu[k], r = job.resource[k], device = shared.gpu_device[g];
    const int32_t consumer = job_consumer(k);
    const double share = jobs.share[k], util = jobs.util[k], mem = jobs.mem_used[k];
    if (consumer == free) {
      int64_t kept = 0;
      Uncovered(gpu_cover[g], job.start[k], job.end[k], [&](int64_t from, int64_t to) {
        emit(1, k, from, to, r, device, free, share, util, mem);
        kept += to - from;
      });
      if (kept < job.end[k] - job.start[k]) ++d.free_job_samples_covered;
      continue;
    }
    held[consumer] += share * static_cast<double>(job.end[k] - job.start[k]) / kNanosPerSecond;
    const std::vector<Interval>& cover =
        placed.contains(PairKey(r, consumer)) ? node_cover[r] : gpu_cover[g];
    Uncovered(cover, job.start[k], job.end[k], [&](int64_t from, int64_t to) {
      emit(1, k, from, to, r, device, consumer, share, util, mem);
      assumed[consumer] += share * static_cast<double>(to - from) / kNanosPerSecond;
      ++d.samples_assumed;
    });
  }

  // Dictionaries: the shared resources, the output consumers.
  for (std::string_view name : shared.resources) u.resource_id.values.emplace_back(name);
  for (std::string_view name : names) u.consumer.values.emplace_back(name);
  u.resource_id.value_views.assign(u.resource_id.values.begin(), u.resource_id.values.end());
  u.consumer.value_views.assign(u.consumer.values.begin(), u.consumer.values.end());

  // Per job.
  absl::flat_hash_set<int32_t> labelled;
  for (uint64_t key : placed) labelled.insert(static_cast<int32_t>(key & 0xffffffffu));
  JobJoin::Jobs& j = out.jobs;
  StringEncoder job_names;
  for (size_t c = 0; c < names.size(); ++c) {
    const bool in_jobs = has_jobs[c] != 0;
    const bool is_labelled = labelled.contains(static_cast<int32_t>(c));
    if (!in_jobs && !is_labelled) continue;  // a process, not a job
    job_names.Add(names[c]);
    j.held_seconds.push_back(held[c]);
    j.measured_seconds.push_back(measured[c]);
    j.assumed_seconds.push_back(assumed[c]);
    j.labelled.push_back(is_labelled ? 1 : 0);
    j.in_jobs.push_back(in_jobs ? 1 : 0);
  }
  j.consumer = job_names.Finish();

  JobJoin::Mismatches& m = out.mismatches;
  StringEncoder m_consumer, m_resource;
  std::sort(mismatch_rows.begin(), mismatch_rows.end(), [&](const auto& a, const auto& b) {
    return std::make_tuple(names[std::get<0>(a)], shared.resources[std::get<1>(a)], std::get<2>(a)) <
           std::make_tuple(names[std::get<0>(b)], shared.resources[std::get<1>(b)], std::get<2>(b));
  });
  for (const auto& [consumer, resource, device, first, last, seconds] : mismatch_rows) {
    m_consumer.Add(names[consumer]);
    m_resource.Add(shared.resources[resource]);
    m.device.push_back(device);
    m.first_ns.push_back(first);
    m.last_ns.push_back(last);
    m.seconds.push_back(seconds);
  }
  m.consumer = m_consumer.Finish();
  m.resource_id = m_resource.Finish();
  return out;
}

}  // namespace gpucost
