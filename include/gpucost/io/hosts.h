// File: io/hosts.h
//
// Telemetry of hosts without Kubernetes:
// - nvidia-smi CSV logs: `--query-gpu=timestamp,index,uuid,name,utilization.gpu,
//   memory.used,memory.total --format=csv` (units in the header, e.g.
//   `utilization.gpu [%]`, and after values unless `nounits`) and
//   `--query-compute-apps=timestamp,gpu_uuid,pid,used_memory --format=csv`.
//   Timestamps are host-local `YYYY/MM/DD HH:MM:SS.mmm`, read in a named
//   time zone.
// - Slurm `sacct --parsable2` output: jobs, their nodes and what they hold
//   (`gres/gpu=N`, shares of a GPU by `gres/shard` and `gres/mps`), one or
//   several exports read as one (repeated rows dropped, requeues kept).
// - Slurm node events (`sacctmgr show event -P`): down time per node.
//
// Example:
//   GPUCOST_ASSIGN_OR_RETURN(auto gpus, gpucost::ParseNvidiaSmiGpus(text, "gpu.csv", "Europe/Paris"));
//   gpucost::NvidiaSmiOptions options{.resource_id = "i-0abc"};
//   GPUCOST_ASSIGN_OR_RETURN(auto usage, gpucost::NvidiaSmiToUsage(gpus, nullptr, options));
#ifndef GPUCOST_IO_HOSTS_H_
#define GPUCOST_IO_HOSTS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gpucost/columns.h"
#include "gpucost/io/usage.h"

namespace gpucost {

// Local civil time "YYYY/MM/DD HH:MM:SS[.fff]" (or with '-' and 'T', as
// sacct prints) in time zone `tz` (an IANA name such as "UTC" or
// "America/New_York") -> ns since the epoch. A local time repeated by a
// daylight-saving change resolves to the earlier instant unless that would
// go back before `not_before_ns` (logs are chronological); a skipped local
// time is an error.
[[nodiscard]] absl::StatusOr<int64_t> ParseLocalTime(std::string_view text, std::string_view tz,
                                                     int64_t not_before_ns = INT64_MIN);

struct NvidiaSmiGpus {
  std::vector<int64_t> timestamp;  // ns UTC
  std::vector<int32_t> index;
  EncodedStrings uuid, name;
  std::vector<double> util;       // 0-1
  std::vector<double> mem_used;   // bytes
  std::vector<double> mem_total;  // bytes (NaN when not logged)
  // The board's draw in W (power.draw, dmon's pwr); NaN when not logged or
  // not reported ([N/A]). Copied to every sample of the reading.
  std::vector<double> power_w;
  std::vector<int64_t> line;      // 1-based line in the log
  std::string source;
  [[nodiscard]] size_t size() const { return timestamp.size(); }
};

struct NvidiaSmiApps {
  std::vector<int64_t> timestamp;  // ns UTC
  EncodedStrings gpu_uuid;
  std::vector<int64_t> pid;
  std::vector<double> used_memory;  // bytes
  std::vector<int64_t> line;
  std::string source;
  [[nodiscard]] size_t size() const { return timestamp.size(); }
};

// Both need the header line (`--format=csv` or `csv,nounits`); several
// concatenated logs (repeated header lines) are fine.
[[nodiscard]] absl::StatusOr<NvidiaSmiGpus> ParseNvidiaSmiGpus(std::string_view text, std::string_view source,
                                                              std::string_view tz);
[[nodiscard]] absl::StatusOr<NvidiaSmiApps> ParseNvidiaSmiApps(std::string_view text, std::string_view source,
                                                              std::string_view tz);

// `nvidia-smi dmon -o DT [-s ...]` or `nvidia-smi pmon -o DT [-s um]` logs:
// whitespace columns named by a `# Date Time gpu ...` header line (a second
// `#` line gives units; headers may repeat), `-` for no value. dmon: one
// reading per GPU and instant, util from `sm` (%), memory from `fb` (MB,
// i.e. MiB) when logged. pmon: one row per process (or a `-` row for an idle
// GPU); the GPU reading of an instant is the sum of its processes' `sm`
// (capped at 100 %) and `fb`, and each process is an app of that GPU (its
// `fb`, 0 when not logged), as `--query-compute-apps` rows are. GPUs are
// named by index: `uuid` / `gpu_uuid` are "index:<N>", so a pmon log pairs
// with a dmon log of the same host, not with a --query-gpu log. Without the
// Date and Time columns (`-o DT`) the log cannot be placed in time: an error.
struct NvidiaSmiMon {
  NvidiaSmiGpus gpus;
  NvidiaSmiApps apps;      // pmon only
  bool pmon = false;
  bool has_memory = false;  // an `fb` column was logged
};
[[nodiscard]] absl::StatusOr<NvidiaSmiMon> ParseNvidiaSmiMon(std::string_view text, std::string_view source,
                                                            std::string_view tz);

struct NvidiaSmiOptions {
  std::string resource_id;        // the host's resource id in the bill
  // The logging interval (-l / -lms) as stated; each reading's duration
  // comes from the log (DurationsFromSeries in io/usage.h) and a stated
  // interval more than 2x away from the log's spacing is an error.
  std::optional<double> interval_seconds;
  // pid -> job (consumer). A pid not in the table is named "pid:<pid>".
  std::vector<int64_t> pids;
  std::vector<std::string> pid_jobs;
};

struct NvidiaSmiDiagnostics {
  int64_t gpu_readings = 0;
  int64_t app_rows = 0;
  int64_t app_rows_without_gpu_reading = 0;  // no GPU reading in their interval
  int64_t unknown_pids = 0;
  int64_t gpus = 0;         // GPU series (by index)
  int64_t spacing_ns = 0;   // median gap between a GPU's readings
  int64_t gaps = 0;         // readings followed by a gap over 1.25x the spacing
};

struct NvidiaSmiUsage {
  UsageSamples samples;
  NvidiaSmiDiagnostics diagnostics;
};

// One sample per GPU reading and job: the apps logged on that GPU at the
// apps log's instant nearest the reading, within half an interval (the
// stated one, else the longer of the two logs' spacings), are its consumers; k jobs
// share it 1/k each and each gets the GPU's utilisation and its own
// processes' memory. A reading with no app is a free GPU (consumer "").
[[nodiscard]] absl::StatusOr<NvidiaSmiUsage> NvidiaSmiToUsage(const NvidiaSmiGpus& gpus, const NvidiaSmiApps* apps,
                                                              const NvidiaSmiOptions& options);

// sacct --parsable2 (with its header line). Job steps (JobID with a '.')
// are skipped and counted; jobs that never started give workloads but no
// samples; a running job (End "Unknown") is charged until `now_ns`.
//
// What a job holds, per node, from the first of its columns that names GPUs:
// AllocTRES, then ReqTRES, then a Gres/AllocGRES/ReqGRES/TresPerNode column
// (ParseSlurmGres): whole GPUs (`gres/gpu`), shards (`gres/shard`: a share
// of one GPU, shards / the node's shards per GPU) or MPS (`gres/mps`: MPS
// units / the node's MPS units per GPU, 100 unless given). A shard or MPS
// job holds part of one GPU per node (Slurm's default; more than one GPU's
// worth is an error naming the job).
//
// Several exports are read as one (ParseSacct over `inputs`): a job row is
// keyed by JobIDRaw (JobID when the export has no JobIDRaw column). The rule
// for rows of one key:
// - rows that say the same (same run, nodes, GPUs, user and account) are one
//   row read twice: all but the first are dropped (`rows_repeated`);
// - rows of the same Start are one run seen at two moments: the later state
//   is kept (a finished row over a running one, then the later End, then the
//   row read last) and the others dropped (`rows_superseded`);
// - rows of different Starts are runs of a requeued job: each is kept, and
//   a run still going (or ending) after the next run's Start ends there
//   (`runs_cut`): one job never holds its GPUs twice at once.
// A repeated line equal to the header (an export appended to another) is
// skipped.
struct SacctOptions {
  std::string tz = "UTC";
  int64_t now_ns = INT64_MIN;  // required when a job is still running
  double util = 1.0;           // sacct has no utilisation: the allocated basis
  std::optional<int32_t> gpus_per_node;  // bounds the in-order assignment
  // The accounting range and each node's GPU count: with both, every GPU
  // of these nodes that no job held over part of [range_start_ns,
  // range_end_ns) gets empty-consumer samples for that time (one per free
  // stretch), so free time is idle, not unobserved. A job on a GPU index
  // beyond its node's count is an error. Without a range, the counts only
  // bound the placement and name the jobs that ran on GPU nodes without any
  // GPU (`jobs_unknown_gpus`).
  int64_t range_start_ns = 0;
  int64_t range_end_ns = 0;
  std::vector<std::pair<std::string, int32_t>> node_gpus;
  // Shared GPUs: gres/shard and gres/mps units per GPU, keyed by node (a
  // host list such as "gpu[01-04]" names each of its nodes), by partition,
  // or "*" for every node; a node's own count wins over its partition's,
  // and that over "*". A shard job on a node with no count is an error
  // naming the job; MPS counts default to 100 per GPU (a percentage).
  std::vector<std::pair<std::string, int32_t>> shards_per_gpu;
  std::vector<std::pair<std::string, int32_t>> mps_per_gpu;
  // GPU indices per job and node read elsewhere (`scontrol show job -d`'s
  // `Nodes=... GRES=gpu:2(IDX:0-1)` lines): used for a job row without an
  // IDX list of its own, matched by JobIDRaw or JobID and node (and Start,
  // when `start` is given: scontrol shows a requeued job's last run only).
  // `where` names the entry in errors ("scontrol.txt line 12").
  struct JobDevices {
    std::string job, node, start, where;
    std::vector<int32_t> indices;
  };
  std::vector<JobDevices> job_devices;
};

// One export: its text and its name in messages.
struct SacctInput {
  std::string_view text;
  std::string_view source;
};

// A job named in the result: where it was read and what it ran on.
struct SacctJobRef {
  std::string source;
  int64_t line = 0;
  std::string job, user, account, partition;
  std::vector<std::string> nodes;
  int64_t start = 0, end = 0;  // ns UTC
};

struct SacctResult {
  UsageSamples samples;
  WorkloadTable workloads;  // consumer = JobID; job, user, project (Account)
  int64_t steps_skipped = 0;
  int64_t jobs_without_gpus = 0;
  int64_t jobs_not_started = 0;
  int64_t gpus_assigned_in_order = 0;  // samples whose device index was assigned, not read
  int64_t gpus_from_job_devices = 0;   // samples whose device index came from job_devices
  // JobIDs whose GPU indices were read: from the row's IDX list, or from job_devices.
  std::vector<std::string> jobs_idx_sacct, jobs_idx_given;
  int64_t free_samples = 0;            // empty-consumer samples of GPUs no job held (node_gpus)
  int64_t nodes_without_gpu_count = 0;  // nodes jobs ran on that node_gpus does not list
  int64_t shared_jobs = 0;              // jobs holding shards or MPS (a share of a GPU)
  int64_t rows_repeated = 0;            // job rows read twice (the rule above), dropped
  int64_t rows_superseded = 0;          // rows replaced by a later state of the same run
  int64_t runs_cut = 0;                 // requeued runs ended at the next run's Start
  std::vector<std::string> repeated_jobs;    // JobIDs of the rows dropped as repeated, once each
  std::vector<std::string> superseded_jobs;  // JobIDs of the rows superseded or cut, once each
  // Started jobs without any GPU, shard or MPS count that ran on a node
  // node_gpus gives GPUs: what they held cannot be known (sacct without
  // gres in AccountingStorageTRES), so their time is free GPU time.
  std::vector<SacctJobRef> jobs_unknown_gpus;
};

// Expands a Slurm host list: "gpu[01-03,07],login1" -> gpu01 gpu02 gpu03 gpu07 login1.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> ExpandHostList(std::string_view list);

// What one TRES or GRES cell of sacct asks for, per kind. Items are
// comma-separated (commas inside parentheses belong to the item):
// - TRES totals over the job's nodes, `gres/NAME[:TYPE]=N` (AllocTRES,
//   ReqTRES: "cpu=8,gres/gpu:a100=2,gres/shard=4,mem=64G");
// - per-node counts, `[gres/]NAME[:TYPE][:N]` with an optional
//   `(IDX:0-1,3)` or `(S:0-1)` suffix (Gres, AllocGRES, ReqGRES, TresPerNode,
//   `--gres`: "gpu:a100:2(IDX:0-1)", "gres/shard:2", "mps:50"; no N is 1).
// An untyped count wins over typed ones of the same name (Slurm lists both);
// typed ones are summed when it is absent. Other items (cpu, mem, license,
// gres/gpumem, ...) are ignored.
struct SlurmGres {
  int64_t gpus = 0;    // whole GPUs
  int64_t shards = 0;  // gres/shard units
  int64_t mps = 0;     // gres/mps units
  bool per_node = false;  // the counts are per node (GRES form), not totals (TRES form)
  std::vector<int32_t> indices;  // an IDX list, when given
  [[nodiscard]] bool any() const { return gpus > 0 || shards > 0 || mps > 0; }
};
[[nodiscard]] absl::StatusOr<SlurmGres> ParseSlurmGres(std::string_view cell);

[[nodiscard]] absl::StatusOr<SacctResult> ParseSacct(std::span<const SacctInput> inputs, const SacctOptions& options);
[[nodiscard]] absl::StatusOr<SacctResult> ParseSacct(std::string_view text, std::string_view source,
                                                     const SacctOptions& options);

// Slurm node events, `sacctmgr show event -P` (or --parsable) with its
// header line: the default format `Cluster|NodeName|TimeStart|TimeEnd|State|
// Reason|User` or any format naming NodeName and TimeStart (or Start); TimeEnd (or End), State and Reason are optional. Times are the
// controller's local time like sacct's (`tz`; an offset or epoch seconds
// from SLURM_TIME_FORMAT win); an ongoing event (TimeEnd "Unknown", "None" or
// empty) ends at `now_ns` (an error naming the line without it). NodeName may
// be a host list ("gpu[01-03]"): one row per node. Cluster events (no node)
// are skipped and counted; so are events whose state `states` does not
// list (case-insensitive, compared with the state's words split on '+':
// "DOWN+DRAIN" matches "drain"), when it lists any. A Reason holding '|'
// (more fields than the header) keeps its '|'.
struct SlurmEventsOptions {
  std::string tz = "UTC";
  int64_t now_ns = INT64_MIN;
  std::vector<std::string> states;  // empty: every node event is down time
};

struct SlurmEvents {
  std::vector<std::string> node;   // one node per row
  std::vector<int64_t> start, end;  // ns UTC, start < end
  std::vector<std::string> state, reason;
  std::vector<int64_t> line;       // 1-based line of the event
  int64_t cluster_events = 0;      // skipped: no node
  int64_t other_states = 0;        // skipped: a state `states` does not list
  int64_t ongoing = 0;             // ended at now_ns
  int64_t empty = 0;               // skipped: End not after Start
  [[nodiscard]] size_t size() const { return node.size(); }
};
[[nodiscard]] absl::StatusOr<SlurmEvents> ParseSlurmEvents(std::string_view text, std::string_view source,
                                                          const SlurmEventsOptions& options);

}  // namespace gpucost

#endif  // GPUCOST_IO_HOSTS_H_
