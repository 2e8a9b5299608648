// gpucost/io/hosts.h by example: nvidia-smi logs, Slurm accounting and
// Slurm node events, hosts without Kubernetes (run by ctest as
// cpp_example_hosts).
#include <string>
#include <string_view>
#include <vector>

#include "example_check.h"
#include "gpucost/io/hosts.h"
#include "gpucost/time.h"

int main() {
  constexpr int64_t kS = gpucost::kNanosPerSecond;
  const int64_t ten_utc = 1'772'445'600 * kS;  // 2026-03-02T10:00:00Z

  // [ParseLocalTime]
  // Host-local times, read in a named zone.
  CHECK(*gpucost::ParseLocalTime("2026/03/02 10:00:00.000", "UTC") == ten_utc);
  CHECK(*gpucost::ParseLocalTime("2026-03-02T11:00:00", "Europe/Paris") == ten_utc);
  CHECK(!gpucost::ParseLocalTime("2026/03/29 02:30:00", "Europe/Paris").ok());  // skipped by DST
  // [ParseLocalTime]

  // [NvidiaSmiToUsage]
  // `nvidia-smi --query-gpu=... --format=csv -l 60` and
  // `--query-compute-apps=...`: GPU 0 runs pid 7001 (job 42), GPU 1 is free.
  const std::string_view gpu_log =
      "timestamp, index, uuid, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n"
      "2026/03/02 10:00:00.101, 0, GPU-aaaa, NVIDIA L40S, 100 %, 40122 MiB, 46068 MiB\n"
      "2026/03/02 10:00:00.106, 1, GPU-bbbb, NVIDIA L40S, 0 %, 0 MiB, 46068 MiB\n"
      "2026/03/02 10:01:00.101, 0, GPU-aaaa, NVIDIA L40S, 90 %, 40122 MiB, 46068 MiB\n"
      "2026/03/02 10:01:00.106, 1, GPU-bbbb, NVIDIA L40S, 0 %, 0 MiB, 46068 MiB\n";
  const std::string_view app_log =
      "timestamp, gpu_uuid, pid, used_gpu_memory [MiB]\n"
      "2026/03/02 10:00:00.700, GPU-aaaa, 7001, 30180 MiB\n"
      "2026/03/02 10:01:00.700, GPU-aaaa, 7001, 30180 MiB\n";
  absl::StatusOr<gpucost::NvidiaSmiGpus> gpus = gpucost::ParseNvidiaSmiGpus(gpu_log, "gpu.csv", "UTC");
  CHECK_OK(gpus);
  CHECK(gpus->size() == 4 && gpus->util[0] == 1.0 && gpus->line[0] == 2);
  absl::StatusOr<gpucost::NvidiaSmiApps> apps = gpucost::ParseNvidiaSmiApps(app_log, "apps.csv", "UTC");
  CHECK_OK(apps);
  CHECK(apps->size() == 2 && apps->pid[0] == 7001);
  gpucost::NvidiaSmiOptions options{.resource_id = "i-0abc", .interval_seconds = 60,
                                    .pids = {7001}, .pid_jobs = {"job-42"}};
  absl::StatusOr<gpucost::NvidiaSmiUsage> usage = gpucost::NvidiaSmiToUsage(*gpus, &*apps, options);
  CHECK_OK(usage);
  const gpucost::UsageSamples& samples = usage->samples;
  CHECK(samples.size() == 4);
  for (size_t i = 0; i < samples.size(); ++i) {
    const std::string& who = samples.consumer.values[samples.consumer.codes[i]];
    CHECK(who == (samples.device[i] == 0 ? "job-42" : ""));
  }
  const gpucost::NvidiaSmiDiagnostics& diagnostics = usage->diagnostics;
  CHECK(diagnostics.gpu_readings == 4 && diagnostics.gpus == 2 && diagnostics.spacing_ns == 60 * kS);
  // [NvidiaSmiToUsage]

  // [ParseNvidiaSmiMon]
  // `nvidia-smi dmon -o DT` (pmon alike): GPUs named by index.
  const std::string_view dmon =
      "# Date       Time        gpu     sm    mem     fb\n"
      "# YYYYMMDD   HH:MM:SS    Idx      %      %     MB\n"
      " 20260302   10:00:00      0     83     42  38332\n"
      " 20260302   10:00:00      1      0      0      0\n";
  absl::StatusOr<gpucost::NvidiaSmiMon> mon = gpucost::ParseNvidiaSmiMon(dmon, "dmon.log", "UTC");
  CHECK_OK(mon);
  CHECK(!mon->pmon && mon->has_memory && mon->gpus.size() == 2 && mon->apps.size() == 0);
  CHECK(mon->gpus.uuid.values[mon->gpus.uuid.codes[0]] == "index:0" && mon->gpus.util[0] == 0.83);
  // [ParseNvidiaSmiMon]

  // [ExpandHostList]
  CHECK((*gpucost::ExpandHostList("gpu[01-03,07],login1") ==
         std::vector<std::string>{"gpu01", "gpu02", "gpu03", "gpu07", "login1"}));
  // [ExpandHostList]

  // [ParseSlurmGres]
  // What a TRES or GRES cell asks for.
  absl::StatusOr<gpucost::SlurmGres> tres = gpucost::ParseSlurmGres("cpu=8,gres/gpu:a100=2,gres/gpu=2,mem=64G");
  CHECK_OK(tres);
  CHECK(tres->gpus == 2 && !tres->per_node && tres->any());
  const gpucost::SlurmGres gres = *gpucost::ParseSlurmGres("gpu:a100:2(IDX:0-1)");
  CHECK(gres.per_node && (gres.indices == std::vector<int32_t>{0, 1}));
  CHECK(gpucost::ParseSlurmGres("gres/shard:2")->shards == 2);
  CHECK(!gpucost::ParseSlurmGres("cpu=8")->any());
  // [ParseSlurmGres]

  // [ParseSacct]
  // `sacct --parsable2`: job 2001 holds 4 GPUs of gpu01 for an hour (its
  // step is skipped); with the range and node_gpus, gpu01's other 4 GPUs
  // are free time, not unobserved.
  const std::string_view sacct =
      "JobID|JobIDRaw|User|Account|Partition|Start|End|State|NodeList|AllocTRES\n"
      "2001|2001|ana|llm|gpu|2026-03-02T10:00:00|2026-03-02T11:00:00|COMPLETED|gpu01|cpu=48,gres/gpu=4,node=1\n"
      "2001.batch|2001.batch|||gpu|2026-03-02T10:00:00|2026-03-02T11:00:00|COMPLETED|gpu01|cpu=48,gres/gpu=4\n";
  gpucost::SacctOptions sacct_options;
  sacct_options.range_start_ns = ten_utc;
  sacct_options.range_end_ns = ten_utc + gpucost::kNanosPerHour;
  sacct_options.node_gpus = {{"gpu01", 8}};
  absl::StatusOr<gpucost::SacctResult> jobs = gpucost::ParseSacct(sacct, "sacct.txt", sacct_options);
  CHECK_OK(jobs);
  CHECK(jobs->steps_skipped == 1 && jobs->workloads.size() == 1 && jobs->free_samples == 4);
  CHECK(jobs->samples.size() == 8);
  // Several exports read as one: a row repeated in an overlapping export is dropped.
  const std::vector<gpucost::SacctInput> inputs = {{.text = sacct, .source = "monday.txt"},
                                                   {.text = sacct, .source = "tuesday.txt"}};
  absl::StatusOr<gpucost::SacctResult> both = gpucost::ParseSacct(inputs, sacct_options);
  CHECK_OK(both);
  CHECK(both->rows_repeated == 1 && both->repeated_jobs == std::vector<std::string>{"2001"});
  CHECK(both->samples.size() == 8);
  // A job that ran on a GPU node without any GPU count: what it held cannot be known.
  const std::string_view no_gres =
      "JobID|User|Account|Start|End|State|NodeList|AllocTRES\n"
      "2002|bo|cv|2026-03-02T10:00:00|2026-03-02T10:30:00|COMPLETED|gpu01|cpu=8,node=1\n";
  const gpucost::SacctResult unknown = *gpucost::ParseSacct(no_gres, "sacct.txt", sacct_options);
  CHECK(unknown.jobs_unknown_gpus.size() == 1);
  const gpucost::SacctJobRef& job = unknown.jobs_unknown_gpus[0];
  CHECK(job.job == "2002" && job.line == 2 && job.nodes == std::vector<std::string>{"gpu01"});
  // GPU indices from outside sacct (scontrol show job -d's IDX): job 2001
  // held GPUs 4-7 of gpu01, not the first four free ones.
  gpucost::SacctOptions placed = sacct_options;
  placed.job_devices.push_back(gpucost::SacctOptions::JobDevices{
      .job = "2001", .node = "gpu01", .start = "", .where = "scontrol.txt line 1", .indices = {4, 5, 6, 7}});
  absl::StatusOr<gpucost::SacctResult> indexed = gpucost::ParseSacct(sacct, "sacct.txt", placed);
  CHECK_OK(indexed);
  CHECK(indexed->gpus_from_job_devices == 4 && indexed->jobs_idx_given == std::vector<std::string>{"2001"});
  // [ParseSacct]

  // [ParseSlurmEvents]
  // `sacctmgr show event -P`: down time per node (a host list is each node).
  const std::string_view events =
      "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n"
      "c1|gpu[01-02]|2026-03-02T10:00:00|2026-03-02T10:30:00|DOWN|bad nvlink|root(0)\n"
      "c1||2026-03-02T09:00:00|2026-03-02T09:05:00|||root(0)\n";
  gpucost::SlurmEventsOptions event_options;
  event_options.tz = "UTC";
  absl::StatusOr<gpucost::SlurmEvents> down = gpucost::ParseSlurmEvents(events, "events.txt", event_options);
  CHECK_OK(down);
  CHECK(down->size() == 2 && down->node[1] == "gpu02" && down->cluster_events == 1);
  CHECK(down->end[0] - down->start[0] == gpucost::kNanosPerHour / 2 && down->reason[0] == "bad nvlink");
  // [ParseSlurmEvents]
  return 0;
}
