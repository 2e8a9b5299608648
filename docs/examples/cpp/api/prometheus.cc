// gpucost/io/prometheus.h by example: exposition text, query answers and
// amd-smi snapshots as series and points (run by ctest as
// cpp_example_prometheus).
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "example_check.h"
#include "gpucost/io/prometheus.h"
#include "gpucost/time.h"

int main() {
  const int64_t t = 1'740'823'200 * gpucost::kNanosPerSecond;  // 2025-03-01T10:00:00Z

  // [ParseExposition]
  // What `curl node:9400/metrics` returns; lines without a timestamp get the
  // default one, metrics not asked for are skipped unread and counted.
  const std::string_view text =
      "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
      "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"node-1\",namespace=\"ml\",pod=\"train-0\"} 87\n"
      "DCGM_FI_DEV_FB_USED{gpu=\"0\",Hostname=\"node-1\",namespace=\"ml\",pod=\"train-0\"} 20480\n"
      "DCGM_FI_DEV_DRIVER_VERSION{gpu=\"0\"} ERROR - FAILED TO CONVERT TO STRING\n";
  const std::vector<std::string_view> metrics = {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"};
  absl::StatusOr<gpucost::PromSamples> scrape = gpucost::ParseExposition(text, "node-1.prom", t, metrics);
  CHECK_OK(scrape);
  CHECK(scrape->size() == 2 && scrape->value[0] == 87 && scrape->line[0] == 3 && scrape->timestamp_ns[0] == t);
  CHECK(scrape->skipped.size() == 1 && scrape->skipped[0].second == 1);
  const gpucost::PromSeries& series = scrape->series[scrape->series_id[0]];
  CHECK(series.name == "DCGM_FI_DEV_GPU_UTIL" && series.Label("pod") == "train-0" && !series.Label("container"));
  CHECK(series.ToString() == "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"node-1\",namespace=\"ml\",pod=\"train-0\"}");
  CHECK(!gpucost::ParseExposition("up 1\n", "x.prom").ok());  // no timestamp at all
  // [ParseExposition]

  // [ParseQueryRange]
  // /api/v1/query_range answers (matrix), or /api/v1/query (vector);
  // Append joins tables, their sources and series.
  const std::string_view body =
      R"({"status":"success","data":{"resultType":"matrix","result":[)"
      R"({"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"1","Hostname":"node-1"},)"
      R"("values":[[1740823200,"10"],[1740823260,"12"]]}]}})";
  absl::StatusOr<gpucost::PromSamples> range = gpucost::ParseQueryRange(body, "query_range 1");
  CHECK_OK(range);
  CHECK(range->size() == 2 && range->line[0] == 0 && range->timestamp_ns[1] == t + 60 * gpucost::kNanosPerSecond);
  scrape->Append(std::move(*range));
  CHECK(scrape->size() == 4 && scrape->sources.size() == 2 && scrape->series.size() == 3);
  const absl::StatusOr<gpucost::PromSamples> failed =
      gpucost::ParseQueryRange(R"({"status":"error","errorType":"bad_data","error":"parse error"})", "q");
  CHECK(!failed.ok());
  // [ParseQueryRange]

  // [ReadQueryRangeFiles]
  // Saved answers read from their files in parallel, in file order; the
  // stated step is checked on the first file before the others are read;
  // metrics not asked for are skipped unparsed.
  const std::string path = "example_fb_used.json";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  CHECK(f != nullptr);
  const std::string_view saved =
      R"({"status":"success","data":{"resultType":"matrix","result":[)"
      R"({"metric":{"__name__":"DCGM_FI_DEV_FB_USED","gpu":"1","Hostname":"node-1"},)"
      R"("values":[[1740823200,"20480"],[1740823260,"20480"]]}]},"warnings":["store eu-1 down"]})";
  std::fwrite(saved.data(), 1, saved.size(), f);
  std::fclose(f);
  gpucost::QueryRangeFilesOptions files;
  files.step_seconds = 60;
  files.threads = 2;
  files.allow_partial = true;  // else its warnings make it an error
  absl::StatusOr<gpucost::PromSamples> month = gpucost::ReadQueryRangeFiles(std::vector<std::string>{path}, files);
  CHECK_OK(month);
  CHECK(month->size() == 2 && month->warnings.size() == 1 && month->warnings[0].second == "store eu-1 down");
  files.metrics = {"DCGM_FI_DEV_GPU_UTIL"};  // the allocated basis needs no memory
  month = gpucost::ReadQueryRangeFiles(std::vector<std::string>{path}, files);
  CHECK_OK(month);
  CHECK(month->size() == 0 && month->skipped.size() == 1);
  files.metrics.clear();
  files.step_seconds = 300;
  CHECK(!gpucost::ReadQueryRangeFiles(std::vector<std::string>{path}, files).ok());  // 60 s apart, not 300
  // A streaming reader: when each file's points lie, without storing them,
  // then each file parsed once, kept apart until no later chunk needs it.
  files.step_seconds = 60;
  absl::StatusOr<std::vector<std::optional<gpucost::QueryRangeSpan>>> spans =
      gpucost::QueryRangeSpans(std::vector<std::string>{path}, files);
  CHECK_OK(spans);
  const gpucost::QueryRangeSpan span = *(*spans)[0];
  CHECK(span.first_ns == 1740823200 * gpucost::kNanosPerSecond && span.last_ns == span.first_ns + 60 * gpucost::kNanosPerSecond);
  absl::StatusOr<std::vector<gpucost::PromSamples>> each =
      gpucost::ReadQueryRangeEach(std::vector<std::string>{path, path}, files);
  CHECK_OK(each);
  CHECK(each->size() == 2 && (*each)[1].size() == 2);
  gpucost::PromSamples both;
  for (const gpucost::PromSamples& answer : *each) both.Append(answer);  // copied: `each` stays whole
  CHECK(both.size() == 4 && both.sources.size() == 2 && (*each)[0].size() == 2);
  std::remove(path.c_str());
  // [ReadQueryRangeFiles]

  // [ParseAmdSmiMetric]
  // `amd-smi metric --json`, one snapshot, as the ROCm exporter's series.
  const std::string_view amd =
      R"([{"gpu": 0, "usage": {"gfx_activity": {"value": 42, "unit": "%"}},)"
      R"( "mem_usage": {"used_vram": {"value": 1024, "unit": "MB"}, "free_vram": {"value": 195000, "unit": "MB"}},)"
      R"( "power": {"socket_power": {"value": 350, "unit": "W"}}}])";
  absl::StatusOr<gpucost::PromSamples> smi = gpucost::ParseAmdSmiMetric(amd, "amd-smi.json", t, "mi300-1");
  CHECK_OK(smi);
  bool saw_gfx = false;
  for (size_t i = 0; i < smi->size(); ++i) {
    const gpucost::PromSeries& s = smi->series[smi->series_id[i]];
    if (s.name == "gpu_gfx_activity") saw_gfx = smi->value[i] == 42 && s.Label("hostname") == "mi300-1";
  }
  CHECK(saw_gfx);
  // [ParseAmdSmiMetric]
  return 0;
}
