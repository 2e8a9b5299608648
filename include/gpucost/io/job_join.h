// File: io/job_join.h
//
// Scheduler jobs joined to the telemetry of their GPUs (docs/telemetry.md,
// "Slurm jobs and their GPUs' telemetry"). Slurm accounting says who held a
// GPU (a job, its user and account) but not how busy it was; DCGM or
// nvidia-smi says how busy it was, and on bare metal usually not who. The
// join takes both as usage samples and gives one usage table in which, per
// GPU and instant:
//
//   - a telemetry sample whose consumer names a job (dcgm-exporter's
//     `hpc_job` label, read by the DCGM reader as the consumer) stays that
//     job's: its utilisation is measured. Only on nodes the job samples
//     know: elsewhere a consumer is some other workload (a Kubernetes pod),
//     left as it is;
//   - a telemetry sample with no job (consumer "" or a process "pid:N") is
//     cut at the job samples' edges on the same GPU (resource_id, device):
//     each piece a job held becomes that job's (share = the telemetry's
//     share x the job's, memory split by the jobs' shares, utilisation the
//     GPU's), the rest stays as it was (a free GPU);
//   - a job sample's time that no telemetry sample of its GPU covers stays a
//     job sample (utilisation assumed, as the scheduler's reader gave it);
//     for a job that a telemetry label places on a node, the time any GPU of
//     that node has telemetry is covered (the label, not the scheduler's
//     index, says which GPU it held).
//
// Job samples with consumer "" (free GPU time the scheduler's reader derived
// from an accounting range) are kept only where no telemetry covers their GPU.
// Every output sample carries a `duration`; a sample cut in pieces gives
// pieces that add up to it, so no GPU time is counted twice or lost.
//
// Example:
//   GPUCOST_ASSIGN_OR_RETURN(gpucost::JobJoin joined,
//                            gpucost::JoinJobsToTelemetry(dcgm.columns(), sacct.samples.columns(), {}));
//   // joined.samples: the usage to allocate; joined.jobs: per job, GPU-seconds measured and assumed.
#ifndef GPUCOST_IO_JOB_JOIN_H_
#define GPUCOST_IO_JOB_JOIN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpucost/columns.h"
#include "gpucost/io/usage.h"
#include "gpucost/time.h"

namespace gpucost {

struct JobJoinOptions {
  // What a telemetry sample stands for when the telemetry has no duration
  // column.
  int64_t interval_ns = 60 * kNanosPerSecond;
  // Telemetry consumers that name a process, not a job ("pid:4182" from an
  // nvidia-smi apps log without a pid -> job table): joined like a sample
  // with no job (the process's GPU time goes to the job holding the GPU).
  std::vector<std::string> process_prefixes = {"pid:"};
  // Whether the job samples' device indices are the scheduler's own (Slurm's
  // `IDX:` list): a labelled telemetry sample of a job on another GPU of the
  // node is then a mismatch. Otherwise (indices assigned in start order) only
  // the node is compared.
  bool exact_devices = false;
  // A labelled telemetry sample within this much of one of its job's samples
  // on the same node (or GPU) is consistent: prolog and epilog run a little
  // before and after the job's accounting times.
  int64_t tolerance_ns = 120 * kNanosPerSecond;
  // Added to every job sample's timestamp (the time-zone check joins the
  // same inputs at another UTC offset).
  int64_t job_shift_ns = 0;
};

struct JobJoinDiagnostics {
  int64_t telemetry_samples = 0;
  int64_t job_samples = 0;
  int64_t samples_labelled = 0;   // telemetry samples whose consumer named the job
  int64_t samples_placed = 0;     // pieces of telemetry samples given to the job holding their GPU
  int64_t samples_free = 0;       // pieces of telemetry samples no job held
  int64_t samples_assumed = 0;    // pieces of job samples no telemetry covered
  int64_t free_job_samples_covered = 0;  // pieces of free job samples dropped: telemetry covers them
};

struct JobJoin {
  UsageSamples samples;
  // Per output sample: 0 when it came from the telemetry, 1 from the job
  // samples, and its row there (to carry the other columns of its table).
  std::vector<uint8_t> origin;
  std::vector<int64_t> row;
  // One row per job (non-empty consumer of the job samples, and every job a
  // telemetry label names), share-weighted GPU-seconds.
  struct Jobs {
    EncodedStrings consumer;
    std::vector<double> held_seconds;      // its job samples
    std::vector<double> measured_seconds;  // telemetry joined to it (labelled or placed)
    std::vector<double> assumed_seconds;   // its job samples' time without telemetry
    std::vector<uint8_t> labelled;         // some telemetry sample's consumer names it
    std::vector<uint8_t> in_jobs;          // it has job samples
  } jobs;
  // Labelled telemetry of a job on a GPU (node, unless exact_devices) where
  // none of its job samples is at that time: one row per job, resource and
  // device, with the first sample's start, the last one's end and the
  // share-weighted GPU-seconds.
  struct Mismatches {
    EncodedStrings consumer, resource_id;
    std::vector<int32_t> device;
    std::vector<int64_t> first_ns, last_ns;
    std::vector<double> seconds;
  } mismatches;
  JobJoinDiagnostics diagnostics;
};

// Errors name the table ("telemetry" or "jobs"), the row and the column: a
// missing resource id, a non-positive duration.
[[nodiscard]] absl::StatusOr<JobJoin> JoinJobsToTelemetry(const SampleColumns& telemetry,
                                                          const SampleColumns& jobs,
                                                          const JobJoinOptions& options);

}  // namespace gpucost

#endif  // GPUCOST_IO_JOB_JOIN_H_
