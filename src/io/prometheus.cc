// Prometheus text exposition (format 0.0.4) and HTTP API JSON parsers.
//
// Exposition: a sample line's series part (`name{labels}`) is interned by
// its exact text, so a file of many scrapes parses each distinct label set
// once; later lines only split off the value and timestamp.
#include "gpucost/io/prometheus.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "gpucost/status.h"
#include "prom_number.h"
#include "simdjson.h"

namespace gpucost {
namespace {

using prom_text::ParseDouble;
using prom_text::Shorten;

absl::string_view A(std::string_view s) { return {s.data(), s.size()}; }

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }
bool IsLabelStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsLabelChar(char c) { return IsLabelStart(c) || (c >= '0' && c <= '9'); }
bool IsBlank(char c) { return c == ' ' || c == '\t'; }

bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// Parses `{k="v",...}` starting at text[*pos] == '{'; on success *pos is just
// past '}'.
absl::Status ParseLabels(std::string_view text, size_t* pos, std::string_view source, int64_t line,
                         std::vector<std::pair<std::string, std::string>>* labels, std::string* name) {
  size_t i = *pos + 1;
  auto error = [&](const std::string& what) { return LineError(source, line, "labels", what); };
  absl::flat_hash_set<std::string> seen;
  while (true) {
    while (i < text.size() && IsBlank(text[i])) ++i;
    if (i >= text.size()) return error("unterminated label set (missing '}')");
    if (text[i] == '}') break;
    if (!IsLabelStart(text[i])) return error(absl::StrCat("unexpected character '", A(text.substr(i, 1)), "' where a label name should start"));
    const size_t key_start = i;
    while (i < text.size() && IsLabelChar(text[i])) ++i;
    std::string key(text.substr(key_start, i - key_start));
    while (i < text.size() && IsBlank(text[i])) ++i;
    if (i >= text.size() || text[i] != '=') return error(absl::StrCat("label '", key, "' has no '='"));
    ++i;
    while (i < text.size() && IsBlank(text[i])) ++i;
    if (i >= text.size() || text[i] != '"') return error(absl::StrCat("value of label '", key, "' is not quoted"));
    ++i;
    std::string value;
    bool closed = false;
    while (i < text.size()) {
      const char c = text[i];
      if (c == '"') {
        closed = true;
        ++i;
        break;
      }
      if (c == '\\') {
        if (i + 1 >= text.size()) break;
        const char e = text[i + 1];
        if (e == '\\') value.push_back('\\');
        else if (e == '"') value.push_back('"');
        else if (e == 'n') value.push_back('\n');
        else return error(absl::StrCat("invalid escape '\\", A(text.substr(i + 1, 1)), "' in the value of label '", key, "'"));
        i += 2;
        continue;
      }
      value.push_back(c);
      ++i;
    }
    if (!closed) return error(absl::StrCat("unterminated value of label '", key, "'"));
    if (!seen.insert(key).second) return error(absl::StrCat("label '", key, "' appears twice"));
    if (key == "__name__") {
      *name = std::move(value);
    } else {
      labels->emplace_back(std::move(key), std::move(value));
    }
    while (i < text.size() && IsBlank(text[i])) ++i;
    if (i < text.size() && text[i] == ',') {
      ++i;
      continue;
    }
    while (i < text.size() && IsBlank(text[i])) ++i;
    if (i < text.size() && text[i] == '}') break;
    return error("expected ',' or '}' after a label value");
  }
  *pos = i + 1;
  return absl::OkStatus();
}

bool Wanted(std::string_view name, std::span<const std::string_view> metrics) {
  if (metrics.empty()) return true;
  for (std::string_view m : metrics) {
    if (m == name) return true;
  }
  return false;
}

constexpr std::string_view kTypes[] = {"counter", "gauge", "histogram", "summary", "untyped"};

}  // namespace

std::optional<std::string_view> PromSeries::Label(std::string_view key) const {
  for (const auto& [k, v] : labels) {
    if (k == key) return std::string_view(v);
  }
  return std::nullopt;
}

std::string PromSeries::ToString() const {
  std::string out = name;
  out += '{';
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ',';
    first = false;
    absl::StrAppend(&out, k, "=\"", v, "\"");
  }
  out += '}';
  return out;
}

void PromSamples::Append(PromSamples&& other) {
  const auto shift = static_cast<int32_t>(series.size());
  const auto source_shift = static_cast<int32_t>(sources.size());
  for (auto& s : other.sources) sources.push_back(std::move(s));
  source_is_instant.resize(source_shift, 0);
  other.source_is_instant.resize(other.sources.size(), 0);
  source_is_instant.insert(source_is_instant.end(), other.source_is_instant.begin(), other.source_is_instant.end());
  for (auto& [name, count] : other.skipped) {
    bool found = false;
    for (auto& [n, c] : skipped) {
      if (n == name) {
        c += count;
        found = true;
        break;
      }
    }
    if (!found) skipped.emplace_back(std::move(name), count);
  }
  for (auto& [source, text] : other.warnings) warnings.emplace_back(source + source_shift, std::move(text));
  for (auto& s : other.series) {
    s.source += source_shift;
    series.push_back(std::move(s));
  }
  series_id.reserve(series_id.size() + other.series_id.size());
  for (int32_t id : other.series_id) series_id.push_back(id + shift);
  timestamp_ns.insert(timestamp_ns.end(), other.timestamp_ns.begin(), other.timestamp_ns.end());
  value.insert(value.end(), other.value.begin(), other.value.end());
  line.insert(line.end(), other.line.begin(), other.line.end());
}

void PromSamples::Append(const PromSamples& other) {
  PromSamples names;  // what Append(&&) shifts; the point columns are copied here, once
  names.sources = other.sources;
  names.source_is_instant = other.source_is_instant;
  names.skipped = other.skipped;
  names.warnings = other.warnings;
  names.series = other.series;
  const auto shift = static_cast<int32_t>(series.size());
  Append(std::move(names));
  series_id.reserve(series_id.size() + other.series_id.size());
  for (int32_t id : other.series_id) series_id.push_back(id + shift);
  timestamp_ns.insert(timestamp_ns.end(), other.timestamp_ns.begin(), other.timestamp_ns.end());
  value.insert(value.end(), other.value.begin(), other.value.end());
  line.insert(line.end(), other.line.begin(), other.line.end());
}

absl::StatusOr<PromSamples> ParseExposition(std::string_view text, std::string_view source,
                                            std::optional<int64_t> default_timestamp_ns,
                                            std::span<const std::string_view> metrics) {
  PromSamples out;
  out.sources.emplace_back(source);
  out.source_is_instant.push_back(0);
  // Interned series text -> series id (-2 - i: a metric we skip, counted in
  // out.skipped[i]).
  absl::flat_hash_map<std::string, int32_t> interned;
  absl::flat_hash_map<std::string, int32_t> skipped_index;
  constexpr int32_t kSkipped = -2;
  int64_t line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t i = 0;
    while (i < line.size() && IsBlank(line[i])) ++i;
    if (i == line.size()) continue;
    if (line[i] == '#') {
      // "# HELP name text", "# TYPE name type"; other comments are free text.
      std::string_view rest = line.substr(i + 1);
      while (!rest.empty() && IsBlank(rest.front())) rest.remove_prefix(1);
      if (rest.substr(0, 5) == "TYPE " || rest.substr(0, 5) == "TYPE\t") {
        rest.remove_prefix(5);
        while (!rest.empty() && IsBlank(rest.front())) rest.remove_prefix(1);
        size_t n = 0;
        while (n < rest.size() && IsNameChar(rest[n])) ++n;
        std::string_view type = rest.substr(n);
        while (!type.empty() && IsBlank(type.front())) type.remove_prefix(1);
        while (!type.empty() && IsBlank(type.back())) type.remove_suffix(1);
        bool known = false;
        for (std::string_view t : kTypes) known = known || t == type;
        if (n == 0 || !IsNameStart(rest[0])) return LineError(source, line_no, "metric", "# TYPE line without a metric name");
        if (!known) {
          return LineError(source, line_no, "type",
                           absl::StrCat("unknown metric type '", A(type),
                                        "' (expected counter, gauge, histogram, summary or untyped)"));
        }
      }
      continue;
    }
    // Series part: name and optional label set.
    if (!IsNameStart(line[i])) {
      return LineError(source, line_no, "metric",
                       absl::StrCat("'", Shorten(line.substr(i)), "' does not start with a metric name"));
    }
    const size_t series_start = i;
    while (i < line.size() && IsNameChar(line[i])) ++i;
    const size_t name_end = i;
    if (i < line.size() && line[i] == '{') {
      // Find the closing brace outside quotes to get the exact series text.
      bool quoted = false;
      size_t j = i + 1;
      for (; j < line.size(); ++j) {
        const char c = line[j];
        if (quoted) {
          if (c == '\\') ++j;
          else if (c == '"') quoted = false;
        } else if (c == '"') {
          quoted = true;
        } else if (c == '}') {
          break;
        }
      }
      if (j >= line.size()) {
        return LineError(source, line_no, "labels", "unterminated label set (missing '}' or '\"')");
      }
      i = j + 1;
    }
    std::string_view series_text = line.substr(series_start, i - series_start);
    int32_t id;
    auto it = interned.find(A(series_text));
    if (it != interned.end()) {
      id = it->second;
    } else {
      PromSeries series;
      series.name = std::string(line.substr(series_start, name_end - series_start));
      size_t p = name_end;
      if (p < line.size() && line[p] == '{') {
        std::string inner_name;
        GPUCOST_RETURN_IF_ERROR(ParseLabels(line, &p, source, line_no, &series.labels, &inner_name));
        if (!inner_name.empty()) {
          return LineError(source, line_no, "labels", "__name__ given both before and inside the braces");
        }
      }
      if (Wanted(series.name, metrics)) {
        id = static_cast<int32_t>(out.series.size());
        out.series.push_back(std::move(series));
      } else {
        auto [sk, added] = skipped_index.try_emplace(series.name, static_cast<int32_t>(out.skipped.size()));
        if (added) out.skipped.emplace_back(series.name, 0);
        id = kSkipped - sk->second;
      }
      interned.emplace(std::string(series_text), id);
    }
    if (id <= kSkipped) {
      ++out.skipped[static_cast<size_t>(kSkipped - id)].second;
      continue;
    }
    // Value and optional timestamp.
    if (i >= line.size() || !IsBlank(line[i])) {
      return LineError(source, line_no, "value",
                       i >= line.size() ? "missing value" : "expected a blank between the series and its value");
    }
    while (i < line.size() && IsBlank(line[i])) ++i;
    size_t v_end = i;
    while (v_end < line.size() && !IsBlank(line[v_end])) ++v_end;
    std::string_view value_text = line.substr(i, v_end - i);
    i = v_end;
    while (i < line.size() && IsBlank(line[i])) ++i;
    std::string_view ts_text = line.substr(i);
    while (!ts_text.empty() && IsBlank(ts_text.back())) ts_text.remove_suffix(1);
    double v;
    if (value_text.empty()) return LineError(source, line_no, "value", "missing value");
    if (!ParseDouble(value_text, &v)) {
      return LineError(source, line_no, "value",
                       absl::StrCat(A(out.series[id].name), ": '",
                                    Shorten(ts_text.empty() ? value_text : line.substr(v_end - value_text.size())),
                                    "' is not a number"));
    }
    if (ts_text.find_first_of(" \t") != std::string_view::npos) {
      return LineError(source, line_no, "timestamp", absl::StrCat("unexpected text '", Shorten(ts_text), "' after the timestamp"));
    }
    int64_t ts_ns;
    if (!ts_text.empty()) {
      int64_t ms;
      if (!ParseInt64(ts_text, &ms)) {
        return LineError(source, line_no, "timestamp",
                         absl::StrCat("'", Shorten(ts_text), "' is not an integer of milliseconds"));
      }
      if (ms > std::numeric_limits<int64_t>::max() / 1'000'000 || ms < std::numeric_limits<int64_t>::min() / 1'000'000) {
        return LineError(source, line_no, "timestamp", absl::StrCat(ms, " ms is out of range"));
      }
      ts_ns = ms * 1'000'000;
    } else if (default_timestamp_ns.has_value()) {
      ts_ns = *default_timestamp_ns;
    } else {
      return LineError(source, line_no, "timestamp",
                       "the sample has no timestamp and no scrape time was given");
    }
    out.series_id.push_back(id);
    out.timestamp_ns.push_back(ts_ns);
    out.value.push_back(v);
    out.line.push_back(line_no);
  }
  return out;
}

namespace {

absl::Status JsonError(std::string_view source, std::string_view what) { return TableError(source, what); }

std::string SimdjsonMessage(simdjson::error_code e) { return simdjson::error_message(e); }

}  // namespace

namespace {

// An amd-smi reading: {"value": 12, "unit": "%"}, a bare number, or "N/A"
// (nullopt). `unit_scale` turns the printed unit into the series' unit.
absl::StatusOr<std::optional<double>> AmdSmiValue(simdjson::dom::element e, std::string_view source, int64_t gpu,
                                                  std::string_view field, bool memory) {
  auto bad = [&](std::string_view what) {
    return TableError(source, absl::StrCat("gpu ", gpu, ", column '", A(field), "': ", A(what)));
  };
  std::string_view text;
  if (e.get_string().get(text) == simdjson::SUCCESS) {
    if (text == "N/A") return std::optional<double>();
    return bad(absl::StrCat("'", A(text), "' is not a number"));
  }
  double v = 0;
  std::string_view unit;
  simdjson::dom::object obj;
  if (e.get_object().get(obj) == simdjson::SUCCESS) {
    simdjson::dom::element value;
    if (obj["value"].get(value) != simdjson::SUCCESS) return bad("no \"value\"");
    if (value.get_string().get(text) == simdjson::SUCCESS) {
      if (text == "N/A") return std::optional<double>();
      return bad(absl::StrCat("'", A(text), "' is not a number"));
    }
    if (value.get_double().get(v) != simdjson::SUCCESS) {
      int64_t i;
      uint64_t u;
      if (value.get_int64().get(i) == simdjson::SUCCESS) {
        v = static_cast<double>(i);
      } else if (value.get_uint64().get(u) == simdjson::SUCCESS) {
        v = static_cast<double>(u);
      } else {
        return bad("the value is not a number");
      }
    }
    if (obj["unit"].get_string().get(unit) != simdjson::SUCCESS) unit = "";
  } else if (e.get_double().get(v) != simdjson::SUCCESS) {
    int64_t i;
    if (e.get_int64().get(i) != simdjson::SUCCESS) return bad("not a number, an object with \"value\" or \"N/A\"");
    v = static_cast<double>(i);
  }
  if (memory) {  // the series' unit is MB (MiB)
    if (unit == "B") {
      v /= 1024.0 * 1024.0;
    } else if (unit == "KB") {
      v /= 1024.0;
    } else if (unit == "GB") {
      v *= 1024.0;
    } else if (!unit.empty() && unit != "MB") {
      return bad(absl::StrCat("unknown memory unit '", A(unit), "'"));
    }
  } else if (!unit.empty() && unit != "%" && unit != "W") {
    return bad(absl::StrCat("unknown unit '", A(unit), "'"));
  }
  return std::optional<double>(v);
}

}  // namespace

absl::StatusOr<PromSamples> ParseAmdSmiMetric(std::string_view body, std::string_view source, int64_t timestamp_ns,
                                              std::string_view host) {
  PromSamples out;
  out.sources.emplace_back(source);
  out.source_is_instant.push_back(0);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto e = parser.parse(body.data(), body.size(), /*realloc_if_needed=*/true).get(doc); e) {
    return JsonError(source, absl::StrCat("not valid JSON (", SimdjsonMessage(e), ")"));
  }
  // A list of GPUs (amd-smi of ROCm 6.1-6.3) or {"gpu_data": [...]} (later).
  simdjson::dom::array gpus;
  if (doc.get_array().get(gpus) != simdjson::SUCCESS && doc["gpu_data"].get_array().get(gpus) != simdjson::SUCCESS) {
    return JsonError(source, "not amd-smi metric --json output (a list of GPUs, or {\"gpu_data\": [...]})");
  }
  struct Field {
    std::string_view block, key, series;
    bool memory;
  };
  static constexpr Field kFields[] = {
      {"usage", "gfx_activity", "gpu_gfx_activity", false},  {"usage", "umc_activity", "gpu_umc_activity", false},
      {"mem_usage", "used_vram", "gpu_used_vram", true},     {"mem_usage", "free_vram", "gpu_free_vram", true},
      {"power", "socket_power", "gpu_power_usage", false},
  };
  size_t index = 0;
  for (simdjson::dom::element item : gpus) {
    int64_t gpu;
    if (item["gpu"].get_int64().get(gpu) != simdjson::SUCCESS || gpu < 0) {
      return JsonError(source, absl::StrCat("GPU entry ", index, ": no \"gpu\" index"));
    }
    ++index;
    for (const Field& f : kFields) {
      simdjson::dom::element value;
      if (item[f.block][f.key].get(value) != simdjson::SUCCESS) continue;  // not printed, or the block is "N/A"
      GPUCOST_ASSIGN_OR_RETURN(std::optional<double> v,
                               AmdSmiValue(value, source, gpu, absl::StrCat(A(f.block), ".", A(f.key)), f.memory));
      if (!v.has_value()) continue;
      PromSeries series;
      series.name = std::string(f.series);
      series.labels = {{"gpu_id", absl::StrCat(gpu)}, {"hostname", std::string(host)}};
      out.series_id.push_back(static_cast<int32_t>(out.series.size()));
      out.series.push_back(std::move(series));
      out.timestamp_ns.push_back(timestamp_ns);
      out.value.push_back(*v);
      out.line.push_back(0);
    }
  }
  return out;
}

}  // namespace gpucost
