// gpucost/cores.h by example: what `threads = 0` means (run by ctest as
// cpp_example_cores).
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "example_check.h"
#include "gpucost/cores.h"

int main() {
  // [AvailableCores]
  // The CPUs this process may use (affinity mask, capped by the cgroup limit).
  const int cores = gpucost::AvailableCores();
  CHECK(cores >= 1);
  std::printf("AvailableCores() = %d\n", cores);
  // [AvailableCores]

  // [CgroupCpuLimit]
  // The cgroup's CPU limit, rounded up; the parameters point at a fake tree
  // here: cgroup v2, 150000 us of every 100000 us = 1.5 CPUs -> 2.
  const std::filesystem::path root = std::filesystem::temp_directory_path() / "gpucost_example_cgroup";
  std::filesystem::create_directories(root / "kubepods" / "pod1");
  std::ofstream(root / "kubepods" / "pod1" / "cpu.max") << "150000 100000\n";
  std::ofstream(root / "proc_self_cgroup") << "0::/kubepods/pod1\n";
  const std::optional<int> limit =
      gpucost::CgroupCpuLimit(root.string(), (root / "proc_self_cgroup").string());
  CHECK(limit == 2);
  std::ofstream(root / "kubepods" / "pod1" / "cpu.max") << "max 100000\n";
  CHECK(!gpucost::CgroupCpuLimit(root.string(), (root / "proc_self_cgroup").string()).has_value());
  std::filesystem::remove_all(root);
  // [CgroupCpuLimit]
  return 0;
}
