// gpucost._core telemetry parsers: DCGM (exposition text, query_range JSON),
// Kubernetes dumps and kube-state-metrics, nvidia-smi, sacct and Slurm node
// events. Bodies come
// in as str, results go out as numpy arrays and (codes, values) string
// columns; the GIL is released while C++ parses.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gpucost/io/dcgm.h"
#include "gpucost/io/hosts.h"
#include "gpucost/io/kubernetes.h"
#include "gpucost/io/prometheus.h"
#include "gpucost/io/usage_csv.h"
#include "gpucost/status.h"
#include "numpy_views.h"
#include "status_to_python.h"

namespace gpucost::python {
namespace {

py::tuple Strings(EncodedStrings&& s) { return EncodedToPython(std::move(s)); }

// A parsed usage CSV block as (rows, lines, columns), each column
// (validity or None, values, dictionary offsets or None, dictionary bytes or
// None), the vectors moved into numpy arrays.
py::tuple UsageCsvBlockToPython(io::UsageCsvBlock&& parsed) {
  py::list columns;
  for (io::UsageCsvColumn& c : parsed.columns) {
    py::object validity = c.validity.empty() ? py::none() : py::object(MoveToNumpy(std::move(c.validity)));
    py::object values, offsets = py::none(), bytes = py::none();
    switch (c.kind) {
      case io::UsageCsvKind::kInstant: values = MoveToNumpy(std::move(c.instants)); break;
      case io::UsageCsvKind::kFloat64: values = MoveToNumpy(std::move(c.doubles)); break;
      case io::UsageCsvKind::kInt32: values = MoveToNumpy(std::move(c.ints)); break;
      case io::UsageCsvKind::kString:
        values = MoveToNumpy(std::move(c.ints));
        offsets = MoveToNumpy(std::move(c.dictionary_offsets));
        bytes = py::bytes(c.dictionary_data);
        break;
    }
    columns.append(py::make_tuple(validity, values, offsets, bytes));
  }
  return py::make_tuple(parsed.rows, parsed.lines, columns);
}

// Parses bytes [begin, end) of `fd`, read with pread in pieces of about
// 1 MiB into one buffer: each piece's whole lines are parsed, the part line
// at its end moved to the front for the next read (a longer line grows the
// buffer). `*cut_short_at`: the offset where the file ended before `end`.
absl::StatusOr<io::UsageCsvBlock> ParseFileRange(int fd, int64_t begin, int64_t end,
                                                 const std::vector<std::string>& names, const std::string& file,
                                                 int64_t first_line, int64_t* cut_short_at) {
  constexpr size_t kPiece = size_t{1} << 20;
  io::UsageCsvParser parser(names, file, first_line, static_cast<size_t>(end - begin));
  std::vector<char> buffer(kPiece);
  size_t held = 0;  // bytes of a part line carried over, at the front
  int64_t at = begin;
  while (at < end) {
    if (held == buffer.size()) buffer.resize(buffer.size() * 2);  // a line longer than the buffer
    const size_t want = std::min(buffer.size() - held, static_cast<size_t>(end - at));
    const ssize_t got = pread(fd, buffer.data() + held, want, static_cast<off_t>(at));
    if (got < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(absl::StrCat(file, ": cannot read: ", std::strerror(errno)));
    }
    if (got == 0) {
      *cut_short_at = at;
      return io::UsageCsvBlock{};
    }
    at += got;
    held += static_cast<size_t>(got);
    // Whole lines now; at the range's end, the rest (its last line may have no newline).
    const std::string_view bytes(buffer.data(), held);
    const size_t whole = at < end ? bytes.rfind('\n') + 1 : held;  // npos + 1 == 0: no whole line yet
    if (whole == 0) continue;
    if (absl::Status status = parser.Add(bytes.substr(0, whole)); !status.ok()) return status;
    std::memmove(buffer.data(), buffer.data() + whole, held - whole);
    held -= whole;
  }
  return parser.Finish();
}

py::dict SamplesToPython(UsageSamples&& u) {
  py::dict out;
  out["timestamp"] = MoveToNumpy(std::move(u.timestamp));
  out["resource_id"] = Strings(std::move(u.resource_id));
  out["device"] = MoveToNumpy(std::move(u.device));
  out["consumer"] = Strings(std::move(u.consumer));
  out["share"] = MoveToNumpy(std::move(u.share));
  out["util"] = MoveToNumpy(std::move(u.util));
  out["mem_used"] = MoveToNumpy(std::move(u.mem_used));
  out["duration"] = MoveToNumpy(std::move(u.duration));
  if (!u.power_w.empty()) out["power_w"] = MoveToNumpy(std::move(u.power_w));
  return out;
}

py::dict WorkloadsToPython(WorkloadTable&& w) {
  py::dict out;
  out["consumer"] = Strings(std::move(w.consumer));
  py::list labels;
  for (size_t i = 0; i < w.labels.size(); ++i) labels.append(py::make_tuple(w.label_names[i], Strings(std::move(w.labels[i]))));
  out["labels"] = labels;
  if (w.first_ns != INT64_MIN) {
    out["first_ns"] = w.first_ns;
    out["last_ns"] = w.last_ns;
  }
  return out;
}

// nvidia-smi samples with the reader's counts under "diagnostics".
py::dict NvidiaSmiUsageToPython(NvidiaSmiUsage&& u) {
  py::dict out = SamplesToPython(std::move(u.samples));
  py::dict diag;
  diag["gpu_readings"] = u.diagnostics.gpu_readings;
  diag["app_rows"] = u.diagnostics.app_rows;
  diag["app_rows_without_gpu_reading"] = u.diagnostics.app_rows_without_gpu_reading;
  diag["unknown_pids"] = u.diagnostics.unknown_pids;
  diag["series"] = u.diagnostics.gpus;
  diag["spacing_seconds"] = static_cast<double>(u.diagnostics.spacing_ns) / 1e9;
  diag["gaps"] = u.diagnostics.gaps;
  out["diagnostics"] = diag;
  return out;
}

py::dict NodesToPython(NodeTable&& n) {
  py::dict out;
  out["node"] = Strings(std::move(n.node));
  out["resource_id"] = Strings(std::move(n.resource_id));
  out["provider"] = Strings(std::move(n.provider));
  out["zone"] = Strings(std::move(n.zone));
  out["instance_type"] = Strings(std::move(n.instance_type));
  out["instance_id"] = Strings(std::move(n.instance_id));
  return out;
}

struct DcgmArgs {
  DcgmOptions options;
  std::optional<StringColumnHolder> nodes_node, nodes_resource;

  explicit DcgmArgs(const py::dict& o) {
    if (o.contains("node_labels")) options.node_labels = o["node_labels"].cast<std::vector<std::string>>();
    if (o.contains("nodes") && !o["nodes"].is_none()) {
      auto pair = o["nodes"].cast<py::tuple>();
      nodes_node = ToStringColumn(pair[0]);
      nodes_resource = ToStringColumn(pair[1]);
      options.nodes_node = nodes_node->view();
      options.nodes_resource_id = nodes_resource->view();
    }
    options.keep_unknown_nodes = o.contains("keep_unknown_nodes") && o["keep_unknown_nodes"].cast<bool>();
    const std::string units = o.contains("units") ? o["units"].cast<std::string>() : "auto";
    if (units == "legacy") options.require_units = DcgmUnits::kLegacy;
    else if (units == "ratio_bytes") options.require_units = DcgmUnits::kRatioBytes;
    else if (units != "auto") ThrowIfError(ParameterError("units", "expected \"auto\", \"legacy\" or \"ratio_bytes\""));
    if (o.contains("interval") && !o["interval"].is_none()) options.interval_seconds = o["interval"].cast<double>();
    if (o.contains("interval_name")) options.interval_name = o["interval_name"].cast<std::string>();
    if (o.contains("exporter_names") && !o["exporter_names"].is_none()) {
      options.exporter_names = o["exporter_names"].cast<std::vector<std::string>>();
    }
    if (o.contains("instant_tolerance") && !o["instant_tolerance"].is_none()) {
      options.instant_tolerance_seconds = o["instant_tolerance"].cast<double>();
    }
    if (o.contains("start_ns") && !o["start_ns"].is_none()) options.start_ns = o["start_ns"].cast<int64_t>();
    if (o.contains("end_ns") && !o["end_ns"].is_none()) options.end_ns = o["end_ns"].cast<int64_t>();
    if (o.contains("mig_shares") && !o["mig_shares"].is_none()) {
      for (auto& [model, profile, share] :
           o["mig_shares"].cast<std::vector<std::tuple<std::string, std::string, double>>>()) {
        options.mig_shares.push_back({std::move(model), std::move(profile), share});
      }
    }
    if (o.contains("mig_basis")) options.mig_basis = ValueOrThrow(ParseMigBasis(o["mig_basis"].cast<std::string>()));
  }
};

py::dict DcgmResult(DcgmUsage&& u) {
  py::dict out = SamplesToPython(std::move(u.samples));
  out["node"] = Strings(std::move(u.node));
  out["gpu_uuid"] = Strings(std::move(u.gpu_uuid));
  out["gpu_model"] = Strings(std::move(u.gpu_model));
  out["mig_profile"] = Strings(std::move(u.mig_profile));
  out["tensor_active"] = MoveToNumpy(std::move(u.tensor_active));
  out["mem_copy_util"] = MoveToNumpy(std::move(u.mem_copy_util));
  out["power_w"] = MoveToNumpy(std::move(u.power_w));
  out["mem_free"] = MoveToNumpy(std::move(u.mem_free));
  // Only where some sample's utilisation is not measured: no column otherwise.
  if (u.diagnostics.samples_without_util > 0) out["util_measured"] = MoveToNumpy(std::move(u.util_measured));
  const DcgmDiagnostics& d = u.diagnostics;
  py::dict diag;
  diag["units"] = std::string(DcgmUnitsName(d.units));
  diag["series_total"] = d.series_total;
  diag["series_ignored"] = d.series_ignored;
  diag["points_total"] = d.points_total;
  diag["points_outside"] = d.points_outside;
  diag["samples"] = d.samples;
  diag["samples_mig"] = d.samples_mig;
  diag["samples_time_sliced"] = d.samples_time_sliced;
  diag["free_readings_shadowed"] = d.free_readings_shadowed;
  diag["series"] = d.series;
  diag["spacing_seconds"] = static_cast<double>(d.spacing_ns) / 1e9;
  diag["gaps"] = d.gaps;
  diag["exporter_series_freed"] = d.exporter_series_freed;
  diag["node_labels_exporter_pod"] = d.node_labels_exporter_pod;
  diag["samples_without_memory"] = d.samples_without_memory;
  diag["samples_without_util"] = d.samples_without_util;
  diag["samples_util_from_gr_engine"] = d.samples_util_from_gr_engine;
  diag["samples_merged"] = d.samples_merged;
  diag["samples_power_from_energy"] = d.samples_power_from_energy;
  diag["energy_counter_resets"] = d.energy_counter_resets;
  diag["instants_joined"] = d.instants_joined;
  diag["duplicate_labels"] = d.duplicate_labels;
  diag["duplicate_series"] = d.duplicate_series;
  diag["duplicate_points"] = d.duplicate_points;
  py::dict skipped;
  for (const auto& [name, count] : d.skipped_fields) skipped[py::str(name)] = count;
  diag["skipped_fields"] = skipped;
  out["diagnostics"] = diag;
  return out;
}

// (text, source) pairs of exposition text, or (body, source, metric) of JSON.
// A scrape's instant where its lines have none: one for every input, or one
// per input (scrapes of a directory, each at its own instant, read together
// so that each series' spacing is known).
using DefaultInstants = std::optional<std::variant<int64_t, std::vector<int64_t>>>;

absl::StatusOr<PromSamples> ParseAll(const std::vector<std::tuple<std::string, std::string, std::string>>& inputs,
                                     bool json, const DefaultInstants& default_ts, bool dcgm_only) {
  const auto* each = default_ts ? std::get_if<std::vector<int64_t>>(&*default_ts) : nullptr;
  if (each != nullptr && each->size() != inputs.size()) {
    return ParameterError("timestamp", absl::StrCat(each->size(), " instants for ", inputs.size(), " inputs"));
  }
  PromSamples all;
  const std::vector<std::string_view> names = DcgmMetricNames();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& [body, source, metric] = inputs[i];
    std::optional<int64_t> instant;
    if (each != nullptr) {
      instant = (*each)[i];
    } else if (default_ts) {
      instant = std::get<int64_t>(*default_ts);
    }
    absl::StatusOr<PromSamples> one = json ? ParseQueryRange(body, source, metric)
                                           : ParseExposition(body, source, instant,
                                                             dcgm_only ? std::span<const std::string_view>(names)
                                                                       : std::span<const std::string_view>());
    if (!one.ok()) return one.status();
    all.Append(std::move(*one));
  }
  return all;
}

// gpucost.prometheus' `read` dict -> the reader's options.
QueryRangeFilesOptions FilesOptions(const py::dict& read) {
  QueryRangeFilesOptions files;
  if (read.contains("metrics")) files.metrics = read["metrics"].cast<std::vector<std::string>>();
  if (read.contains("keep_label")) files.keep_label = read["keep_label"].cast<std::string>();
  if (read.contains("metric_name")) files.metric_name = read["metric_name"].cast<std::string>();
  if (read.contains("step") && !read["step"].is_none()) files.step_seconds = read["step"].cast<double>();
  files.allow_partial = read.contains("allow_partial") && read["allow_partial"].cast<bool>();
  if (read.contains("threads") && !read["threads"].is_none()) files.threads = read["threads"].cast<int>();
  return files;
}

std::vector<LabelKey> Keys(const std::vector<std::pair<std::string, std::string>>& keys) {
  std::vector<LabelKey> out;
  for (const auto& [c, k] : keys) out.push_back({c, k});
  return out;
}

}  // namespace

void RegisterTelemetry(py::module_& m) {
  // A block of a usage CSV (whole lines after the header) from any buffer,
  // not copied: (rows, lines, columns), each column (validity or None, values,
  // dictionary offsets or None, dictionary bytes or None) as numpy arrays
  // that Arrow arrays are built over.
  m.def(
      "parse_usage_csv",
      [](const py::buffer& data, const std::vector<std::string>& names, const std::string& file,
         int64_t first_line) {
        const py::buffer_info info = data.request();
        const std::string_view text(static_cast<const char*>(info.ptr),
                                    static_cast<size_t>(info.size) * static_cast<size_t>(info.itemsize));
        absl::StatusOr<io::UsageCsvBlock> block;
        {
          py::gil_scoped_release release;
          block = io::ParseUsageCsvBlock(text, names, file, first_line);
        }
        return UsageCsvBlockToPython(ValueOrThrow(std::move(block)));
      },
      py::arg("data"), py::arg("names"), py::arg("file"), py::arg("first_line"));
  // Bytes [begin, end) of the open file `fd` (whole lines after the header),
  // read a piece at a time into one buffer and parsed while in cache (a copy
  // of a whole block would leave cache before its parse): as parse_usage_csv,
  // plus the size at which the file ended when it was cut short (else -1).
  m.def(
      "parse_usage_csv_range",
      [](int fd, int64_t begin, int64_t end, const std::vector<std::string>& names, const std::string& file,
         int64_t first_line) {
        absl::StatusOr<io::UsageCsvBlock> block;
        int64_t cut_short_at = -1;
        {
          py::gil_scoped_release release;
          block = ParseFileRange(fd, begin, end, names, file, first_line, &cut_short_at);
        }
        if (cut_short_at >= 0) return py::tuple(py::make_tuple(0, 0, py::list(), cut_short_at));
        py::tuple parsed = UsageCsvBlockToPython(ValueOrThrow(std::move(block)));
        return py::tuple(py::make_tuple(parsed[0], parsed[1], parsed[2], -1));
      },
      py::arg("fd"), py::arg("begin"), py::arg("end"), py::arg("names"), py::arg("file"), py::arg("first_line"));
  m.def("dcgm_metric_names", [] {
    std::vector<std::string> out;
    for (std::string_view n : DcgmMetricNames()) out.emplace_back(n);
    return out;
  });
  m.def("dcgm_usage",
        [](const std::vector<std::tuple<std::string, std::string, std::string>>& inputs, bool json,
           const DefaultInstants& default_ts, const py::dict& options) {
          DcgmArgs args(options);
          absl::StatusOr<DcgmUsage> result;
          {
            py::gil_scoped_release release;
            absl::StatusOr<PromSamples> series = ParseAll(inputs, json, default_ts, /*dcgm_only=*/true);
            result = series.ok() ? DcgmToUsage(*series, args.options) : absl::StatusOr<DcgmUsage>(series.status());
          }
          return DcgmResult(ValueOrThrow(std::move(result)));
        });
  // Saved query_range / query answers read from their files by C++, in parallel (ReadQueryRangeFiles), then
  // mapped as dcgm_usage does; the answers' warnings come back as "file: warning".
  m.def("dcgm_usage_files",
        [](const std::vector<std::string>& paths, const py::dict& options, const py::dict& read) {
          DcgmArgs args(options);
          QueryRangeFilesOptions files = FilesOptions(read);
          files.step_name = args.options.interval_name;
          absl::StatusOr<DcgmUsage> result;
          std::vector<std::string> warnings;
          {
            py::gil_scoped_release release;
            absl::StatusOr<PromSamples> series = ReadQueryRangeFiles(paths, files);
            if (series.ok()) {
              for (const auto& [source, text] : series->warnings) {
                warnings.push_back(absl::StrCat(series->sources[source], ": ", text));
              }
            }
            result = series.ok() ? DcgmToUsage(*series, args.options) : absl::StatusOr<DcgmUsage>(series.status());
          }
          py::dict out = DcgmResult(ValueOrThrow(std::move(result)));
          out["warnings"] = warnings;
          return out;
        },
        py::arg("paths"), py::arg("options"), py::arg("read"));
  // Saved answers kept parsed between the chunks of a streaming read (gpucost.prometheus.iter_query_range):
  // each file parsed once, its points held in C++ until no later chunk reaches it.
  py::class_<PromSamples, std::shared_ptr<PromSamples>>(
      m, "QueryRangeAnswer", "One saved answer's points, parsed once and kept in C++ (ReadQueryRangeEach).")
      .def_property_readonly("points", &PromSamples::size)
      .def_property_readonly("first_ns", [](const PromSamples& s) -> std::optional<int64_t> {
        if (s.timestamp_ns.empty()) return std::nullopt;
        return *std::min_element(s.timestamp_ns.begin(), s.timestamp_ns.end());
      })
      .def_property_readonly("last_ns", [](const PromSamples& s) -> std::optional<int64_t> {
        if (s.timestamp_ns.empty()) return std::nullopt;
        return *std::max_element(s.timestamp_ns.begin(), s.timestamp_ns.end());
      });
  m.def("query_range_each",
        [](const std::vector<std::string>& paths, const py::dict& read) {
          QueryRangeFilesOptions files = FilesOptions(read);
          absl::StatusOr<std::vector<PromSamples>> result;
          {
            py::gil_scoped_release release;
            result = ReadQueryRangeEach(paths, files);
          }
          std::vector<std::shared_ptr<PromSamples>> out;
          for (PromSamples& s : ValueOrThrow(std::move(result))) out.push_back(std::make_shared<PromSamples>(std::move(s)));
          return out;
        },
        py::arg("paths"), py::arg("read"));
  // Each file's (first_ns, last_ns) of the points a read keeps, or None: times read, values skipped.
  m.def("query_range_spans",
        [](const std::vector<std::string>& paths, const py::dict& read) {
          QueryRangeFilesOptions files = FilesOptions(read);
          absl::StatusOr<std::vector<std::optional<QueryRangeSpan>>> result;
          {
            py::gil_scoped_release release;
            result = QueryRangeSpans(paths, files);
          }
          std::vector<std::optional<std::pair<int64_t, int64_t>>> out;
          for (const auto& span : ValueOrThrow(std::move(result))) {
            if (span.has_value()) out.emplace_back(std::make_pair(span->first_ns, span->last_ns));
            else out.emplace_back(std::nullopt);
          }
          return out;
        },
        py::arg("paths"), py::arg("read"));
  // dcgm_usage_files over answers already parsed, in the order given (copied: the answers stay for later chunks).
  m.def("dcgm_usage_answers",
        [](const std::vector<std::shared_ptr<PromSamples>>& answers, const py::dict& options) {
          DcgmArgs args(options);
          absl::StatusOr<DcgmUsage> result;
          std::vector<std::string> warnings;
          {
            py::gil_scoped_release release;
            PromSamples series;
            size_t points = 0;
            for (const auto& answer : answers) points += answer->size();
            series.series_id.reserve(points);
            series.timestamp_ns.reserve(points);
            series.value.reserve(points);
            series.line.reserve(points);
            for (const auto& answer : answers) series.Append(*answer);
            for (const auto& [source, text] : series.warnings) {
              warnings.push_back(absl::StrCat(series.sources[source], ": ", text));
            }
            result = DcgmToUsage(series, args.options);
          }
          py::dict out = DcgmResult(ValueOrThrow(std::move(result)));
          out["warnings"] = warnings;
          return out;
        },
        py::arg("answers"), py::arg("options"));
  // The reader alone (benchmarks/bench_prometheus_month.py): saved answers -> point columns and series count.
  m.def("query_range_files",
        [](const std::vector<std::string>& paths, const py::dict& read) {
          QueryRangeFilesOptions files = FilesOptions(read);
          absl::StatusOr<PromSamples> result;
          {
            py::gil_scoped_release release;
            result = ReadQueryRangeFiles(paths, files);
          }
          PromSamples s = ValueOrThrow(std::move(result));
          py::dict out;
          out["series"] = s.series.size();
          out["series_id"] = MoveToNumpy(std::move(s.series_id));
          out["timestamp_ns"] = MoveToNumpy(std::move(s.timestamp_ns));
          out["value"] = MoveToNumpy(std::move(s.value));
          return out;
        },
        py::arg("paths"), py::arg("read"));
  // Series as read, for readers of other exporters' metrics (gpucost.prometheus.read_jobstats): per point its
  // series, time, value and line; per series its name, source and labels. `metrics` keeps those names only
  // (exposition text; all when empty).
  m.def("prom_series",
        [](const std::vector<std::tuple<std::string, std::string, std::string>>& inputs, bool json,
           std::optional<int64_t> default_ts, const std::vector<std::string>& metrics) {
          absl::StatusOr<PromSamples> result;
          {
            py::gil_scoped_release release;
            result = [&]() -> absl::StatusOr<PromSamples> {
              const std::vector<std::string_view> names(metrics.begin(), metrics.end());
              PromSamples all;
              for (const auto& [body, source, metric] : inputs) {
                absl::StatusOr<PromSamples> one = json ? ParseQueryRange(body, source, metric)
                                                       : ParseExposition(body, source, default_ts, names);
                if (!one.ok()) return one.status();
                all.Append(std::move(*one));
              }
              return all;
            }();
          }
          PromSamples s = ValueOrThrow(std::move(result));
          py::dict out;
          out["sources"] = s.sources;
          py::list series;
          for (const PromSeries& x : s.series) {
            py::dict labels;
            for (const auto& [k, v] : x.labels) labels[py::str(k)] = v;
            series.append(py::make_tuple(x.name, x.source, labels));
          }
          out["series"] = series;
          out["series_id"] = MoveToNumpy(std::move(s.series_id));
          out["timestamp_ns"] = MoveToNumpy(std::move(s.timestamp_ns));
          out["value"] = MoveToNumpy(std::move(s.value));
          out["line"] = MoveToNumpy(std::move(s.line));
          return out;
        },
        py::arg("inputs"), py::arg("json"), py::arg("default_ts"), py::arg("metrics"));
  m.def("amd_smi_usage",
        [](const std::vector<std::tuple<std::string, std::string, int64_t, std::string>>& inputs,
           const py::dict& options) {
          DcgmArgs args(options);
          absl::StatusOr<DcgmUsage> result;
          {
            py::gil_scoped_release release;
            result = [&]() -> absl::StatusOr<DcgmUsage> {
              PromSamples all;
              for (const auto& [body, source, timestamp_ns, host] : inputs) {
                GPUCOST_ASSIGN_OR_RETURN(PromSamples one, ParseAmdSmiMetric(body, source, timestamp_ns, host));
                all.Append(std::move(one));
              }
              return DcgmToUsage(all, args.options);
            }();
          }
          return DcgmResult(ValueOrThrow(std::move(result)));
        });
  m.def("kube_pod_labels",
        [](const std::vector<std::tuple<std::string, std::string, std::string>>& bodies,
           const std::vector<std::pair<std::string, std::string>>& keys) {
          const std::vector<LabelKey> k = Keys(keys);
          absl::StatusOr<WorkloadTable> result;
          {
            py::gil_scoped_release release;
            absl::StatusOr<PromSamples> series = ParseAll(bodies, true, std::nullopt, false);
            result = series.ok() ? WorkloadsFromKubePodLabels(*series, k) : absl::StatusOr<WorkloadTable>(series.status());
          }
          return WorkloadsToPython(ValueOrThrow(std::move(result)));
        });
  m.def("kube_node_info", [](const std::vector<std::tuple<std::string, std::string, std::string>>& bodies) {
    absl::StatusOr<NodeTable> result;
    {
      py::gil_scoped_release release;
      absl::StatusOr<PromSamples> series = ParseAll(bodies, true, std::nullopt, false);
      result = series.ok() ? NodesFromKubeNodeInfo(*series) : absl::StatusOr<NodeTable>(series.status());
    }
    return NodesToPython(ValueOrThrow(std::move(result)));
  });
  m.def("kubectl_pods", [](const std::string& json, const std::string& source,
                           const std::vector<std::pair<std::string, std::string>>& keys) {
    const std::vector<LabelKey> k = Keys(keys);
    absl::StatusOr<WorkloadTable> result;
    {
      py::gil_scoped_release release;
      result = ParseKubectlPods(json, source, k);
    }
    return WorkloadsToPython(ValueOrThrow(std::move(result)));
  });
  m.def("kubectl_nodes", [](const std::string& json, const std::string& source) {
    absl::StatusOr<NodeTable> result;
    {
      py::gil_scoped_release release;
      result = ParseKubectlNodes(json, source);
    }
    return NodesToPython(ValueOrThrow(std::move(result)));
  });
  m.def("kubectl_pod_gpus", [](const std::string& pods, const std::string& source, const std::string& nodes,
                               const std::string& nodes_source, const std::string& claims,
                               const std::string& claims_source) {
    absl::StatusOr<PodGpuTable> result;
    {
      py::gil_scoped_release release;
      result = ParseKubectlPodGpus(pods, source, nodes, nodes_source, claims, claims_source);
    }
    PodGpuTable t = ValueOrThrow(std::move(result));
    py::dict out;
    out["consumer"] = Strings(std::move(t.consumer));
    out["node"] = Strings(std::move(t.node));
    out["resource"] = Strings(std::move(t.resource));
    out["kind"] = Strings(std::move(t.kind));
    out["claim"] = Strings(std::move(t.claim));
    out["device"] = Strings(std::move(t.device));
    out["count"] = MoveToNumpy(std::move(t.count));
    out["share"] = MoveToNumpy(std::move(t.share));
    out["start"] = MoveToNumpy(std::move(t.start));
    out["end"] = MoveToNumpy(std::move(t.end));
    out["pods_without_gpus"] = t.pods_without_gpus;
    return out;
  });
  m.def("nvidia_smi",
        [](const std::string& gpu_text, const std::string& gpu_source, const std::optional<std::string>& apps_text,
           const std::string& apps_source, const std::string& tz, const std::string& resource_id,
           std::optional<double> interval,
           std::vector<int64_t> pids, std::vector<std::string> jobs) {
          NvidiaSmiOptions options{resource_id, interval, std::move(pids), std::move(jobs)};
          absl::StatusOr<NvidiaSmiUsage> result;
          {
            py::gil_scoped_release release;
            result = [&]() -> absl::StatusOr<NvidiaSmiUsage> {
              GPUCOST_ASSIGN_OR_RETURN(NvidiaSmiGpus gpus, ParseNvidiaSmiGpus(gpu_text, gpu_source, tz));
              std::optional<NvidiaSmiApps> apps;
              if (apps_text.has_value()) {
                GPUCOST_ASSIGN_OR_RETURN(apps, ParseNvidiaSmiApps(*apps_text, apps_source, tz));
              }
              return NvidiaSmiToUsage(gpus, apps ? &*apps : nullptr, options);
            }();
          }
          return NvidiaSmiUsageToPython(ValueOrThrow(std::move(result)));
        });
  m.def("nvidia_smi_mon",
        [](const std::string& text, const std::string& source, const std::optional<std::string>& pmon_text,
           const std::string& pmon_source, const std::string& tz, const std::string& resource_id,
           std::optional<double> interval, std::vector<int64_t> pids, std::vector<std::string> jobs) {
          NvidiaSmiOptions options{resource_id, interval, std::move(pids), std::move(jobs)};
          absl::StatusOr<NvidiaSmiUsage> result;
          bool has_memory = false;
          {
            py::gil_scoped_release release;
            result = [&]() -> absl::StatusOr<NvidiaSmiUsage> {
              GPUCOST_ASSIGN_OR_RETURN(NvidiaSmiMon mon, ParseNvidiaSmiMon(text, source, tz));
              has_memory = mon.has_memory;
              if (!pmon_text.has_value()) return NvidiaSmiToUsage(mon.gpus, mon.pmon ? &mon.apps : nullptr, options);
              if (mon.pmon) return TableError(source, "a pmon log was given as the GPU log beside another pmon log");
              GPUCOST_ASSIGN_OR_RETURN(NvidiaSmiMon procs, ParseNvidiaSmiMon(*pmon_text, pmon_source, tz));
              if (!procs.pmon) return TableError(pmon_source, "not a pmon log (no pid column)");
              return NvidiaSmiToUsage(mon.gpus, &procs.apps, options);
            }();
          }
          py::dict out = NvidiaSmiUsageToPython(ValueOrThrow(std::move(result)));
          out["diagnostics"]["has_memory"] = has_memory;
          return out;
        });
  m.def("sacct", [](const std::vector<std::pair<std::string, std::string>>& inputs, const std::string& tz,
                    std::optional<int64_t> now_ns, double util, std::optional<int32_t> gpus_per_node,
                    std::optional<int64_t> range_start_ns, std::optional<int64_t> range_end_ns,
                    std::vector<std::pair<std::string, int32_t>> node_gpus,
                    std::vector<std::pair<std::string, int32_t>> shards_per_gpu,
                    std::vector<std::pair<std::string, int32_t>> mps_per_gpu,
                    const std::vector<std::tuple<std::string, std::string, std::string, std::string,
                                                 std::vector<int32_t>>>& job_devices) {
    SacctOptions options;
    for (const auto& [job, node, start, where, indices] : job_devices) {
      options.job_devices.push_back({.job = job, .node = node, .start = start, .where = where, .indices = indices});
    }
    if (range_start_ns) options.range_start_ns = *range_start_ns;
    if (range_end_ns) options.range_end_ns = *range_end_ns;
    options.node_gpus = std::move(node_gpus);
    options.shards_per_gpu = std::move(shards_per_gpu);
    options.mps_per_gpu = std::move(mps_per_gpu);
    options.tz = tz;
    if (now_ns) options.now_ns = *now_ns;
    options.util = util;
    options.gpus_per_node = gpus_per_node;
    std::vector<SacctInput> views;
    views.reserve(inputs.size());
    for (const auto& [text, source] : inputs) views.push_back({text, source});
    absl::StatusOr<SacctResult> result;
    {
      py::gil_scoped_release release;
      result = ParseSacct(views, options);
    }
    SacctResult r = ValueOrThrow(std::move(result));
    py::dict out;
    out["usage"] = SamplesToPython(std::move(r.samples));
    out["workloads"] = WorkloadsToPython(std::move(r.workloads));
    py::dict diag;
    diag["steps_skipped"] = r.steps_skipped;
    diag["jobs_without_gpus"] = r.jobs_without_gpus;
    diag["jobs_not_started"] = r.jobs_not_started;
    diag["gpus_assigned_in_order"] = r.gpus_assigned_in_order;
    diag["gpus_from_scontrol"] = r.gpus_from_job_devices;
    diag["free_samples"] = r.free_samples;
    diag["nodes_without_gpu_count"] = r.nodes_without_gpu_count;
    diag["shared_jobs"] = r.shared_jobs;
    diag["rows_repeated"] = r.rows_repeated;
    diag["rows_superseded"] = r.rows_superseded;
    diag["runs_cut"] = r.runs_cut;
    out["diagnostics"] = diag;
    out["repeated_jobs"] = r.repeated_jobs;
    out["superseded_jobs"] = r.superseded_jobs;
    out["jobs_idx_sacct"] = r.jobs_idx_sacct;
    out["jobs_idx_given"] = r.jobs_idx_given;
    py::list unknown;  // few rows: plain tuples
    for (const SacctJobRef& j : r.jobs_unknown_gpus) {
      unknown.append(py::make_tuple(j.source, j.line, j.job, j.user, j.account, j.partition, j.nodes, j.start, j.end));
    }
    out["jobs_unknown_gpus"] = unknown;
    return out;
  }, py::arg("inputs"), py::arg("tz"), py::arg("now_ns"), py::arg("util"), py::arg("gpus_per_node"),
     py::arg("range_start_ns"), py::arg("range_end_ns"), py::arg("node_gpus"), py::arg("shards_per_gpu"),
     py::arg("mps_per_gpu"), py::arg("job_devices") = std::vector<std::tuple<std::string, std::string, std::string,
                                                                           std::string, std::vector<int32_t>>>{});
  m.def("slurm_events", [](const std::string& text, const std::string& source, const std::string& tz,
                           std::optional<int64_t> now_ns, std::vector<std::string> states) {
    SlurmEventsOptions options{.tz = tz, .now_ns = now_ns.value_or(INT64_MIN), .states = std::move(states)};
    absl::StatusOr<SlurmEvents> result;
    {
      py::gil_scoped_release release;
      result = ParseSlurmEvents(text, source, options);
    }
    SlurmEvents e = ValueOrThrow(std::move(result));
    py::dict out;
    out["node"] = e.node;
    out["start"] = MoveToNumpy(std::move(e.start));
    out["end"] = MoveToNumpy(std::move(e.end));
    out["state"] = e.state;
    out["reason"] = e.reason;
    out["line"] = MoveToNumpy(std::move(e.line));
    py::dict diag;
    diag["cluster_events"] = e.cluster_events;
    diag["other_states"] = e.other_states;
    diag["ongoing"] = e.ongoing;
    diag["empty"] = e.empty;
    out["diagnostics"] = diag;
    return out;
  }, py::arg("text"), py::arg("source"), py::arg("tz"), py::arg("now_ns"), py::arg("states"));
  m.def("expand_host_list", [](const std::string& list) {
    absl::StatusOr<std::vector<std::string>> hosts;
    {
      py::gil_scoped_release release;
      hosts = ExpandHostList(list);
    }
    return ValueOrThrow(std::move(hosts));
  }, py::arg("list"));
}

}  // namespace gpucost::python
