#ifdef __linux__
#include <sched.h>
#endif

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <thread>

#include "gpucost/allocate.h"

namespace gpucost {
namespace {

// cgroup v2's "max 100000" (no limit) or "150000 100000" (1.5 cores): the
// quota rounded up, as a container given 1.5 cores runs two threads well.
int CgroupQuotaCores() {
  std::ifstream file("/sys/fs/cgroup/cpu.max");
  std::string quota;
  double period = 0;
  if (!(file >> quota >> period) || quota == "max" || !(period > 0)) return 0;
  const double cores = std::stod(quota) / period;
  return cores > 0 ? static_cast<int>(std::ceil(cores)) : 0;
}

}  // namespace

int AvailableCores() {
  int cores = 0;
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cores = CPU_COUNT(&set);
#endif
  if (cores <= 0) cores = static_cast<int>(std::thread::hardware_concurrency());
  try {
    if (const int quota = CgroupQuotaCores(); quota > 0) cores = std::min(cores, quota);
  } catch (...) {  // an unreadable quota limits nothing
  }
  return std::max(1, cores);
}

}  // namespace gpucost
