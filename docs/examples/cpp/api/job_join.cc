// gpucost/io/job_join.h by example: Slurm jobs joined to their GPUs'
// telemetry (run by ctest as cpp_example_job_join).
#include <string>
#include <string_view>
#include <vector>

#include "example_check.h"
#include "gpucost/io/job_join.h"
#include "gpucost/time.h"

namespace {
// Owning samples of one GPU (i-1, device 0), one row per (start, consumer, util).
gpucost::UsageSamples Samples(const std::vector<int64_t>& start, const std::vector<std::string_view>& consumer,
                              const std::vector<double>& util, int64_t duration) {
  gpucost::UsageSamples s;
  s.timestamp = start;
  gpucost::StringEncoder resource, who;
  for (size_t i = 0; i < start.size(); ++i) {
    resource.Add("i-1");
    who.Add(consumer[i]);
    s.device.push_back(0);
    s.share.push_back(1);
    s.mem_used.push_back(0);
    s.duration.push_back(duration);
  }
  s.resource_id = resource.Finish();
  s.consumer = who.Finish();
  s.util = util;
  return s;
}
}  // namespace

int main() {
  constexpr int64_t kMin = 60 * gpucost::kNanosPerSecond;

  // [JoinJobsToTelemetry]
  // DCGM saw GPU 0 of i-1 70 % busy for two minutes, with no job label;
  // sacct says job 42 held it for the first minute. The first minute becomes
  // job 42's, measured; the second stays a free (busy) GPU.
  const gpucost::UsageSamples telemetry = Samples({0, kMin}, {"", ""}, {0.7, 0.7}, kMin);
  const gpucost::UsageSamples jobs = Samples({0}, {"42"}, {1.0}, kMin);  // sacct: util assumed 1
  gpucost::JobJoinOptions options;
  options.interval_ns = kMin;
  absl::StatusOr<gpucost::JobJoin> joined = gpucost::JoinJobsToTelemetry(telemetry.columns(), jobs.columns(), options);
  CHECK_OK(joined);
  const gpucost::UsageSamples& out = joined->samples;  // the usage to allocate
  CHECK(out.size() == 2 && out.consumer.values[out.consumer.codes[0]] == "42" && out.util[0] == 0.7);
  CHECK(joined->origin[0] == 0 && joined->row[0] == 0);  // a piece of telemetry row 0
  const gpucost::JobJoinDiagnostics& diagnostics = joined->diagnostics;
  CHECK(diagnostics.samples_placed == 1 && diagnostics.samples_free == 1 && diagnostics.samples_assumed == 0);
  const gpucost::JobJoin::Jobs& per_job = joined->jobs;
  CHECK(per_job.consumer.values[per_job.consumer.codes[0]] == "42");
  CHECK(per_job.held_seconds[0] == 60 && per_job.measured_seconds[0] == 60 && per_job.assumed_seconds[0] == 0);
  const gpucost::JobJoin::Mismatches& mismatches = joined->mismatches;
  CHECK(mismatches.device.empty());  // no labelled telemetry of a job elsewhere
  // [JoinJobsToTelemetry]
  return 0;
}
