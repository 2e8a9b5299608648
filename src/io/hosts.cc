// nvidia-smi CSV logs and Slurm sacct output -> usage samples and workloads.
#include "gpucost/io/hosts.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "gpucost/status.h"
#include "gpucost/time.h"

namespace gpucost {
namespace {

absl::string_view A(std::string_view s) { return {s.data(), s.size()}; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view line, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t end = line.find(sep, start);
    if (end == std::string_view::npos) {
      out.push_back(line.substr(start));
      return out;
    }
    out.push_back(line.substr(start, end - start));
    start = end + 1;
  }
}

template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// Lines of `text` with their 1-based numbers, skipping blank lines.
template <typename F>
absl::Status ForEachLine(std::string_view text, F&& f) {
  int64_t line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (Trim(line).empty()) continue;
    GPUCOST_RETURN_IF_ERROR(f(line_no, line));
  }
  return absl::OkStatus();
}

// A header field "memory.used [MiB]" -> ("memory.used", "MiB").
std::pair<std::string, std::string> HeaderField(std::string_view field) {
  field = Trim(field);
  std::string unit;
  const size_t open = field.rfind(" [");
  if (open != std::string_view::npos && field.back() == ']') {
    unit = std::string(field.substr(open + 2, field.size() - open - 3));
    field = field.substr(0, open);
  }
  return {std::string(field), unit};
}

struct CsvLayout {
  std::vector<std::pair<std::string, std::string>> fields;  // name, unit
  int Find(std::string_view name) const {
    for (size_t i = 0; i < fields.size(); ++i) {
      if (fields[i].first == name) return static_cast<int>(i);
    }
    return -1;
  }
};

absl::StatusOr<double> ParseQuantity(std::string_view raw, std::string_view unit, std::string_view source,
                                     int64_t line, std::string_view column, double scale) {
  std::string_view v = Trim(raw);
  if (!unit.empty() && v.size() > unit.size() && v.substr(v.size() - unit.size()) == unit) {
    v = Trim(v.substr(0, v.size() - unit.size()));
  }
  if (!v.empty() && v.front() == '[') {
    return LineError(source, line, column,
                     absl::StrCat("'", A(v), "': the value was not reported (MIG mode, or not supported)"));
  }
  double d;
  if (!ParseNumber(v, &d) || !std::isfinite(d)) {
    return LineError(source, line, column, absl::StrCat("'", A(Trim(raw)), "' is not a number"));
  }
  return d * scale;
}

absl::StatusOr<double> MemoryScale(std::string_view unit, std::string_view source, int64_t line,
                                   std::string_view column) {
  if (unit == "MiB") return 1024.0 * 1024.0;
  if (unit == "GiB") return 1024.0 * 1024.0 * 1024.0;
  if (unit == "KiB") return 1024.0;
  if (unit == "B" || unit == "bytes") return 1.0;
  return LineError(source, line, column,
                   absl::StrCat("unknown memory unit '", A(unit), "' in the header (expected MiB)"));
}

}  // namespace

absl::StatusOr<int64_t> ParseLocalTime(std::string_view text, std::string_view tz_name, int64_t not_before_ns) {
  std::string_view t = Trim(text);
  // YYYY/MM/DD HH:MM:SS[.fff] or YYYY-MM-DDTHH:MM:SS
  int64_t year;
  int month, day, hour, minute, second;
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat("'", A(t), "' is not a local time YYYY/MM/DD HH:MM:SS.mmm"));
  };
  if (t.size() < 19) return bad();
  const char ds = t[4];
  if ((ds != '/' && ds != '-') || t[7] != ds || (t[10] != ' ' && t[10] != 'T') || t[13] != ':' || t[16] != ':') {
    return bad();
  }
  if (!ParseNumber(t.substr(0, 4), &year) || !ParseNumber(t.substr(5, 2), &month) ||
      !ParseNumber(t.substr(8, 2), &day) || !ParseNumber(t.substr(11, 2), &hour) ||
      !ParseNumber(t.substr(14, 2), &minute) || !ParseNumber(t.substr(17, 2), &second)) {
    return bad();
  }
  int64_t frac_ns = 0;
  if (t.size() > 19) {
    if (t[19] != '.' || t.size() == 20 || t.size() > 29) return bad();
    std::string_view frac = t.substr(20);
    int64_t f;
    if (!ParseNumber(frac, &f)) return bad();
    for (size_t i = frac.size(); i < 9; ++i) f *= 10;
    frac_ns = f;
  }
  const absl::CivilSecond cs(year, month, day, hour, minute, second);
  if (cs.year() != year || cs.month() != month || cs.day() != day || cs.hour() != hour || cs.minute() != minute ||
      cs.second() != second) {
    return absl::InvalidArgumentError(absl::StrCat("'", A(t), "' is not a valid date and time"));
  }
  absl::TimeZone tz;
  if (!absl::LoadTimeZone(std::string(tz_name), &tz)) {
    return ParameterError("tz", absl::StrCat("unknown time zone '", A(tz_name), "'"));
  }
  const absl::TimeZone::TimeInfo info = tz.At(cs);
  // Outside the engine's instants (time.h) int64 nanoseconds overflow.
  if (info.pre < absl::FromUnixNanos(kMinInstant) || info.post >= absl::FromUnixNanos(kMaxInstant)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", A(t), "' is outside 1970-01-01..2200-01-01"));
  }
  absl::Time when;
  switch (info.kind) {
    case absl::TimeZone::TimeInfo::UNIQUE:
      when = info.pre;
      break;
    case absl::TimeZone::TimeInfo::SKIPPED:
      return absl::InvalidArgumentError(
          absl::StrCat("'", A(t), "' does not exist in ", A(tz_name), " (skipped by a daylight-saving change)"));
    case absl::TimeZone::TimeInfo::REPEATED: {
      // The earlier reading unless the log has already passed it.
      const int64_t pre = absl::ToUnixNanos(info.pre) + frac_ns;
      when = pre >= not_before_ns ? info.pre : info.post;
      break;
    }
  }
  return absl::ToUnixNanos(when) + frac_ns;
}

namespace {
// A data record of an nvidia-smi CSV log: a header was seen, the field count
// matches it, and its local timestamp reads (not before `last`).
absl::StatusOr<int64_t> RecordTime(const CsvLayout& layout, const std::vector<std::string_view>& cells, int c_ts,
                                   std::string_view tz, int64_t last, std::string_view source, int64_t line_no,
                                   std::string_view no_header) {
  if (layout.fields.empty()) return LineError(source, line_no, "timestamp", no_header);
  if (cells.size() != layout.fields.size()) {
    return LineError(source, line_no, layout.fields.back().first,
                     absl::StrCat(cells.size(), " fields where the header has ", layout.fields.size()));
  }
  absl::StatusOr<int64_t> ts = ParseLocalTime(cells[c_ts], tz, last);
  if (!ts.ok()) {
    if (ts.status().message().substr(0, 10) == "parameter ") return ts.status();
    return LineError(source, line_no, "timestamp", std::string(ts.status().message()));
  }
  return ts;
}
}  // namespace

absl::StatusOr<NvidiaSmiGpus> ParseNvidiaSmiGpus(std::string_view text, std::string_view source,
                                                 std::string_view tz) {
  NvidiaSmiGpus out;
  out.source = std::string(source);
  StringEncoder uuid, name;
  CsvLayout layout;
  int c_ts = -1, c_index = -1, c_uuid = -1, c_name = -1, c_util = -1, c_used = -1, c_total = -1, c_power = -1;
  double used_scale = 0, total_scale = 0;
  int64_t last = INT64_MIN;
  GPUCOST_RETURN_IF_ERROR(ForEachLine(text, [&](int64_t line_no, std::string_view line) -> absl::Status {
    std::vector<std::string_view> cells = Split(line, ',');
    if (Trim(cells[0]) == "timestamp" || Trim(cells[0]).substr(0, 5) == "index") {
      layout.fields.clear();
      for (std::string_view c : cells) layout.fields.push_back(HeaderField(c));
      c_ts = layout.Find("timestamp");
      c_index = layout.Find("index");
      c_uuid = layout.Find("uuid");
      c_name = layout.Find("name");
      c_util = layout.Find("utilization.gpu");
      c_used = layout.Find("memory.used");
      c_total = layout.Find("memory.total");
      // Drivers 535+ also know power.draw.instant / .average; power.draw is
      // the average over the last second on recent drivers.
      c_power = layout.Find("power.draw");
      if (c_power < 0) c_power = layout.Find("power.draw.instant");
      if (c_power < 0) c_power = layout.Find("power.draw.average");
      for (auto [col, what] : {std::pair{c_ts, "timestamp"}, {c_index, "index"}, {c_util, "utilization.gpu"},
                               {c_used, "memory.used"}}) {
        if (col < 0) return LineError(source, line_no, what, "missing from the header (see --query-gpu)");
      }
      if (layout.fields[c_util].second != "%") {
        return LineError(source, line_no, "utilization.gpu", "expected the unit [%] in the header");
      }
      GPUCOST_ASSIGN_OR_RETURN(used_scale, MemoryScale(layout.fields[c_used].second, source, line_no, "memory.used"));
      if (c_total >= 0) {
        GPUCOST_ASSIGN_OR_RETURN(total_scale,
                                 MemoryScale(layout.fields[c_total].second, source, line_no, "memory.total"));
      }
      return absl::OkStatus();
    }
    GPUCOST_ASSIGN_OR_RETURN(last, RecordTime(layout, cells, c_ts, tz, last, source, line_no,
                                              "no header line before the data (log with --format=csv, not noheader)"));
    int32_t index;
    if (!ParseNumber(Trim(cells[c_index]), &index) || index < 0) {
      return LineError(source, line_no, "index", absl::StrCat("'", A(Trim(cells[c_index])), "' is not a GPU index"));
    }
    GPUCOST_ASSIGN_OR_RETURN(double util, ParseQuantity(cells[c_util], "%", source, line_no, "utilization.gpu", 0.01));
    if (util < 0 || util > 1) {
      return LineError(source, line_no, "utilization.gpu", absl::StrCat(util * 100, " % is outside [0, 100]"));
    }
    GPUCOST_ASSIGN_OR_RETURN(double used, ParseQuantity(cells[c_used], layout.fields[c_used].second, source, line_no,
                                                        "memory.used", used_scale));
    if (used < 0) return LineError(source, line_no, "memory.used", "negative");
    double total = std::numeric_limits<double>::quiet_NaN();
    if (c_total >= 0) {
      GPUCOST_ASSIGN_OR_RETURN(total, ParseQuantity(cells[c_total], layout.fields[c_total].second, source, line_no,
                                                    "memory.total", total_scale));
    }
    double power = std::numeric_limits<double>::quiet_NaN();
    if (c_power >= 0 && Trim(cells[c_power]).front() != '[') {  // [N/A], [Not Supported]: not reported
      GPUCOST_ASSIGN_OR_RETURN(power, ParseQuantity(cells[c_power], "W", source, line_no, "power.draw", 1.0));
      if (power < 0) return LineError(source, line_no, "power.draw", "negative");
    }
    out.power_w.push_back(power);
    out.timestamp.push_back(last);
    out.index.push_back(index);
    uuid.Add(c_uuid >= 0 ? Trim(cells[c_uuid]) : std::string_view());
    name.Add(c_name >= 0 ? Trim(cells[c_name]) : std::string_view());
    out.util.push_back(util);
    out.mem_used.push_back(used);
    out.mem_total.push_back(total);
    out.line.push_back(line_no);
    return absl::OkStatus();
  }));
  out.uuid = uuid.Finish();
  out.name = name.Finish();
  return out;
}

absl::StatusOr<NvidiaSmiApps> ParseNvidiaSmiApps(std::string_view text, std::string_view source,
                                                 std::string_view tz) {
  NvidiaSmiApps out;
  out.source = std::string(source);
  StringEncoder uuid;
  CsvLayout layout;
  int c_ts = -1, c_uuid = -1, c_pid = -1, c_mem = -1;
  double scale = 0;
  int64_t last = INT64_MIN;
  GPUCOST_RETURN_IF_ERROR(ForEachLine(text, [&](int64_t line_no, std::string_view line) -> absl::Status {
    std::vector<std::string_view> cells = Split(line, ',');
    if (Trim(cells[0]) == "timestamp" || Trim(cells[0]) == "gpu_uuid" || Trim(cells[0]) == "pid") {
      layout.fields.clear();
      for (std::string_view c : cells) layout.fields.push_back(HeaderField(c));
      c_ts = layout.Find("timestamp");
      c_uuid = layout.Find("gpu_uuid");
      c_pid = layout.Find("pid");
      c_mem = layout.Find("used_gpu_memory");
      if (c_mem < 0) c_mem = layout.Find("used_memory");
      for (auto [col, what] : {std::pair{c_ts, "timestamp"}, {c_uuid, "gpu_uuid"}, {c_pid, "pid"},
                               {c_mem, "used_memory"}}) {
        if (col < 0) return LineError(source, line_no, what, "missing from the header (see --query-compute-apps)");
      }
      GPUCOST_ASSIGN_OR_RETURN(scale, MemoryScale(layout.fields[c_mem].second, source, line_no, "used_memory"));
      return absl::OkStatus();
    }
    GPUCOST_ASSIGN_OR_RETURN(last, RecordTime(layout, cells, c_ts, tz, last, source, line_no,
                                              "no header line before the data (log with --format=csv)"));
    int64_t pid;
    if (!ParseNumber(Trim(cells[c_pid]), &pid) || pid < 0) {
      return LineError(source, line_no, "pid", absl::StrCat("'", A(Trim(cells[c_pid])), "' is not a process id"));
    }
    GPUCOST_ASSIGN_OR_RETURN(double mem, ParseQuantity(cells[c_mem], layout.fields[c_mem].second, source, line_no,
                                                       "used_memory", scale));
    if (mem < 0) return LineError(source, line_no, "used_memory", "negative");
    out.timestamp.push_back(last);
    uuid.Add(Trim(cells[c_uuid]));
    out.pid.push_back(pid);
    out.used_memory.push_back(mem);
    out.line.push_back(line_no);
    return absl::OkStatus();
  }));
  out.gpu_uuid = uuid.Finish();
  return out;
}

absl::StatusOr<NvidiaSmiMon> ParseNvidiaSmiMon(std::string_view text, std::string_view source,
                                              std::string_view tz) {
  NvidiaSmiMon out;
  out.gpus.source = out.apps.source = std::string(source);
  StringEncoder gpu_uuid, gpu_name, app_uuid;
  int c_date = -1, c_time = -1, c_gpu = -1, c_pid = -1, c_sm = -1, c_fb = -1, c_pwr = -1;
  size_t columns = 0;
  size_t used_columns = 0;  // 1 + the last column read: a row must reach it
  int64_t last = INT64_MIN;
  // pmon: the reading being summed (one per GPU and instant).
  int64_t open_t = INT64_MIN;
  int32_t open_gpu = -1;
  const auto fields = [](std::string_view line) {
    std::vector<std::string_view> tokens;
    for (absl::string_view f : absl::StrSplit(absl::string_view(line.data(), line.size()), absl::ByAnyChar(" \t"),
                                              absl::SkipEmpty())) {
      tokens.emplace_back(f.data(), f.size());
    }
    return tokens;
  };
  // A cell: '-' is no value (0); otherwise a non-negative number.
  const auto number = [&](std::string_view cell, int64_t line_no, std::string_view column) -> absl::StatusOr<double> {
    if (cell == "-") return 0.0;
    double v;
    if (!ParseNumber(cell, &v) || !std::isfinite(v) || v < 0) {
      return LineError(source, line_no, column, absl::StrCat("'", A(cell), "' is not a number"));
    }
    return v;
  };
  GPUCOST_RETURN_IF_ERROR(ForEachLine(text, [&](int64_t line_no, std::string_view line) -> absl::Status {
    std::string_view t = Trim(line);
    if (t.front() == '#') {
      std::vector<std::string_view> head = fields(t.substr(1));
      if (head.empty() || (std::find(head.begin(), head.end(), "gpu") == head.end())) return absl::OkStatus();  // units
      const auto find = [&](std::string_view name) {
        auto it = std::find(head.begin(), head.end(), name);
        return it == head.end() ? -1 : static_cast<int>(it - head.begin());
      };
      c_date = find("Date");
      c_time = find("Time");
      c_gpu = find("gpu");
      c_pid = find("pid");
      c_sm = find("sm");
      c_fb = find("fb");
      c_pwr = find("pwr");  // dmon -s p: the board's draw in W
      columns = head.size();
      used_columns = static_cast<size_t>(std::max({c_date, c_time, c_gpu, c_pid, c_sm, c_fb}) + 1);
      out.pmon = c_pid >= 0;
      out.has_memory = c_fb >= 0;
      if (c_date < 0 || c_time < 0) {
        return LineError(source, line_no, "Date", "no Date and Time columns: log with -o DT to place readings in time");
      }
      if (c_sm < 0) return LineError(source, line_no, "sm", "missing from the header (log with -s u)");
      return absl::OkStatus();
    }
    if (columns == 0) return LineError(source, line_no, "Date", "no '# Date Time gpu ...' header line before the data");
    std::vector<std::string_view> cells = fields(t);
    // pmon's last column, the command, may hold spaces; every other column is one token.
    if (cells.size() < std::max(used_columns, columns - (out.pmon ? 1 : 0))) {
      return LineError(source, line_no, "gpu", absl::StrCat(cells.size(), " fields where the header has ", columns));
    }
    // -o D prints YYYYMMDD; some builds print YYYY/MM/DD.
    const std::string_view date = cells[c_date];
    std::string stamp;
    if (date.size() == 8) {
      stamp = absl::StrCat(A(date.substr(0, 4)), "/", A(date.substr(4, 2)), "/", A(date.substr(6, 2)), " ",
                           A(cells[c_time]));
    } else if (date.size() == 10) {
      stamp = absl::StrCat(A(date), " ", A(cells[c_time]));
    } else {
      return LineError(source, line_no, "Date", absl::StrCat("'", A(date), "' is not YYYYMMDD"));
    }
    absl::StatusOr<int64_t> ts = ParseLocalTime(stamp, tz, last);
    if (!ts.ok()) {
      if (ts.status().message().substr(0, 10) == "parameter ") return ts.status();
      return LineError(source, line_no, "Time", std::string(ts.status().message()));
    }
    last = *ts;
    int32_t gpu;
    if (!ParseNumber(cells[c_gpu], &gpu) || gpu < 0) {
      return LineError(source, line_no, "gpu", absl::StrCat("'", A(cells[c_gpu]), "' is not a GPU index"));
    }
    GPUCOST_ASSIGN_OR_RETURN(double sm, number(cells[c_sm], line_no, "sm"));
    double fb = 0;
    if (c_fb >= 0) {
      GPUCOST_ASSIGN_OR_RETURN(fb, number(cells[c_fb], line_no, "fb"));
    }
    if (!out.pmon && sm > 100) return LineError(source, line_no, "sm", absl::StrCat(sm, " % is outside [0, 100]"));
    fb *= 1024.0 * 1024.0;
    double power = std::numeric_limits<double>::quiet_NaN();
    if (c_pwr >= 0 && static_cast<size_t>(c_pwr) < cells.size() && cells[c_pwr] != "-") {
      GPUCOST_ASSIGN_OR_RETURN(power, number(cells[c_pwr], line_no, "pwr"));
    }
    const std::string uuid = absl::StrCat("index:", gpu);
    if (!out.pmon || open_t != last || open_gpu != gpu) {
      out.gpus.timestamp.push_back(last);
      out.gpus.index.push_back(gpu);
      gpu_uuid.Add(uuid);
      gpu_name.Add("");
      out.gpus.util.push_back(0);
      out.gpus.mem_used.push_back(0);
      out.gpus.mem_total.push_back(std::numeric_limits<double>::quiet_NaN());
      out.gpus.power_w.push_back(power);
      out.gpus.line.push_back(line_no);
      open_t = last;
      open_gpu = gpu;
    }
    // pmon sums its processes (several rows of one GPU and instant).
    out.gpus.util.back() = std::min(1.0, out.gpus.util.back() + sm / 100);
    out.gpus.mem_used.back() += fb;
    if (out.pmon && cells[c_pid] != "-") {
      int64_t pid;
      if (!ParseNumber(cells[c_pid], &pid) || pid < 0) {
        return LineError(source, line_no, "pid", absl::StrCat("'", A(cells[c_pid]), "' is not a process id"));
      }
      out.apps.timestamp.push_back(last);
      app_uuid.Add(uuid);
      out.apps.pid.push_back(pid);
      out.apps.used_memory.push_back(fb);
      out.apps.line.push_back(line_no);
    }
    return absl::OkStatus();
  }));
  if (columns == 0) return TableError(source, "no '# Date Time gpu ...' header line (an nvidia-smi dmon or pmon log)");
  out.gpus.uuid = gpu_uuid.Finish();
  out.gpus.name = gpu_name.Finish();
  out.apps.gpu_uuid = app_uuid.Finish();
  return out;
}

absl::StatusOr<NvidiaSmiUsage> NvidiaSmiToUsage(const NvidiaSmiGpus& gpus, const NvidiaSmiApps* apps,
                                                const NvidiaSmiOptions& options) {
  if (options.interval_seconds.has_value() &&
      (!(*options.interval_seconds > 0) || !(*options.interval_seconds <= 1e9))) {
    return ParameterError("interval", "must be a positive number of seconds");
  }
  if (options.resource_id.empty()) return ParameterError("resource_id", "must name the host's resource");
  if (options.pids.size() != options.pid_jobs.size()) return TableError("pid_jobs", "pid and job differ in length");
  NvidiaSmiUsage out;
  // Each GPU's readings in time order: their gaps give every reading its
  // duration and the log's spacing, which a stated interval must agree with.
  std::vector<int64_t> reading_duration(gpus.size());
  {
    std::vector<int32_t> order(gpus.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return gpus.index[a] != gpus.index[b] ? gpus.index[a] < gpus.index[b] : gpus.timestamp[a] < gpus.timestamp[b];
    });
    std::vector<int32_t> series(gpus.size());
    std::vector<int64_t> timestamp(gpus.size()), duration;
    for (size_t i = 0; i < order.size(); ++i) {
      series[i] = gpus.index[order[i]];
      timestamp[i] = gpus.timestamp[order[i]];
    }
    std::optional<int64_t> given;
    if (options.interval_seconds) given = std::llround(*options.interval_seconds * 1e9);
    GPUCOST_ASSIGN_OR_RETURN(SeriesSpacing spacing,
                             DurationsFromSeries(series, timestamp, given, 60'000'000'000, "interval",
                                                 [&](int32_t gpu) { return absl::StrCat(gpus.source, ": GPU ", gpu); },
                                                 &duration));
    for (size_t i = 0; i < order.size(); ++i) reading_duration[order[i]] = duration[i];
    out.diagnostics.gpus = spacing.series;
    out.diagnostics.spacing_ns = spacing.spacing_ns;
    out.diagnostics.gaps = spacing.gaps;
  }
  // Apps and readings are matched within half the stated interval, else
  // of the log's own spacing widened to the apps log's spacing when that one
  // logged less often (`--query-gpu -lms 500` beside `--query-compute-apps -l 1`).
  int64_t interval = options.interval_seconds ? std::llround(*options.interval_seconds * 1e9)
                     : out.diagnostics.spacing_ns > 0 ? out.diagnostics.spacing_ns
                                                      : 60'000'000'000;
  absl::flat_hash_map<int64_t, std::string> job_of;
  for (size_t i = 0; i < options.pids.size(); ++i) job_of[options.pids[i]] = options.pid_jobs[i];

  out.diagnostics.gpu_readings = static_cast<int64_t>(gpus.size());
  // uuid -> apps log instant -> job -> memory; uuids are matched by value.
  std::map<std::string, std::map<int64_t, std::map<std::string, double>>> jobs_at;
  if (apps != nullptr) {
    out.diagnostics.app_rows = static_cast<int64_t>(apps->size());
    for (size_t i = 0; i < apps->size(); ++i) {
      auto it = job_of.find(apps->pid[i]);
      std::string job;
      if (it != job_of.end()) {
        job = it->second;
      } else {
        job = absl::StrCat("pid:", apps->pid[i]);
        ++out.diagnostics.unknown_pids;
      }
      std::string uuid(apps->gpu_uuid.value_views[apps->gpu_uuid.codes[i]]);
      jobs_at[std::move(uuid)][apps->timestamp[i]][job] += apps->used_memory[i];
    }
  }
  // One apps log cycle prints its rows a few ms apart: instants of a GPU
  // closer than half the GPU log's interval are one cycle, keyed by its
  // first instant. The cycles' spacing widens the matching window.
  {
    std::vector<int64_t> gaps;
    for (auto& [uuid, by_time] : jobs_at) {
      std::map<int64_t, std::map<std::string, double>> cycles;
      auto current = cycles.end();
      int64_t last = INT64_MIN;
      for (auto& [t, jobs] : by_time) {
        if (current == cycles.end() || t - last > interval / 2) {
          if (current != cycles.end()) gaps.push_back(t - current->first);
          current = cycles.emplace(t, std::map<std::string, double>()).first;
        }
        for (const auto& [job, mem] : jobs) current->second[job] += mem;
        last = t;
      }
      by_time = std::move(cycles);
    }
    if (!options.interval_seconds && !gaps.empty()) {
      auto mid = gaps.begin() + static_cast<std::ptrdiff_t>((gaps.size() - 1) / 2);
      std::nth_element(gaps.begin(), mid, gaps.end());
      interval = std::max(interval, *mid);
    }
  }
  std::set<std::pair<std::string, int64_t>> matched;
  StringEncoder consumers;
  UsageSamples& u = out.samples;
  // The board's draw goes on every sample of its reading (SEMANTICS 9:
  // the whole device's draw), when the log has any.
  const bool has_power = std::any_of(gpus.power_w.begin(), gpus.power_w.end(), [](double w) { return !std::isnan(w); });
  for (size_t i = 0; i < gpus.size(); ++i) {
    std::string uuid(gpus.uuid.value_views[gpus.uuid.codes[i]]);
    // The apps log's nearest instant within half an interval: the two logs
    // are separate nvidia-smi loops, each drifting by its own jitter.
    const std::map<std::string, double>* jobs = nullptr;
    if (auto by_uuid = jobs_at.find(uuid); by_uuid != jobs_at.end() && !uuid.empty()) {
      const auto& by_time = by_uuid->second;
      const int64_t t = gpus.timestamp[i];
      auto best = by_time.end();
      int64_t best_dt = INT64_MAX;
      auto consider = [&](auto it) {
        const int64_t dt = it->first > t ? it->first - t : t - it->first;
        if (dt < best_dt) {
          best_dt = dt;
          best = it;
        }
      };
      auto hi = by_time.lower_bound(t);
      if (hi != by_time.end()) consider(hi);
      if (hi != by_time.begin()) consider(std::prev(hi));
      if (best != by_time.end() && best_dt <= interval / 2) {
        jobs = &best->second;
        matched.insert({uuid, best->first});
      }
    }
    auto emit = [&](std::string_view consumer, double share, double mem) {
      u.timestamp.push_back(gpus.timestamp[i]);
      u.resource_id.codes.push_back(0);
      u.device.push_back(gpus.index[i]);
      consumers.Add(consumer);
      u.share.push_back(share);
      u.util.push_back(gpus.util[i]);
      u.mem_used.push_back(mem);
      u.duration.push_back(reading_duration[i]);
      if (has_power) u.power_w.push_back(gpus.power_w[i]);
    };
    if (jobs == nullptr) {
      emit("", 1.0, gpus.mem_used[i]);
      continue;
    }
    const double k = static_cast<double>(jobs->size());
    for (const auto& [job, mem] : *jobs) emit(job, 1.0 / k, mem);
  }
  for (const auto& [uuid, by_time] : jobs_at) {
    for (const auto& [t, jobs] : by_time) {
      if (!matched.contains({uuid, t})) out.diagnostics.app_rows_without_gpu_reading += static_cast<int64_t>(jobs.size());
    }
  }
  u.resource_id.values = {options.resource_id};
  u.resource_id.value_views.assign(u.resource_id.values.begin(), u.resource_id.values.end());
  if (u.size() == 0) u.resource_id = EncodedStrings();
  u.consumer = consumers.Finish();
  return out;
}

absl::StatusOr<std::vector<std::string>> ExpandHostList(std::string_view list) {
  std::vector<std::string> out;
  // Split on commas outside brackets.
  std::vector<std::string_view> tokens;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    if (i == list.size() || (list[i] == ',' && depth == 0)) {
      if (i > start) tokens.push_back(list.substr(start, i - start));
      start = i + 1;
    } else if (list[i] == '[') {
      ++depth;
    } else if (list[i] == ']') {
      if (--depth < 0) return absl::InvalidArgumentError(absl::StrCat("host list '", A(list), "': unbalanced ']'"));
    }
  }
  if (depth != 0) return absl::InvalidArgumentError(absl::StrCat("host list '", A(list), "': unbalanced '['"));
  for (std::string_view token : tokens) {
    std::vector<std::string> partial = {""};
    size_t i = 0;
    while (i < token.size()) {
      const size_t open = token.find('[', i);
      if (open == std::string_view::npos) {
        for (std::string& p : partial) p.append(token.substr(i));
        break;
      }
      for (std::string& p : partial) p.append(token.substr(i, open - i));
      const size_t close = token.find(']', open);
      std::vector<std::string> expanded;
      for (std::string_view range : Split(token.substr(open + 1, close - open - 1), ',')) {
        const size_t dash = range.find('-');
        std::string_view lo_s = range.substr(0, dash), hi_s = dash == std::string_view::npos ? lo_s : range.substr(dash + 1);
        int64_t lo, hi;
        if (!ParseNumber(lo_s, &lo) || !ParseNumber(hi_s, &hi) || hi < lo || hi - lo > 100000) {
          return absl::InvalidArgumentError(absl::StrCat("host list '", A(list), "': bad range '", A(range), "'"));
        }
        const size_t width = lo_s.size();
        for (int64_t n = lo;; ++n) {  // ends at hi without stepping past it (hi may be INT64_MAX)
          std::string num = absl::StrCat(n);
          if (num.size() < width) num.insert(0, width - num.size(), '0');
          expanded.push_back(std::move(num));
          if (n == hi) break;
        }
      }
      // Brackets multiply ("n[1-1000]-[1-1000]" is a million hosts): bound
      // the whole list, as one range is bounded above.
      constexpr size_t kMaxHosts = 100000;
      if (partial.size() * expanded.size() + out.size() > kMaxHosts) {
        return absl::InvalidArgumentError(
            absl::StrCat("host list '", A(list), "': expands to more than ", kMaxHosts, " hosts"));
      }
      std::vector<std::string> next;
      for (const std::string& p : partial) {
        for (const std::string& e : expanded) next.push_back(p + e);
      }
      partial = std::move(next);
      i = close + 1;
    }
    for (std::string& p : partial) out.push_back(std::move(p));
  }
  return out;
}

namespace {

// "0-1,3" -> {0, 1, 3}
bool ParseIndexList(std::string_view s, std::vector<int32_t>* out) {
  for (std::string_view part : Split(s, ',')) {
    const size_t dash = part.find('-');
    int32_t lo, hi;
    if (!ParseNumber(part.substr(0, dash), &lo)) return false;
    hi = lo;
    if (dash != std::string_view::npos && !ParseNumber(part.substr(dash + 1), &hi)) return false;
    if (hi < lo || hi - lo > 1024) return false;
    for (int32_t i = lo; i <= hi; ++i) out->push_back(i);
  }
  return true;
}

// A sacct time. SLURM_TIME_FORMAT decides how sacct prints it: the default
// "2025-03-01T10:00:00" is the controller's local time (`tz`); a format with
// %z ("...T10:00:00+0100", "+01:00", "Z") states its own offset, which wins
// over `tz` (and reads a daylight-saving change unambiguously); "%s" prints
// Unix seconds.
absl::StatusOr<int64_t> ParseSacctTime(std::string_view text, std::string_view tz) {
  const std::string_view t = Trim(text);
  int64_t epoch;
  if (!t.empty() && t.size() <= 12 && ParseNumber(t, &epoch)) {
    if (epoch < kMinInstant / 1000000000 || epoch >= kMaxInstant / 1000000000) {
      return absl::InvalidArgumentError(absl::StrCat("'", A(t), "' is outside 1970-01-01..2200-01-01"));
    }
    return epoch * 1000000000;
  }
  if (t.size() > 19) {
    std::string_view local = t, offset;
    if (t.back() == 'Z') {
      local = t.substr(0, t.size() - 1);
      offset = "Z";
    } else if (const size_t sign = t.find_last_of("+-"); sign != std::string_view::npos && sign >= 19) {
      local = t.substr(0, sign);
      offset = t.substr(sign);
    }
    if (!offset.empty()) {
      int64_t seconds = 0;
      if (offset != "Z") {
        std::string digits;
        for (char c : offset.substr(1)) {
          if (c != ':') digits.push_back(c);
        }
        int64_t hh, mm;
        if (digits.size() != 4 || !ParseNumber(std::string_view(digits).substr(0, 2), &hh) ||
            !ParseNumber(std::string_view(digits).substr(2, 2), &mm) || hh > 14 || mm > 59) {
          return absl::InvalidArgumentError(absl::StrCat("'", A(t), "': '", A(offset), "' is not a UTC offset"));
        }
        seconds = (offset[0] == '-' ? -1 : 1) * (hh * 3600 + mm * 60);
      }
      absl::StatusOr<int64_t> utc = ParseLocalTime(local, "UTC");
      if (!utc.ok()) return utc;
      const int64_t when = *utc - seconds * 1000000000;
      if (when < kMinInstant || when >= kMaxInstant) {
        return absl::InvalidArgumentError(absl::StrCat("'", A(t), "' is outside 1970-01-01..2200-01-01"));
      }
      return when;
    }
  }
  return ParseLocalTime(t, tz);
}

// Items of a TRES/GRES cell: split on commas outside parentheses.
std::vector<std::string_view> GresItems(std::string_view cell) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= cell.size(); ++i) {
    if (i == cell.size() || (cell[i] == ',' && depth == 0)) {
      const std::string_view item = Trim(cell.substr(start, i - start));
      if (!item.empty()) out.push_back(item);
      start = i + 1;
    } else if (cell[i] == '(') {
      ++depth;
    } else if (cell[i] == ')' && depth > 0) {
      --depth;
    }
  }
  return out;
}

// Per name: the untyped count, the typed counts' sum, whether an untyped one was given.
struct GresSum {
  int64_t untyped = 0, typed = 0;
  bool has_untyped = false;
  [[nodiscard]] int64_t value() const { return has_untyped ? untyped : typed; }
};

// Slurm's node event states that are down time unless the caller lists others.
bool StateListed(std::string_view state, const std::vector<std::string>& states) {
  if (states.empty()) return true;
  for (std::string_view word : Split(state, '+')) {
    word = Trim(word);
    while (!word.empty() && (word.back() == '*' || word.back() == '~' || word.back() == '#' || word.back() == '!' ||
                             word.back() == '%' || word.back() == '$' || word.back() == '@' || word.back() == '^' ||
                             word.back() == '-')) {
      word.remove_suffix(1);  // sinfo-style state suffixes (not responding, powered off, ...)
    }
    for (const std::string& s : states) {
      if (absl::EqualsIgnoreCase(A(word), s)) return true;
    }
  }
  return false;
}

std::string FormatUtc(int64_t ns) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::FromUnixNanos(ns), absl::UTCTimeZone());
}

// "a, b, c and 2 more"
std::string SomeIds(const std::vector<std::string>& ids, size_t most = 3) {
  std::string out;
  for (size_t i = 0; i < ids.size() && i < most; ++i) absl::StrAppend(&out, i ? ", " : "", ids[i]);
  if (ids.size() > most) absl::StrAppend(&out, " and ", ids.size() - most, " more");
  return out;
}

// One job row of an export, read.
struct SacctRow {
  size_t input = 0;
  int64_t line = 0;
  std::string key, id, user, account, partition;
  std::string start_text, end_text, nodes_text;  // as written (rows not started compare by these)
  bool started = false, running = false;
  int64_t start = 0, end = 0;
  std::vector<std::string> nodes;
  SlurmGres gres;          // per node (converted from TRES totals)
  std::string gres_column;  // the column the counts came from
  bool kept = true;
};

bool SameMeaning(const SacctRow& a, const SacctRow& b) {
  if (a.id != b.id || a.user != b.user || a.account != b.account || a.started != b.started ||
      a.running != b.running || a.nodes_text != b.nodes_text) {
    return false;
  }
  if (a.started ? (a.start != b.start || (!a.running && a.end != b.end)) : (a.start_text != b.start_text)) return false;
  return a.gres.gpus == b.gres.gpus && a.gres.shards == b.gres.shards && a.gres.mps == b.gres.mps &&
         a.gres.indices == b.gres.indices;
}

// The later state of one run: finished over running, then the later End, then the row read last.
bool LaterState(const SacctRow& a, const SacctRow& b) {
  if (a.running != b.running) return !a.running;
  if (!a.running && a.end != b.end) return a.end > b.end;
  return std::pair(a.input, a.line) > std::pair(b.input, b.line);
}

// A count per node, by node, partition or "*".
class CountsPerGpu {
 public:
  static absl::StatusOr<CountsPerGpu> Make(const std::vector<std::pair<std::string, int32_t>>& given,
                                           std::string_view parameter) {
    CountsPerGpu out;
    for (const auto& [key, count] : given) {
      if (count <= 0) return ParameterError(parameter, absl::StrCat("'", key, "': ", count, " is not a positive count"));
      if (key == "*") {
        out.every_ = count;
        continue;
      }
      out.by_name_[key] = count;  // a partition, or a node
      if (key.find('[') != std::string::npos || key.find(',') != std::string::npos) {
        absl::StatusOr<std::vector<std::string>> nodes = ExpandHostList(key);
        if (!nodes.ok()) return ParameterError(parameter, std::string(nodes.status().message()));
        for (const std::string& node : *nodes) out.by_name_[node] = count;
      }
    }
    return out;
  }
  [[nodiscard]] std::optional<int32_t> Find(const std::string& node, const std::string& partition) const {
    if (auto it = by_name_.find(node); it != by_name_.end()) return it->second;
    if (auto it = by_name_.find(partition); it != by_name_.end()) return it->second;
    return every_;
  }

 private:
  std::map<std::string, int32_t, std::less<>> by_name_;
  std::optional<int32_t> every_;
};

// Who holds a GPU: until when, how much of it, which job (index in the kept rows).
struct Hold {
  int64_t end;
  double share;
  size_t job;
};

}  // namespace

absl::StatusOr<SlurmGres> ParseSlurmGres(std::string_view cell) {
  SlurmGres out;
  GresSum gpu, shard, mps;
  bool totals = false, per_node = false;
  for (std::string_view item : GresItems(cell)) {
    std::string_view core = item, suffix;
    if (const size_t open = item.find('('); open != std::string_view::npos) {
      core = Trim(item.substr(0, open));
      suffix = item.substr(open);
    }
    std::string_view name;
    std::string_view type;
    int64_t count = 1;
    bool total = false;
    if (const size_t eq = core.find('='); eq != std::string_view::npos) {  // TRES: gres/NAME[:TYPE]=N
      std::string_view key = core.substr(0, eq);
      if (key.substr(0, 5) != "gres/") continue;
      key.remove_prefix(5);
      const size_t colon = key.find(':');
      name = key.substr(0, colon);
      if (colon != std::string_view::npos) type = key.substr(colon + 1);
      if (name != "gpu" && name != "shard" && name != "mps") continue;
      if (!ParseNumber(Trim(core.substr(eq + 1)), &count) || count < 0) {
        return absl::InvalidArgumentError(absl::StrCat("'", A(item), "' is not a count"));
      }
      total = true;
    } else {  // GRES: [gres/|gres:]NAME[:TYPE][:N]
      std::string_view rest = core;
      if (rest.substr(0, 5) == "gres/" || rest.substr(0, 5) == "gres:") rest.remove_prefix(5);
      std::vector<std::string_view> parts = Split(rest, ':');
      name = parts[0];
      if (name != "gpu" && name != "shard" && name != "mps") continue;
      if (parts.size() >= 2) {
        int64_t n;
        if (ParseNumber(parts.back(), &n)) {
          if (n < 0) return absl::InvalidArgumentError(absl::StrCat("'", A(item), "' is not a count"));
          count = n;
          parts.pop_back();
        }
        if (parts.size() >= 2) type = parts[1];
      }
    }
    (total ? totals : per_node) = true;
    GresSum& sum = name == "gpu" ? gpu : name == "shard" ? shard : mps;
    if (count > (int64_t{1} << 40)) return absl::InvalidArgumentError(absl::StrCat("'", A(item), "': count too large"));
    if (type.empty()) {
      sum.untyped += count;
      sum.has_untyped = true;
    } else {
      sum.typed += count;
    }
    if (const size_t idx = suffix.find("IDX:"); idx != std::string_view::npos) {
      const size_t close = suffix.find(')', idx);
      if (close == std::string_view::npos || !ParseIndexList(suffix.substr(idx + 4, close - idx - 4), &out.indices)) {
        return absl::InvalidArgumentError(absl::StrCat("'", A(item), "': bad IDX list"));
      }
    }
  }
  if (totals && per_node) {
    return absl::InvalidArgumentError(absl::StrCat("'", A(cell), "' mixes totals (gres/NAME=N) and per-node counts"));
  }
  out.gpus = gpu.value();
  out.shards = shard.value();
  out.mps = mps.value();
  out.per_node = per_node;
  return out;
}

absl::StatusOr<SacctResult> ParseSacct(std::string_view text, std::string_view source, const SacctOptions& options) {
  const SacctInput input{text, source};
  return ParseSacct(std::span<const SacctInput>(&input, 1), options);
}

absl::StatusOr<SacctResult> ParseSacct(std::span<const SacctInput> inputs, const SacctOptions& options) {
  if (!(options.util >= 0 && options.util <= 1)) return ParameterError("util", "must be in [0, 1]");
  GPUCOST_ASSIGN_OR_RETURN(const CountsPerGpu shards_per_gpu,
                           CountsPerGpu::Make(options.shards_per_gpu, "shards_per_gpu"));
  GPUCOST_ASSIGN_OR_RETURN(const CountsPerGpu mps_per_gpu, CountsPerGpu::Make(options.mps_per_gpu, "mps_per_gpu"));
  std::map<std::string, int32_t, std::less<>> gpus_of;  // node -> GPU count (node_gpus)
  for (const auto& [node, count] : options.node_gpus) {
    if (count < 0) return ParameterError("node_gpus", absl::StrCat("node ", node, ": negative GPU count"));
    gpus_of[node] = count;
  }
  SacctResult out;
  std::vector<SacctRow> rows;

  // 1. Every job row of every export.
  for (size_t in = 0; in < inputs.size(); ++in) {
    const std::string_view source = inputs[in].source;
    std::vector<std::string> header;
    int c_id = -1, c_raw = -1, c_user = -1, c_account = -1, c_partition = -1, c_start = -1, c_end = -1, c_nodes = -1,
        c_tres = -1, c_req = -1, c_gres = -1;
    GPUCOST_RETURN_IF_ERROR(ForEachLine(inputs[in].text, [&](int64_t line_no, std::string_view line) -> absl::Status {
      std::vector<std::string_view> cells = Split(line, '|');
      if (header.empty()) {
        for (std::string_view c : cells) header.emplace_back(Trim(c));
        auto find = [&](std::string_view name) {
          for (size_t i = 0; i < header.size(); ++i) {
            if (header[i] == name) return static_cast<int>(i);
          }
          return -1;
        };
        c_id = find("JobID");
        c_raw = find("JobIDRaw");
        c_user = find("User");
        c_account = find("Account");
        c_partition = find("Partition");
        c_start = find("Start");
        c_end = find("End");
        c_nodes = find("NodeList");
        c_tres = find("AllocTRES");
        c_req = find("ReqTRES");
        for (const char* g : {"AllocGRES", "Gres", "GRES", "TresPerNode", "ReqGRES"}) {
          if (c_gres < 0) c_gres = find(g);
        }
        for (auto [col, what] : {std::pair{c_id, "JobID"}, {c_user, "User"}, {c_account, "Account"},
                                 {c_start, "Start"}, {c_end, "End"}, {c_nodes, "NodeList"}, {c_tres, "AllocTRES"}}) {
          if (col < 0) return LineError(source, line_no, what, "missing from the header (sacct --parsable2 -o ...)");
        }
        return absl::OkStatus();
      }
      // --parsable (not 2) ends every line with a '|'.
      if (cells.size() == header.size() + 1 && cells.back().empty()) cells.pop_back();
      if (cells.size() != header.size()) {
        return LineError(source, line_no, header.back(),
                         absl::StrCat(cells.size(), " fields where the header has ", header.size()));
      }
      if (Trim(cells[c_id]) == "JobID" && Trim(cells[c_tres]) == "AllocTRES") return absl::OkStatus();  // appended export
      const std::string_view id = Trim(cells[c_id]);
      if (id.empty()) return LineError(source, line_no, "JobID", "empty");
      if (id.find('.') != std::string_view::npos) {
        ++out.steps_skipped;
        return absl::OkStatus();
      }
      SacctRow row;
      row.input = in;
      row.line = line_no;
      row.id = std::string(id);
      row.key = c_raw >= 0 && !Trim(cells[c_raw]).empty() ? std::string(Trim(cells[c_raw])) : row.id;
      row.user = std::string(Trim(cells[c_user]));
      row.account = std::string(Trim(cells[c_account]));
      if (c_partition >= 0) row.partition = std::string(Trim(cells[c_partition]));
      row.start_text = std::string(Trim(cells[c_start]));
      row.end_text = std::string(Trim(cells[c_end]));
      row.nodes_text = std::string(Trim(cells[c_nodes]));
      // What it holds: AllocTRES, else ReqTRES, else a GRES column.
      for (int col : {c_tres, c_req, c_gres}) {
        if (col < 0) continue;
        absl::StatusOr<SlurmGres> g = ParseSlurmGres(cells[col]);
        if (!g.ok()) return LineError(source, line_no, header[col], std::string(g.status().message()));
        if (g->any()) {
          row.gres = std::move(*g);
          row.gres_column = header[col];
          break;
        }
      }
      if (row.gres.indices.empty() && c_gres >= 0 && row.gres_column != header[c_gres]) {
        absl::StatusOr<SlurmGres> g = ParseSlurmGres(cells[c_gres]);  // IDX beside AllocTRES's counts
        if (!g.ok()) return LineError(source, line_no, header[c_gres], std::string(g.status().message()));
        row.gres.indices = std::move(g->indices);
      }
      const bool gpu_job = row.gres.any();
      const std::string_view start_s = row.start_text, end_s = row.end_text;
      row.started = !(start_s == "Unknown" || start_s == "None" || start_s.empty());
      if (row.started) {
        absl::StatusOr<int64_t> start = ParseSacctTime(start_s, options.tz);
        if (!start.ok()) {
          if (!gpu_job) {
            row.started = false;  // nothing to charge: its time does not matter
          } else {
            if (start.status().message().substr(0, 10) == "parameter ") return start.status();
            return LineError(source, line_no, "Start", std::string(start.status().message()));
          }
        } else {
          row.start = *start;
        }
      }
      if (row.started) {
        if (end_s == "Unknown" || end_s == "None" || end_s.empty()) {
          row.running = true;
          if (options.now_ns == INT64_MIN) {
            if (gpu_job) {
              return LineError(source, line_no, "End", "the job is still running: pass `now` to charge it until then");
            }
            row.end = row.start;
          } else {
            row.end = options.now_ns;
          }
        } else {
          absl::StatusOr<int64_t> end = ParseSacctTime(end_s, options.tz);
          if (!end.ok()) {
            if (gpu_job) return LineError(source, line_no, "End", std::string(end.status().message()));
            row.end = row.start;
          } else {
            row.end = *end;
          }
        }
        if (row.end < row.start) {
          if (gpu_job) return LineError(source, line_no, "End", "before Start");
          row.end = row.start;
        }
        absl::StatusOr<std::vector<std::string>> nodes = ExpandHostList(row.nodes_text);
        if (nodes.ok() && !nodes->empty() && (*nodes)[0] != "None assigned") {
          row.nodes = std::move(*nodes);
        } else if (gpu_job) {
          if (!nodes.ok()) return LineError(source, line_no, "NodeList", std::string(nodes.status().message()));
          return LineError(source, line_no, "NodeList", "no node for a started job");
        }
      }
      if (gpu_job && row.started) {
        const int64_t n = static_cast<int64_t>(row.nodes.size());
        SlurmGres& g = row.gres;
        if (!g.per_node) {  // totals over the nodes -> per node
          for (int64_t* c : {&g.gpus, &g.shards, &g.mps}) {
            if (*c % n != 0) {
              return LineError(source, line_no, row.gres_column,
                               absl::StrCat(*c, " ", c == &g.gpus ? "GPUs" : c == &g.shards ? "shards" : "MPS units",
                                            " do not divide evenly over ", n, " nodes"));
            }
            *c /= n;
          }
          g.per_node = true;
        }
        if (!g.indices.empty()) {
          const size_t want = g.shards > 0 || g.mps > 0 ? 1 : static_cast<size_t>(g.gpus);
          if (g.indices.size() != want) {
            return LineError(source, line_no, c_gres >= 0 ? header[c_gres] : row.gres_column,
                             "IDX list does not match the GPU count");
          }
        }
      }
      rows.push_back(std::move(row));
      return absl::OkStatus();
    }));
    if (header.empty()) return TableError(source, "empty (no header line)");
  }

  // 2. One row per run (see the rule in io/hosts.h).
  {
    absl::flat_hash_map<std::string, std::vector<size_t>> by_key;
    std::vector<std::string> keys;  // in reading order (a flat_hash_map's keys move when it grows)
    for (size_t i = 0; i < rows.size(); ++i) {
      auto [it, fresh] = by_key.try_emplace(rows[i].key);
      if (fresh) keys.push_back(rows[i].key);
      it->second.push_back(i);
    }
    std::set<std::string> repeated, superseded;
    for (const std::string& key : keys) {
      std::vector<size_t>& group = by_key[key];
      if (group.size() < 2) continue;
      std::vector<size_t> kept;
      for (size_t i : group) {
        bool same = false;
        for (size_t k : kept) same = same || SameMeaning(rows[k], rows[i]);
        if (same) {
          rows[i].kept = false;
          ++out.rows_repeated;
          repeated.insert(rows[i].id);
        } else {
          kept.push_back(i);
        }
      }
      if (kept.size() < 2) continue;
      auto drop = [&](size_t i) {
        rows[i].kept = false;
        ++out.rows_superseded;
        superseded.insert(rows[i].id);
      };
      // A run supersedes the same job's rows that never started; of those alone, the last read stands.
      std::vector<size_t> runs, pending;
      for (size_t i : kept) (rows[i].started ? runs : pending).push_back(i);
      const size_t keep_pending = runs.empty() ? 1 : 0;
      for (size_t n = 0; n + keep_pending < pending.size(); ++n) drop(pending[n]);
      std::stable_sort(runs.begin(), runs.end(), [&](size_t a, size_t b) { return rows[a].start < rows[b].start; });
      std::vector<size_t> distinct;
      for (size_t i : runs) {
        if (!distinct.empty() && rows[distinct.back()].start == rows[i].start) {
          if (LaterState(rows[i], rows[distinct.back()])) {
            drop(distinct.back());
            distinct.back() = i;
          } else {
            drop(i);
          }
        } else {
          distinct.push_back(i);
        }
      }
      for (size_t n = 0; n + 1 < distinct.size(); ++n) {
        SacctRow& run = rows[distinct[n]];
        const int64_t next = rows[distinct[n + 1]].start;
        if (run.end > next) {
          run.end = next;
          ++out.runs_cut;
          superseded.insert(run.id);
        }
      }
    }
    out.repeated_jobs.assign(repeated.begin(), repeated.end());
    out.superseded_jobs.assign(superseded.begin(), superseded.end());
  }

  // 3. Workloads (one row per JobID, the last row read wins) and the jobs to place.
  std::vector<size_t> jobs;  // kept rows that held GPUs
  {
    std::map<std::string, size_t> last;  // JobID -> row
    std::vector<std::string> order;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!rows[i].kept) continue;
      auto [it, fresh] = last.try_emplace(rows[i].id, i);
      if (fresh) order.push_back(rows[i].id);
      it->second = i;
    }
    StringEncoder wc, wj, wu, wp;
    for (const std::string& id : order) {
      const SacctRow& row = rows[last[id]];
      wc.Add(row.id);
      wj.Add(row.id);
      wu.AddOrNull(row.user);
      wp.AddOrNull(row.account);
    }
    out.workloads.consumer = wc.Finish();
    out.workloads.label_names = {"job", "user", "project"};
    out.workloads.labels.push_back(wj.Finish());
    out.workloads.labels.push_back(wu.Finish());
    out.workloads.labels.push_back(wp.Finish());
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const SacctRow& row = rows[i];
    if (!row.kept) continue;
    if (!row.gres.any()) {
      ++out.jobs_without_gpus;
      bool gpu_node = false;
      for (const std::string& node : row.nodes) {
        auto c = gpus_of.find(node);
        gpu_node = gpu_node || (c != gpus_of.end() && c->second > 0);
      }
      if (row.started && gpu_node && row.end > row.start) {
        out.jobs_unknown_gpus.push_back({.source = std::string(inputs[row.input].source), .line = row.line,
                                         .job = row.id, .user = row.user, .account = row.account,
                                         .partition = row.partition, .nodes = row.nodes, .start = row.start,
                                         .end = row.end});
      }
      continue;
    }
    if (!row.started) {
      ++out.jobs_not_started;
      continue;
    }
    if (row.gres.shards > 0 || row.gres.mps > 0) ++out.shared_jobs;
    jobs.push_back(i);
  }

  // 4. Devices: given (IDX), or assigned in start order, lowest free index first; a
  // shard or MPS job shares the lowest GPU with room that no whole-GPU job holds.
  std::stable_sort(jobs.begin(), jobs.end(), [&](size_t a, size_t b) { return rows[a].start < rows[b].start; });
  // Indices read elsewhere (scontrol), by (job, node); their Start parsed in the sacct time zone.
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<const SacctOptions::JobDevices*, int64_t>>>
      given;
  for (const SacctOptions::JobDevices& e : options.job_devices) {
    int64_t start = INT64_MIN;
    if (!e.start.empty() && e.start != "Unknown" && e.start != "None") {
      absl::StatusOr<int64_t> t = ParseSacctTime(e.start, options.tz);
      if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat(e.where, ", StartTime: ", t.status().message()));
      start = *t;
    }
    given[{e.job, e.node}].emplace_back(&e, start);
  }
  auto given_for = [&](const SacctRow& job, const std::string& node) -> const SacctOptions::JobDevices* {
    for (const std::string* id : {&job.key, &job.id}) {
      auto it = given.find({*id, node});
      if (it == given.end()) continue;
      for (const auto& [e, start] : it->second) {
        if (start == INT64_MIN || start == job.start) return e;
      }
    }
    return nullptr;
  };
  std::set<std::string> idx_sacct, idx_given;
  std::map<std::string, std::vector<std::vector<Hold>>> holds;  // node -> per device
  std::map<std::pair<std::string, int32_t>, std::vector<std::pair<int64_t, int64_t>>> held;  // for free time
  StringEncoder resources, consumers;
  UsageSamples& u = out.samples;
  for (size_t ji : jobs) {
    const SacctRow& job = rows[ji];
    const std::string_view source = inputs[job.input].source;
    const SlurmGres& g = job.gres;
    const bool shared = g.shards > 0 || g.mps > 0;
    for (const std::string& node : job.nodes) {
      double share = 1.0;
      if (shared) {
        share = 0;
        if (g.shards > 0) {
          const std::optional<int32_t> per_gpu = shards_per_gpu.Find(node, job.partition);
          if (!per_gpu.has_value()) {
            return LineError(source, job.line, job.gres_column,
                             absl::StrCat("job ", job.id, " holds ", g.shards, " shard(s) (gres/shard) on node ", node,
                                          ", which has no shards-per-GPU count: give shards_per_gpu for node ", node,
                                          job.partition.empty() ? "" : absl::StrCat(", partition ", job.partition),
                                          " or every node (\"*\")"));
          }
          share += static_cast<double>(g.shards) / *per_gpu;
        }
        if (g.mps > 0) share += static_cast<double>(g.mps) / mps_per_gpu.Find(node, job.partition).value_or(100);
        if (share > 1 + 1e-9) {
          return LineError(source, job.line, job.gres_column,
                           absl::StrCat("job ", job.id, " holds ", share,
                                        " GPUs' worth of shards/MPS on node ", node,
                                        ": more than one GPU (a shared job holds part of one GPU per node; check "
                                        "shards_per_gpu / mps_per_gpu for ", node, ")"));
        }
      }
      std::optional<int32_t> count = options.gpus_per_node;
      const char* count_from = "gpus_per_node";
      if (auto c = gpus_of.find(node); c != gpus_of.end()) {
        count = c->second;
        count_from = "node_gpus";
      }
      std::vector<std::vector<Hold>>& devs = holds[node];
      auto active = [&](int32_t d, double* used, bool* whole) {
        *used = 0;
        *whole = false;
        if (static_cast<size_t>(d) >= devs.size()) return;
        std::vector<Hold>& h = devs[d];
        std::erase_if(h, [&](const Hold& x) { return x.end <= job.start; });
        for (const Hold& x : h) {
          *used += x.share;
          *whole = *whole || x.share >= 1.0;
        }
      };
      auto full = [&](int32_t wanted) -> absl::Status {
        std::set<std::string> holders;
        for (const auto& h : devs) {
          for (const Hold& x : h) {
            if (x.end > job.start) holders.insert(rows[x.job].id);
          }
        }
        std::vector<std::string> ids(holders.begin(), holders.end());
        return LineError(source, job.line, job.gres_column,
                         absl::StrCat("job ", job.id, " needs ", shared ? "a share of a GPU" : absl::StrCat(wanted, " GPU(s)"),
                                      " of node ", node, " at ", FormatUtc(job.start), ", but node ", node, " has ",
                                      *count, " GPUs (", count_from, ")",
                                      ids.empty() ? "" : absl::StrCat(", held then by job(s) ", SomeIds(ids)),
                                      ": jobs overlap beyond the node's GPUs (a job read twice under two ids, "
                                      "exports of two clusters, or a wrong GPU count)"));
      };
      std::vector<int32_t> devices = g.indices;
      std::string devices_from = job.gres_column;
      if (!devices.empty()) {
        idx_sacct.insert(job.id);
      } else if (const SacctOptions::JobDevices* e = given_for(job, node); e != nullptr) {
        const size_t want = shared ? 1 : static_cast<size_t>(g.gpus);
        if (e->indices.size() != want) {
          return absl::InvalidArgumentError(
              absl::StrCat(e->where, ", GRES: job ", job.id, " has ", e->indices.size(), " GPU index(es) on node ",
                           node, " but holds ", shared ? "a share of one GPU" : absl::StrCat(g.gpus, " GPU(s)"),
                           " there (", A(source), " line ", job.line, ", ", job.gres_column, ")"));
        }
        devices = e->indices;
        devices_from = e->where;
        idx_given.insert(job.id);
        out.gpus_from_job_devices += static_cast<int64_t>(devices.size());
      }
      if (!devices.empty()) {
        for (int32_t d : devices) {
          if (count.has_value() && d >= *count) {
            return LineError(source, job.line, job.gres_column,
                             absl::StrCat("job ", job.id, " uses GPU index ", d, " of node ", node, ", which has ",
                                          *count, " GPUs (", count_from, ")",
                                          devices_from == job.gres_column ? "" : absl::StrCat("; the index is ",
                                                                                             devices_from, "'s")));
          }
        }
      } else {
        const int32_t wanted = shared ? 1 : static_cast<int32_t>(g.gpus);
        for (int32_t d = 0; static_cast<int32_t>(devices.size()) < wanted; ++d) {
          if (count.has_value() && d >= *count) return full(wanted);
          if (d > 100000) return LineError(source, job.line, job.gres_column, "too many GPUs on one node");
          double used;
          bool whole;
          active(d, &used, &whole);
          if (shared ? (!whole && used + share <= 1 + 1e-9) : used == 0) devices.push_back(d);
        }
        out.gpus_assigned_in_order += static_cast<int64_t>(devices.size());
      }
      for (int32_t d : devices) {
        if (static_cast<size_t>(d) >= devs.size()) devs.resize(d + 1);
        devs[d].push_back({job.end, share, ji});
        if (job.end == job.start) continue;
        u.timestamp.push_back(job.start);
        resources.Add(node);
        u.device.push_back(d);
        consumers.Add(job.id);
        u.share.push_back(share);
        u.util.push_back(options.util);
        u.mem_used.push_back(0.0);
        u.duration.push_back(job.end - job.start);
        if (!options.node_gpus.empty()) held[{node, d}].emplace_back(job.start, job.end);
      }
    }
  }
  if (!options.node_gpus.empty()) {
    for (const auto& entry : holds) {
      if (!gpus_of.contains(entry.first)) ++out.nodes_without_gpu_count;
    }
  }
  if (!options.node_gpus.empty() && (options.range_start_ns != 0 || options.range_end_ns != 0)) {
    if (!(options.range_end_ns > options.range_start_ns)) {
      return ParameterError("end", "the accounting range must end after it starts");
    }
    // Free stretches: the range minus the union of each GPU's jobs.
    for (const auto& entry : gpus_of) {
      // Not a structured binding: clang 14 cannot capture one in the lambda below.
      const auto& node = entry.first;
      const int32_t count = entry.second;
      for (int32_t d = 0; d < count; ++d) {
        std::vector<std::pair<int64_t, int64_t>>& spans = held[{node, d}];
        std::sort(spans.begin(), spans.end());
        int64_t cursor = options.range_start_ns;
        auto emit_free = [&](int64_t from, int64_t to) {
          if (to <= from) return;
          u.timestamp.push_back(from);
          resources.Add(node);
          u.device.push_back(d);
          consumers.Add("");
          u.share.push_back(1.0);
          u.util.push_back(0.0);
          u.mem_used.push_back(0.0);
          u.duration.push_back(to - from);
          ++out.free_samples;
        };
        for (const auto& [start, end] : spans) {
          if (end <= cursor) continue;
          if (start >= options.range_end_ns) break;
          emit_free(cursor, std::min(start, options.range_end_ns));
          cursor = std::max(cursor, end);
        }
        emit_free(cursor, options.range_end_ns);
      }
    }
  }
  u.resource_id = resources.Finish();
  u.consumer = consumers.Finish();
  out.jobs_idx_sacct.assign(idx_sacct.begin(), idx_sacct.end());
  out.jobs_idx_given.assign(idx_given.begin(), idx_given.end());
  return out;
}

absl::StatusOr<SlurmEvents> ParseSlurmEvents(std::string_view text, std::string_view source,
                                             const SlurmEventsOptions& options) {
  SlurmEvents out;
  std::vector<std::string> header;
  int c_node = -1, c_start = -1, c_end = -1, c_state = -1, c_reason = -1;
  GPUCOST_RETURN_IF_ERROR(ForEachLine(text, [&](int64_t line_no, std::string_view line) -> absl::Status {
    std::vector<std::string_view> cells = Split(line, '|');
    if (header.empty()) {
      for (std::string_view c : cells) header.emplace_back(Trim(c));
      auto find = [&](std::initializer_list<std::string_view> names) {
        for (std::string_view name : names) {
          for (size_t i = 0; i < header.size(); ++i) {
            if (absl::EqualsIgnoreCase(A(header[i]), A(name))) return static_cast<int>(i);
          }
        }
        return -1;
      };
      c_node = find({"NodeName"});
      c_start = find({"TimeStart", "Start"});
      c_end = find({"TimeEnd", "End"});
      c_state = find({"State"});
      c_reason = find({"Reason"});
      if (c_node < 0) {
        return LineError(source, line_no, "NodeName",
                         "missing from the header (sacctmgr show event -P format=NodeName,TimeStart,TimeEnd,State,"
                         "Reason)");
      }
      if (c_start < 0) return LineError(source, line_no, "TimeStart", "missing from the header");
      return absl::OkStatus();
    }
    // --parsable (not -P) ends every line with a '|'; a Reason holding '|' gives more fields.
    if (cells.size() == header.size() + 1 && cells.back().empty()) cells.pop_back();
    if (cells.size() > header.size() && c_reason >= 0) {
      const size_t extra = cells.size() - header.size();
      const char* begin = cells[c_reason].data();
      const char* end = cells[c_reason + extra].data() + cells[c_reason + extra].size();
      cells[c_reason] = std::string_view(begin, static_cast<size_t>(end - begin));
      cells.erase(cells.begin() + c_reason + 1, cells.begin() + c_reason + 1 + static_cast<std::ptrdiff_t>(extra));
    }
    if (cells.size() != header.size()) {
      return LineError(source, line_no, header.back(),
                       absl::StrCat(cells.size(), " fields where the header has ", header.size()));
    }
    if (absl::EqualsIgnoreCase(A(Trim(cells[c_start])), A(header[c_start]))) return absl::OkStatus();  // appended
    const std::string_view nodes_text = Trim(cells[c_node]);
    // A cluster event names no node (its ClusterNodes are the cluster's nodes, not down ones).
    if (nodes_text.empty()) {
      ++out.cluster_events;
      return absl::OkStatus();
    }
    const std::string_view state = c_state >= 0 ? Trim(cells[c_state]) : std::string_view();
    if (!StateListed(state, options.states)) {
      ++out.other_states;
      return absl::OkStatus();
    }
    const std::string_view start_s = Trim(cells[c_start]);
    absl::StatusOr<int64_t> start = ParseSacctTime(start_s, options.tz);
    if (!start.ok()) {
      if (start.status().message().substr(0, 10) == "parameter ") return start.status();
      return LineError(source, line_no, header[c_start], std::string(start.status().message()));
    }
    int64_t end_ns;
    const std::string_view end_s = c_end >= 0 ? Trim(cells[c_end]) : std::string_view();
    if (end_s.empty() || end_s == "Unknown" || end_s == "None") {
      if (options.now_ns == INT64_MIN) {
        return LineError(source, line_no, c_end >= 0 ? header[c_end] : "TimeEnd",
                         "the event is still going on (no end): pass `now` to end it then");
      }
      end_ns = options.now_ns;
      ++out.ongoing;
    } else {
      absl::StatusOr<int64_t> end = ParseSacctTime(end_s, options.tz);
      if (!end.ok()) return LineError(source, line_no, header[c_end], std::string(end.status().message()));
      end_ns = *end;
    }
    if (end_ns <= *start) {
      ++out.empty;
      return absl::OkStatus();
    }
    absl::StatusOr<std::vector<std::string>> nodes = ExpandHostList(nodes_text);
    if (!nodes.ok()) {
      return LineError(source, line_no, header[c_node], std::string(nodes.status().message()));
    }
    const std::string_view reason = c_reason >= 0 ? Trim(cells[c_reason]) : std::string_view();
    for (std::string& node : *nodes) {
      out.node.push_back(std::move(node));
      out.start.push_back(*start);
      out.end.push_back(end_ns);
      out.state.emplace_back(state);
      out.reason.emplace_back(reason);
      out.line.push_back(line_no);
    }
    return absl::OkStatus();
  }));
  if (header.empty()) return TableError(source, "empty (no header line)");
  return out;
}

}  // namespace gpucost
