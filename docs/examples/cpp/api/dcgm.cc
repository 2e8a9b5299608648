// gpucost/io/dcgm.h by example: dcgm-exporter scrapes -> usage samples
// (run by ctest as cpp_example_dcgm).
#include <string>
#include <string_view>
#include <vector>

#include "example_check.h"
#include "gpucost/io/dcgm.h"
#include "gpucost/io/prometheus.h"
#include "gpucost/time.h"

int main() {
  const int64_t t = 1'740'823'200 * gpucost::kNanosPerSecond;  // 2025-03-01T10:00:00Z

  // [DcgmMetrics]
  // The metric names gpucost reads, with their field, convention and scale:
  // filter scrapes by them (ParseExposition's `metrics`).
  bool saw_util = false;
  for (const gpucost::DcgmMetric& m : gpucost::DcgmMetrics()) {
    if (m.name == "DCGM_FI_DEV_GPU_UTIL") {
      saw_util = m.field == gpucost::DcgmField::kGpuUtil && m.units == gpucost::DcgmUnits::kLegacy && m.scale == 0.01;
    }
  }
  CHECK(saw_util);
  const std::vector<std::string_view> names = gpucost::DcgmMetricNames();
  CHECK(names.size() == gpucost::DcgmMetrics().size());
  CHECK(gpucost::DcgmUnitsName(gpucost::DcgmUnits::kRatioBytes) == "ratio_bytes");
  // [DcgmMetrics]

  // [DcgmToUsage]
  // Two scrapes of node-1, a minute apart: two pods time-slice GPU 0 (1/2
  // each), GPU 1 is free. The nodes table maps the node to its instance id.
  std::string text;
  for (const char* pod : {"train-0", "train-1"}) {
    const std::string labels = std::string("{gpu=\"0\",Hostname=\"node-1\",namespace=\"ml\",pod=\"") + pod + "\"}";
    text += "DCGM_FI_DEV_GPU_UTIL" + labels + " 80\nDCGM_FI_DEV_FB_USED" + labels + " 1024\n";
  }
  text += "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",Hostname=\"node-1\"} 0\nDCGM_FI_DEV_FB_USED{gpu=\"1\",Hostname=\"node-1\"} 0\n";
  absl::StatusOr<gpucost::PromSamples> series = gpucost::ParseExposition(text, "node-1_1000.prom", t, names);
  CHECK_OK(series);
  absl::StatusOr<gpucost::PromSamples> later =
      gpucost::ParseExposition(text, "node-1_1001.prom", t + 60 * gpucost::kNanosPerSecond, names);
  CHECK_OK(later);
  series->Append(std::move(*later));

  const std::vector<std::string_view> node = {"node-1"}, instance = {"i-0abc"};
  const gpucost::EncodedStrings nodes = gpucost::EncodeStrings(std::span<const std::string_view>(node));
  const gpucost::EncodedStrings ids = gpucost::EncodeStrings(std::span<const std::string_view>(instance));
  gpucost::DcgmOptions options;
  options.nodes_node = nodes.view();
  options.nodes_resource_id = ids.view();
  options.interval_seconds = 60;  // the scrape interval as stated (checked against the data)
  options.mig_shares = {gpucost::DcgmOptions::MigShareRow{.gpu_model = "A100 80GB", .profile = "3g.40gb", .share = 0.5}};
  absl::StatusOr<gpucost::DcgmUsage> usage = gpucost::DcgmToUsage(*series, options);
  CHECK_OK(usage);
  const gpucost::SampleColumns samples = usage->columns();
  CHECK(usage->size() == 6 && samples.size() == 6);  // 2 instants x (2 pods + 1 free GPU)
  for (size_t i = 0; i < usage->size(); ++i) {
    const std::string_view who = samples.consumer.dictionary[samples.consumer.codes[i]];
    CHECK(samples.resource_id.dictionary[samples.resource_id.codes[i]] == "i-0abc");
    CHECK(samples.share[i] == (who.empty() ? 1.0 : 0.5));
    CHECK(samples.util[i] == (who.empty() ? 0.0 : 0.8));
    CHECK(samples.duration->data()[i] == 60 * gpucost::kNanosPerSecond);
  }
  const gpucost::DcgmDiagnostics& diagnostics = usage->diagnostics;
  CHECK(diagnostics.units == gpucost::DcgmUnits::kLegacy && diagnostics.samples_time_sliced == 4);
  // A node missing from the nodes table is an error, unless keep_unknown_nodes.
  const std::vector<std::string_view> other = {"node-2"};
  const gpucost::EncodedStrings other_nodes = gpucost::EncodeStrings(std::span<const std::string_view>(other));
  options.nodes_node = other_nodes.view();
  CHECK(!gpucost::DcgmToUsage(*series, options).ok());
  options.keep_unknown_nodes = true;
  CHECK_OK(gpucost::DcgmToUsage(*series, options));
  // [DcgmToUsage]
  return 0;
}
