#include "gpucost/cores.h"

#ifdef __linux__
#include <sched.h>
#endif

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "gpucost/io/csv.h"

namespace gpucost {
namespace {

// At most this much of a cgroup or /proc file is read (they hold a line or
// a few dozen).
constexpr std::streamsize kMaxFileBytes = 1 << 20;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string_view Strip(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// The file's text (its first kMaxFileBytes), or nullopt when it cannot be
// opened.
std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file.is_open()) return std::nullopt;
  std::string text;
  char buffer[4096];
  while (file && static_cast<std::streamsize>(text.size()) < kMaxFileBytes) {
    file.read(buffer, sizeof(buffer));
    text.append(buffer, static_cast<size_t>(std::max<std::streamsize>(0, file.gcount())));
  }
  return text;
}

// os.path.join for the relative parts of a cgroup path.
std::string Join(std::string path, std::string_view part) {
  if (!path.empty() && path.back() != '/') path += '/';
  path += part;
  return path;
}

// Whole CPUs of a quota per period, rounded up; nullopt when either is not
// positive (v1's -1: no limit).
std::optional<int> Cpus(double quota, double period) {
  if (!(quota > 0) || !(period > 0)) return std::nullopt;
  const double cpus = std::ceil(quota / period);
  if (!(cpus < static_cast<double>(INT_MAX))) return INT_MAX;
  return std::max(1, static_cast<int>(cpus));
}

// cgroup v2: "max 100000" (no limit) or "<quota> <period>".
std::optional<int> V2Limit(const std::string& folder) {
  const std::optional<std::string> text = ReadFile(Join(folder, "cpu.max"));
  if (!text) return std::nullopt;
  std::vector<std::string_view> fields;
  std::string_view rest = Strip(*text);
  while (!rest.empty()) {
    size_t end = 0;
    while (end < rest.size() && !IsSpace(rest[end])) ++end;
    fields.push_back(rest.substr(0, end));
    rest = Strip(rest.substr(end));
  }
  double quota = 0;
  double period = 0;
  if (fields.size() != 2 || fields[0] == "max" || !io::ParseDouble(fields[0], &quota) ||
      !io::ParseDouble(fields[1], &period)) {
    return std::nullopt;
  }
  return Cpus(quota, period);
}

// cgroup v1: cpu.cfs_quota_us ("-1": no limit) over cpu.cfs_period_us.
std::optional<int> V1Limit(const std::string& folder) {
  const std::optional<std::string> quota_text = ReadFile(Join(folder, "cpu.cfs_quota_us"));
  const std::optional<std::string> period_text = ReadFile(Join(folder, "cpu.cfs_period_us"));
  double quota = 0;
  double period = 0;
  if (!quota_text || !period_text || !io::ParseDouble(Strip(*quota_text), &quota) ||
      !io::ParseDouble(Strip(*period_text), &period)) {
    return std::nullopt;
  }
  return Cpus(quota, period);
}

// The limits of the cgroup at `path` under `mount` and of each one above it.
template <typename Read>
void WalkUp(const std::string& mount, std::string_view path, Read read, std::vector<int>* limits) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    const size_t slash = path.find('/');
    const std::string_view part = path.substr(0, slash);
    if (!part.empty() && part != "..") parts.push_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  for (size_t depth = parts.size() + 1; depth-- > 0;) {
    std::string folder = mount;
    for (size_t i = 0; i < depth; ++i) folder = Join(std::move(folder), parts[i]);
    if (const std::optional<int> limit = read(folder)) limits->push_back(*limit);
  }
}

bool IsDirectory(const std::string& path) {
  std::error_code error;
  return std::filesystem::is_directory(path, error);
}

std::optional<int> CgroupCpuLimitOrThrow(std::string_view root_view, std::string_view proc_cgroup) {
  const std::string root(root_view);
  std::vector<std::string_view> lines;
  const std::optional<std::string> proc = ReadFile(std::string(proc_cgroup));
  if (proc) {
    std::string_view rest = *proc;
    while (!rest.empty()) {
      const size_t end = rest.find_first_of("\r\n");
      lines.push_back(rest.substr(0, end));
      if (end == std::string_view::npos) break;
      rest.remove_prefix(rest[end] == '\r' && end + 1 < rest.size() && rest[end + 1] == '\n' ? end + 2 : end + 1);
    }
  }
  std::vector<int> limits;
  for (const std::string_view line : lines) {
    // "hierarchy-id:controllers:path"; v2's one hierarchy has no controllers.
    const size_t first = line.find(':');
    const size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    const std::string_view controllers =
        first == std::string_view::npos ? std::string_view() : line.substr(first + 1, second - first - 1);
    const std::string_view path = second == std::string_view::npos ? std::string_view() : line.substr(second + 1);
    if (controllers.empty()) {
      WalkUp(root, path, V2Limit, &limits);
      continue;
    }
    bool has_cpu = false;
    for (std::string_view rest = controllers; !has_cpu;) {
      const size_t comma = rest.find(',');
      has_cpu = rest.substr(0, comma) == "cpu";
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    if (!has_cpu) continue;
    for (const std::string_view mount : {controllers, std::string_view("cpu"), std::string_view("cpu,cpuacct")}) {
      if (const std::string folder = Join(root, mount); IsDirectory(folder)) {
        WalkUp(folder, path, V1Limit, &limits);
        break;
      }
    }
  }
  if (lines.empty()) {  // no /proc/self/cgroup: the namespace root
    if (const std::optional<int> limit = V2Limit(root)) limits.push_back(*limit);
  }
  if (limits.empty()) return std::nullopt;
  return *std::min_element(limits.begin(), limits.end());
}

// The CPUs of this process's affinity mask; 0 where it cannot be read.
int AffinityCores() {
#ifdef __linux__
  // A fixed cpu_set_t holds 1024 CPUs; larger machines need a larger set.
  for (int cpus = CPU_SETSIZE; cpus <= (1 << 20); cpus *= 2) {
    cpu_set_t* set = CPU_ALLOC(cpus);
    if (set == nullptr) return 0;
    const size_t size = CPU_ALLOC_SIZE(cpus);
    CPU_ZERO_S(size, set);
    const int result = sched_getaffinity(0, size, set);
    const int error = errno;
    const int count = result == 0 ? CPU_COUNT_S(size, set) : 0;
    CPU_FREE(set);
    if (result == 0) return count;
    if (error != EINVAL) return 0;
  }
#endif
  return 0;
}

}  // namespace

std::optional<int> CgroupCpuLimit(std::string_view root, std::string_view proc_cgroup) {
  try {
    return CgroupCpuLimitOrThrow(root, proc_cgroup);
  } catch (...) {  // out of memory: an unreadable limit limits nothing
    return std::nullopt;
  }
}

int AvailableCores() {
  int cores = AffinityCores();
  if (cores <= 0) cores = static_cast<int>(std::thread::hardware_concurrency());
  if (const std::optional<int> limit = CgroupCpuLimit(); limit.has_value()) cores = std::min(cores, *limit);
  return std::max(1, cores);
}

}  // namespace gpucost
