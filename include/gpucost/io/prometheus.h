// File: io/prometheus.h
//
// Parsers for what Prometheus and its exporters print: the text exposition
// format 0.0.4 (what `curl exporter:9400/metrics` returns) and the HTTP API's
// query_range / query JSON answers. They parse bodies only; fetching over
// HTTP is the caller's business (gpucost.prometheus does it in Python).
//
// The result is a PromSamples table: one row per point, each pointing at the
// series (metric name + labels) it belongs to.
//
// Example:
//   absl::StatusOr<gpucost::PromSamples> s =
//       gpucost::ParseExposition(text, "node1.prom", /*default_timestamp_ns=*/t);
//   absl::StatusOr<gpucost::PromSamples> r =
//       gpucost::ParseQueryRange(json_body, "query_range 1");
//   gpucost::QueryRangeFilesOptions o;   // a month of saved answers, in parallel
//   o.step_seconds = 60;
//   absl::StatusOr<gpucost::PromSamples> m = gpucost::ReadQueryRangeFiles(paths, o);
//   auto spans = gpucost::QueryRangeSpans(paths, o);   // when, without the points
#ifndef GPUCOST_IO_PROMETHEUS_H_
#define GPUCOST_IO_PROMETHEUS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace gpucost {

// A series: metric name (may be empty when a query result dropped it) and
// labels in the order they were printed. `__name__` is never among labels.
struct PromSeries {
  std::string name;
  int32_t source = 0;  // index into PromSamples::sources
  std::vector<std::pair<std::string, std::string>> labels;

  // The value of label `key`, or nullopt when the series has no such label.
  [[nodiscard]] std::optional<std::string_view> Label(std::string_view key) const;
  // `name{k="v",...}` as Prometheus prints it (for error messages).
  [[nodiscard]] std::string ToString() const;
};

// Points of many series. `line` is the 1-based line of a text file the
// point came from, or 0 for JSON.
struct PromSamples {
  std::vector<std::string> sources;  // file or body names for error messages
  // Per source: 1 when it is an instant (/api/v1/query vector) answer, whose
  // evaluation time is when it was saved, not a scrape or a step.
  std::vector<uint8_t> source_is_instant;
  // Sample lines of metrics not asked for, by metric name: skipped unread,
  // whatever their value (dcgm-exporter prints `ERROR - FAILED TO CONVERT
  // TO STRING` for some blob fields).
  std::vector<std::pair<std::string, int64_t>> skipped;
  // The `warnings` of JSON answers (a partial answer: a store or replica
  // was unreachable), with the index of the source that carried each.
  std::vector<std::pair<int32_t, std::string>> warnings;
  std::vector<PromSeries> series;
  std::vector<int32_t> series_id;
  std::vector<int64_t> timestamp_ns;
  std::vector<double> value;
  std::vector<int64_t> line;

  [[nodiscard]] size_t size() const { return value.size(); }
  // Appends `other`: its sources and series too (ids are shifted).
  void Append(PromSamples&& other);
  // The same, copying `other` (kept for another use: a streaming reader's
  // answer shared by two chunks).
  void Append(const PromSamples& other);
};

// Parses exposition text. Lines whose metric name is not in `metrics` are
// skipped after their series part (all kept when `metrics` is empty): their
// value and timestamp are never read, so an unused field's odd value is not
// an error; they are counted in `skipped`. A
// sample line without a timestamp gets `default_timestamp_ns`; without one
// either, it is an error. Errors name the source, the line and the part
// ('metric', 'labels', 'value', 'timestamp').
[[nodiscard]] absl::StatusOr<PromSamples> ParseExposition(
    std::string_view text, std::string_view source,
    std::optional<int64_t> default_timestamp_ns = std::nullopt,
    std::span<const std::string_view> metrics = {});

// Parses a /api/v1/query_range (matrix) or /api/v1/query (vector or matrix)
// answer straight into columns (simdjson On Demand: labels once per series,
// timestamps and values into the point columns). A `"status":"error"`
// answer is returned as an error carrying Prometheus' errorType and message;
// malformed JSON is an error naming the byte, line and column where it
// breaks. `metric_name`, when given, names series whose `__name__` the query
// dropped. The answer's `warnings` are kept in PromSamples::warnings.
[[nodiscard]] absl::StatusOr<PromSamples> ParseQueryRange(
    std::string_view body, std::string_view source,
    std::string_view metric_name = {});

// How ReadQueryRangeFiles reads a set of saved answers.
struct QueryRangeFilesOptions {
  // Metrics to read (every series when empty). A series of another metric
  // is skipped with its points unparsed and counted (one per series) in
  // PromSamples::skipped, unless it carries a non-empty `keep_label`.
  std::vector<std::string> metrics;
  std::string keep_label;
  // Names series whose `__name__` the query dropped, in every file.
  std::string metric_name;
  // The step the caller states (seconds): checked against the first file's
  // spacing before any other file is read (more than 2x apart is an error
  // naming the file and the series, as DurationsFromSeries words it).
  std::optional<double> step_seconds;
  std::string step_name = "step";
  // An answer with `warnings` (a partial answer) is an error naming the file
  // unless this is set; then its warnings are kept.
  bool allow_partial = false;
  // Files parsed at once (0: AvailableCores()).
  int threads = 0;
};

// Reads and parses saved query_range / query answers (one file each), in
// parallel, as ParseQueryRange does; the result is in file order, so it is
// the same whatever the thread count. The first problem in file order is
// returned (an unreadable file, bad JSON, a refused partial answer, a step
// the first file contradicts).
[[nodiscard]] absl::StatusOr<PromSamples> ReadQueryRangeFiles(std::span<const std::string> paths,
                                                              const QueryRangeFilesOptions& options);

// Each file read on its own, as ReadQueryRangeFiles reads it alone (so the
// step is checked against every file), in parallel and in file order: a
// streaming reader keeps each answer parsed for as long as its chunks need
// it instead of parsing it again for each (gpucost.prometheus.iter_query_range).
[[nodiscard]] absl::StatusOr<std::vector<PromSamples>> ReadQueryRangeEach(std::span<const std::string> paths,
                                                                         const QueryRangeFilesOptions& options);

// The first and last instant among the points a read keeps.
struct QueryRangeSpan {
  int64_t first_ns = 0;
  int64_t last_ns = 0;
};

// Each file's QueryRangeSpan as ReadQueryRangeEach would find it (nullopt:
// no point kept), without storing the points: each point's time is read,
// its value skipped. Refuses a partial answer as the reader does; the step
// is not checked and a malformed value is left for the full read to name.
[[nodiscard]] absl::StatusOr<std::vector<std::optional<QueryRangeSpan>>> QueryRangeSpans(
    std::span<const std::string> paths, const QueryRangeFilesOptions& options);

// `amd-smi metric --json` (one snapshot: a list of GPUs, or {"gpu_data":
// [...]}) -> series named as the ROCm device-metrics-exporter names them
// (gpu_gfx_activity %, gpu_umc_activity %, gpu_used_vram / gpu_free_vram MB,
// gpu_power_usage W from power.socket_power), labelled gpu_id and hostname
// `host`, at `timestamp_ns` (amd-smi prints no time). Values are
// {"value": v, "unit": u} or bare numbers; "N/A" is no value; memory in
// B/KB/GB is converted to MB. For DcgmToUsage (io/dcgm.h).
[[nodiscard]] absl::StatusOr<PromSamples> ParseAmdSmiMetric(std::string_view body, std::string_view source,
                                                            int64_t timestamp_ns, std::string_view host);

}  // namespace gpucost

#endif  // GPUCOST_IO_PROMETHEUS_H_
