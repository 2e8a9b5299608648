// File: io/usage.h
//
// Owning usage samples (SEMANTICS 1.3) as the telemetry readers return them;
// `columns()` gives the engine's view.
#ifndef GPUCOST_IO_USAGE_H_
#define GPUCOST_IO_USAGE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "gpucost/columns.h"

namespace gpucost {

struct UsageSamples {
  std::vector<int64_t> timestamp;  // ns since the epoch, UTC
  EncodedStrings resource_id;
  std::vector<int32_t> device;
  EncodedStrings consumer;
  std::vector<double> share, util, mem_used;
  std::vector<int64_t> duration;  // ns
  // SEMANTICS 9: the whole device's draw in W (NaN: not reported); empty
  // when the source logged no power.
  std::vector<double> power_w;

  [[nodiscard]] size_t size() const { return timestamp.size(); }
  [[nodiscard]] SampleColumns columns() const {
    SampleColumns out{.timestamp = timestamp, .resource_id = resource_id.view(), .device = device,
                      .consumer = consumer.view(), .share = share, .util = util, .mem_used = mem_used,
                      .duration = duration};
    if (!power_w.empty()) out.power_w = std::span<const double>(power_w);
    return out;
  }
};

// A workloads table (SEMANTICS 1.4): consumer plus label columns; a label
// value with code kNullCode is missing.
struct WorkloadTable {
  EncodedStrings consumer;
  std::vector<std::string> label_names;
  std::vector<EncodedStrings> labels;
  // The instants the labels were read over (kube_pod_labels: its first and
  // last points), so a label history that starts after the bill can be told;
  // INT64_MIN when the source does not say (kubectl dumps).
  int64_t first_ns = INT64_MIN;
  int64_t last_ns = INT64_MIN;

  [[nodiscard]] size_t size() const { return consumer.codes.size(); }
};

// Durations from the data (SEMANTICS 1.3 `duration`), for readers that see
// each series in order. `series` and `timestamp` are sorted by (series,
// timestamp). Each sample gets the gap to its series' next later sample
// when that gap is within 1.25x the series' spacing (jitter: counted whole,
// never overlapping the next sample), else the spacing (a gap is missing
// samples, not time held); the last sample of a series gets the spacing. A series' spacing is the (lower) median of its gaps when it
// has at least two, else the median over all series' gaps, else
// `given_ns`, else `fallback_ns` (one scrape: no order to read).
// A `given_ns` more than 2x away from a series' spacing is an error naming
// the series (`describe(series)`), the spacing and the value given.
struct SeriesSpacing {
  int64_t spacing_ns = 0;    // median gap over all series (0: no gaps seen)
  int64_t series = 0;        // distinct series
  int64_t gaps = 0;          // samples followed by a gap over 1.25x the spacing (missing samples)
};
[[nodiscard]] absl::StatusOr<SeriesSpacing> DurationsFromSeries(
    std::span<const int32_t> series, std::span<const int64_t> timestamp, std::optional<int64_t> given_ns,
    int64_t fallback_ns, std::string_view given_name, const std::function<std::string(int32_t)>& describe,
    std::vector<int64_t>* duration);

}  // namespace gpucost

#endif  // GPUCOST_IO_USAGE_H_
