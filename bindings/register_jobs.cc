// Scheduler jobs joined to their GPUs' telemetry (io/job_join.h): two usage
// tables in as engine columns, the joined samples out as numpy arrays and
// (codes, values) string columns; the GIL is released while C++ joins.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpucost/io/job_join.h"
#include "numpy_views.h"
#include "status_to_python.h"
#include "tables.h"

namespace gpucost::python {

void RegisterJobs(py::module_& m) {
  m.def(
      "join_jobs",
      [](const py::dict& telemetry, const py::dict& jobs, int64_t interval_ns, bool exact_devices,
         int64_t tolerance_ns, int64_t job_shift_ns, std::vector<std::string> process_prefixes) {
        SampleHolder t(telemetry), j(jobs);
        JobJoinOptions options;
        options.interval_ns = interval_ns;
        options.exact_devices = exact_devices;
        options.tolerance_ns = tolerance_ns;
        options.job_shift_ns = job_shift_ns;
        options.process_prefixes = std::move(process_prefixes);
        absl::StatusOr<JobJoin> result;
        {
          py::gil_scoped_release release;
          result = JoinJobsToTelemetry(t.view(), j.view(), options);
        }
        JobJoin r = ValueOrThrow(std::move(result));
        py::dict usage;
        usage["timestamp"] = MoveToNumpy(std::move(r.samples.timestamp));
        usage["resource_id"] = EncodedToPython(std::move(r.samples.resource_id));
        usage["device"] = MoveToNumpy(std::move(r.samples.device));
        usage["consumer"] = EncodedToPython(std::move(r.samples.consumer));
        usage["share"] = MoveToNumpy(std::move(r.samples.share));
        usage["util"] = MoveToNumpy(std::move(r.samples.util));
        usage["mem_used"] = MoveToNumpy(std::move(r.samples.mem_used));
        usage["duration"] = MoveToNumpy(std::move(r.samples.duration));
        py::dict per_job;
        per_job["consumer"] = EncodedToPython(std::move(r.jobs.consumer));
        per_job["held_seconds"] = MoveToNumpy(std::move(r.jobs.held_seconds));
        per_job["measured_seconds"] = MoveToNumpy(std::move(r.jobs.measured_seconds));
        per_job["assumed_seconds"] = MoveToNumpy(std::move(r.jobs.assumed_seconds));
        per_job["labelled"] = MoveToNumpy(std::move(r.jobs.labelled));
        per_job["in_jobs"] = MoveToNumpy(std::move(r.jobs.in_jobs));
        py::dict mismatches;
        mismatches["consumer"] = EncodedToPython(std::move(r.mismatches.consumer));
        mismatches["resource_id"] = EncodedToPython(std::move(r.mismatches.resource_id));
        mismatches["device"] = MoveToNumpy(std::move(r.mismatches.device));
        mismatches["first_ns"] = MoveToNumpy(std::move(r.mismatches.first_ns));
        mismatches["last_ns"] = MoveToNumpy(std::move(r.mismatches.last_ns));
        mismatches["seconds"] = MoveToNumpy(std::move(r.mismatches.seconds));
        const JobJoinDiagnostics& d = r.diagnostics;
        py::dict diagnostics;
        diagnostics["telemetry_samples"] = d.telemetry_samples;
        diagnostics["job_samples"] = d.job_samples;
        diagnostics["samples_labelled"] = d.samples_labelled;
        diagnostics["samples_placed"] = d.samples_placed;
        diagnostics["samples_free"] = d.samples_free;
        diagnostics["samples_assumed"] = d.samples_assumed;
        diagnostics["free_job_samples_covered"] = d.free_job_samples_covered;
        py::dict out;
        out["usage"] = usage;
        out["origin"] = MoveToNumpy(std::move(r.origin));
        out["row"] = MoveToNumpy(std::move(r.row));
        out["jobs"] = per_job;
        out["mismatches"] = mismatches;
        out["diagnostics"] = diagnostics;
        return out;
      },
      py::arg("telemetry"), py::arg("jobs"), py::arg("interval_ns"), py::arg("exact_devices"),
      py::arg("tolerance_ns"), py::arg("job_shift_ns"), py::arg("process_prefixes"),
      "Scheduler jobs joined to their GPUs' telemetry (io/job_join.h).");
}

}  // namespace gpucost::python
