// gpucost/io/usage.h by example: owning samples, a workloads table and
// durations read from the data (run by ctest as cpp_example_usage).
#include <cstdio>
#include <string>
#include <vector>

#include "example_check.h"
#include "gpucost/io/usage.h"
#include "gpucost/time.h"

int main() {
  constexpr int64_t kS = gpucost::kNanosPerSecond;

  // [DurationsFromSeries]
  // Each sample lasts until its series' next one, unless that gap is over
  // 1.25x the spacing (missing samples): series 0 is scraped every minute
  // with one gap, series 1 once.
  const std::vector<int32_t> series = {0, 0, 0, 0, 1};
  const std::vector<int64_t> t = {0, 60 * kS, 120 * kS, 420 * kS, 30 * kS};
  std::vector<int64_t> duration;
  auto describe = [](int32_t s) { return "scrapes: series " + std::to_string(s); };
  absl::StatusOr<gpucost::SeriesSpacing> spacing =
      gpucost::DurationsFromSeries(series, t, /*given_ns=*/std::nullopt, /*fallback_ns=*/60 * kS, "interval",
                                   describe, &duration);
  CHECK_OK(spacing);
  CHECK(spacing->spacing_ns == 60 * kS && spacing->series == 2 && spacing->gaps == 1);
  CHECK((duration == std::vector<int64_t>{60 * kS, 60 * kS, 60 * kS, 60 * kS, 60 * kS}));
  // A stated interval more than 2x away from the data's spacing is an error.
  const absl::Status wrong = gpucost::DurationsFromSeries(series, t, 300 * kS, 60 * kS, "step", describe, &duration).status();
  CHECK(!wrong.ok());
  std::printf("%s\n", std::string(wrong.message()).c_str());
  // [DurationsFromSeries]

  // [UsageSamples]
  // What the telemetry readers return; columns() is the engine's view.
  gpucost::UsageSamples samples;
  samples.timestamp = t;
  samples.duration = duration;
  gpucost::StringEncoder resource, consumer;
  for (size_t i = 0; i < t.size(); ++i) {
    resource.Add("i-1");
    consumer.Add(series[i] == 0 ? "ml/train-0" : "");
  }
  samples.resource_id = resource.Finish();
  samples.consumer = consumer.Finish();
  samples.device = {0, 0, 0, 0, 1};
  samples.share = {1, 1, 1, 1, 1};
  samples.util = {0.9, 0.8, 0.9, 0.1, 0};
  samples.mem_used = {1e9, 1e9, 1e9, 1e9, 0};
  const gpucost::SampleColumns columns = samples.columns();
  CHECK(samples.size() == 5 && columns.size() == 5 && columns.duration.has_value());
  // [UsageSamples]

  // [WorkloadTable]
  // Consumers and their labels (SEMANTICS 1.4); null codes are missing values.
  gpucost::WorkloadTable workloads;
  gpucost::StringEncoder who, team;
  who.Add("ml/train-0");
  team.Add("vision");
  workloads.consumer = who.Finish();
  workloads.label_names = {"team"};
  workloads.labels.push_back(team.Finish());
  CHECK(workloads.size() == 1 && workloads.first_ns == INT64_MIN);  // a dump: no label history
  // [WorkloadTable]
  return 0;
}
