// File: cores.h
//
// How many cores this process may use: what `threads = 0` means everywhere
// (the engine, gpucost.available_cores() in Python, the CLI's --threads 0).
//
// Example:
//   int cores = gpucost::AvailableCores();   // 3 in a container given --cpus 2.5
//   std::optional<int> limit = gpucost::CgroupCpuLimit();  // nullopt: no limit
#ifndef GPUCOST_CORES_H_
#define GPUCOST_CORES_H_

#include <optional>
#include <string_view>

namespace gpucost {

// The cores this process may run on: the CPUs of its affinity mask (taskset,
// numactl, Slurm and Kubernetes CPU pinning; all hardware threads where there
// is no affinity call, as on macOS), capped by CgroupCpuLimit(); at least 1.
// Never fails: whatever cannot be read limits nothing.
[[nodiscard]] int AvailableCores();

// The tightest CPU limit of the cgroups this process is in (its own and each
// one above it), as whole CPUs rounded up (a container given 1.5 CPUs runs two
// threads well); nullopt when there is none or no cgroup file system.
//   cgroup v2 (a "0::/path" line): <root>/<path>/cpu.max, "max 100000" is no
//     limit, "150000 100000" is 2;
//   cgroup v1 (a "n:cpu,cpuacct:/path" line): <root>/<controllers>/<path>/
//     cpu.cfs_quota_us / cpu.cfs_period_us (-1: none), under the hierarchy
//     named by the line, or "cpu" or "cpu,cpuacct";
//   `proc_cgroup` unreadable or empty: <root>/cpu.max (the namespace root).
// `root` and `proc_cgroup` are parameters for tests (fake trees in a folder).
[[nodiscard]] std::optional<int> CgroupCpuLimit(
    std::string_view root = "/sys/fs/cgroup",
    std::string_view proc_cgroup = "/proc/self/cgroup");

}  // namespace gpucost

#endif  // GPUCOST_CORES_H_
