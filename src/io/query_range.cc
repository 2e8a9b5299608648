// Prometheus HTTP API answers (/api/v1/query_range, /api/v1/query) -> the
// PromSamples columns, and many saved answers read in parallel.
//
// Two parsers, one answer. The fast one walks the answer once with
// simdjson On Demand in the order Prometheus writes it (status, data,
// resultType, result; per series metric then values) and writes labels once
// per series and each point's time and value straight into the columns. Any
// other shape (an instant vector, keys in another order, a value that is not
// a [time, "value"] pair, an error answer, bad JSON) goes to the reference
// parser (simdjson DOM), which reads every form the API allows and words
// every error; so the fast path never decides what an answer means, only how
// quickly a well-formed one is read.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gpucost/cores.h"
#include "gpucost/io/prometheus.h"
#include "gpucost/io/usage.h"
#include "gpucost/status.h"
#include "prom_number.h"
#include "simdjson.h"

namespace gpucost {
namespace {

using prom_text::ParseDouble;
using prom_text::Shorten;

absl::string_view A(std::string_view s) { return {s.data(), s.size()}; }

absl::Status JsonError(std::string_view source, std::string_view what) { return TableError(source, what); }

// Which series a read keeps (QueryRangeFilesOptions::metrics, keep_label).
struct SeriesFilter {
  std::span<const std::string> metrics;
  std::string_view keep_label;

  [[nodiscard]] bool Keeps(const PromSeries& series) const {
    if (metrics.empty()) return true;
    if (std::find(metrics.begin(), metrics.end(), series.name) != metrics.end()) return true;
    if (keep_label.empty()) return false;
    const auto v = series.Label(keep_label);
    return v.has_value() && !v->empty();
  }
};

// A skipped series, counted by metric name.
void CountSkipped(std::string_view name, PromSamples* out) {
  for (auto& [n, c] : out->skipped) {
    if (n == name) {
      ++c;
      return;
    }
  }
  out->skipped.emplace_back(std::string(name), 1);
}

// Milliseconds of float seconds as int64 nanoseconds; false when out of range.
bool SecondsToNs(double seconds, int64_t* ns) {
  // Prometheus timestamps are milliseconds; round the float seconds to them.
  // Milliseconds whose rounding times 1e6 still fits int64 nanoseconds.
  constexpr double kMaxMs = 9'223'372'036'853.0;
  const double ms = seconds * 1000.0;
  if (!(std::fabs(ms) < kMaxMs)) return false;
  *ns = std::llround(ms) * 1'000'000;
  return true;
}

// ---- the byte where JSON breaks (for messages only) -----------------------

bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The offset of the first byte at which `s` stops being one JSON value
// (s.size() when it ends too early), or npos when it is valid. simdjson
// says what is wrong, not where.
size_t JsonBreaksAt(std::string_view s) {
  size_t i = 0;
  std::vector<char> open;  // '{' or '['
  enum { kValue, kKey, kAfter } want = kValue;
  const auto skip_space = [&] {
    while (i < s.size() && IsJsonSpace(s[i])) ++i;
  };
  const auto string_ends = [&]() -> bool {  // s[i] == '"'; moves past the closing quote
    for (++i; i < s.size(); ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c == '"') {
        ++i;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        if (++i >= s.size()) return false;
        if (s[i] == 'u') {
          for (int k = 0; k < 4; ++k) {
            if (++i >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
          }
        } else if (std::string_view("\"\\/bfnrt").find(s[i]) == std::string_view::npos) {
          return false;
        }
      }
    }
    return false;
  };
  const auto digits = [&] {
    const size_t from = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i > from;
  };
  while (true) {
    skip_space();
    if (want == kAfter) {
      if (open.empty()) return i == s.size() ? std::string_view::npos : i;
      if (i >= s.size()) return i;
      if (s[i] == ',') {
        ++i;
        want = open.back() == '{' ? kKey : kValue;
      } else if ((s[i] == '}' && open.back() == '{') || (s[i] == ']' && open.back() == '[')) {
        ++i;
        open.pop_back();
      } else {
        return i;
      }
      continue;
    }
    if (i >= s.size()) return i;
    if (want == kKey) {
      if (s[i] != '"' || !string_ends()) return std::min(i, s.size());
      skip_space();
      if (i >= s.size() || s[i] != ':') return i;
      ++i;
      want = kValue;
      continue;
    }
    const char c = s[i];
    if (c == '{' || c == '[') {
      open.push_back(c);
      ++i;
      skip_space();
      if (i < s.size() && s[i] == (c == '{' ? '}' : ']')) {
        ++i;
        open.pop_back();
        want = kAfter;
      } else {
        want = c == '{' ? kKey : kValue;
      }
    } else if (c == '"') {
      if (!string_ends()) return std::min(i, s.size());
      want = kAfter;
    } else if (c == 't' || c == 'f' || c == 'n') {
      const std::string_view word = c == 't' ? "true" : (c == 'f' ? "false" : "null");
      if (s.substr(i, word.size()) != word) return i;
      i += word.size();
      want = kAfter;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      if (c == '-') ++i;
      if (i < s.size() && s[i] == '0') {
        ++i;
      } else if (!digits()) {
        return i;
      }
      if (i < s.size() && s[i] == '.' && (++i, !digits())) return i;
      if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
        if (!digits()) return i;
      }
      want = kAfter;
    } else {
      return i;
    }
  }
}

absl::Status NotJson(std::string_view body, std::string_view source, simdjson::error_code e) {
  const size_t at = JsonBreaksAt(body);
  if (at == std::string_view::npos) {  // valid grammar: an encoding or size problem
    return JsonError(source, absl::StrCat("not valid JSON (", simdjson::error_message(e), ")"));
  }
  const std::string_view before = body.substr(0, at);
  const auto line = 1 + std::count(before.begin(), before.end(), '\n');
  const size_t line_start = before.rfind('\n') == std::string_view::npos ? 0 : before.rfind('\n') + 1;
  return JsonError(source, absl::StrCat("byte ", at, " (line ", line, ", column ", at - line_start + 1,
                                        "): not valid JSON (", simdjson::error_message(e), ")",
                                        at >= body.size() ? ": the text ends early" : ""));
}

// ---- the reference parser (DOM): every form, every message ---------------

absl::Status AddPoint(simdjson::dom::element point, int32_t id, size_t series_index, size_t point_index,
                      std::string_view source, PromSamples* out) {
  simdjson::dom::array pair;
  if (point.get_array().get(pair) != simdjson::SUCCESS || pair.size() != 2) {
    return JsonError(source, absl::StrCat("series ", series_index, ", point ", point_index,
                                          ": expected [<unix seconds>, \"<value>\"]"));
  }
  double seconds;
  simdjson::dom::element t = pair.at(0).value_unsafe();
  if (t.get_double().get(seconds) != simdjson::SUCCESS) {
    int64_t si;
    if (t.get_int64().get(si) != simdjson::SUCCESS) {
      return JsonError(source, absl::StrCat("series ", series_index, ", point ", point_index,
                                            ": timestamp is not a number"));
    }
    seconds = static_cast<double>(si);
  }
  std::string_view text;
  if (pair.at(1).value_unsafe().get_string().get(text) != simdjson::SUCCESS) {
    return JsonError(source, absl::StrCat("series ", series_index, ", point ", point_index,
                                          ": value is not a string"));
  }
  double v;
  if (!ParseDouble(text, &v)) {
    return JsonError(source, absl::StrCat("series ", series_index, ", point ", point_index, ": '",
                                          Shorten(text), "' is not a number"));
  }
  if (!std::isfinite(seconds)) {
    return JsonError(source, absl::StrCat("series ", series_index, ", point ", point_index,
                                          ": timestamp is not finite"));
  }
  int64_t ns;
  if (!SecondsToNs(seconds, &ns)) {
    return JsonError(source, absl::StrCat("series ", series_index, ", point ", point_index, ": timestamp ",
                                          seconds, " s is out of range"));
  }
  out->series_id.push_back(id);
  out->timestamp_ns.push_back(ns);
  out->value.push_back(v);
  out->line.push_back(0);
  return absl::OkStatus();
}

// The answer's `warnings` (strings; anything else as its JSON text).
void DomWarnings(simdjson::dom::element doc, std::vector<std::string>* warnings) {
  simdjson::dom::element w;
  if (doc["warnings"].get(w) != simdjson::SUCCESS || w.is_null()) return;
  const auto add = [&](simdjson::dom::element e) {
    std::string_view text;
    if (e.get_string().get(text) == simdjson::SUCCESS) warnings->emplace_back(text);
    else warnings->push_back(simdjson::minify(e));
  };
  simdjson::dom::array list;
  if (w.get_array().get(list) == simdjson::SUCCESS) {
    for (simdjson::dom::element e : list) add(e);
  } else {
    add(w);
  }
}

// Parses with the DOM. `*warnings` is filled whenever the body is JSON, even
// when the answer is then an error.
absl::Status ParseDom(std::string_view body, std::string_view source, std::string_view metric_name,
                      simdjson::dom::parser& parser, PromSamples* out, std::vector<std::string>* warnings) {
  simdjson::dom::element doc;
  if (auto e = parser.parse(body.data(), body.size(), /*realloc_if_needed=*/true).get(doc); e) {
    return NotJson(body, source, e);
  }
  DomWarnings(doc, warnings);
  std::string_view status;
  if (doc["status"].get_string().get(status) != simdjson::SUCCESS) {
    return JsonError(source, "not a Prometheus API answer (no \"status\")");
  }
  if (status != "success") {
    std::string_view type = "unknown", message = "";
    if (doc["errorType"].get_string().get(type) != simdjson::SUCCESS) type = "unknown";
    if (doc["error"].get_string().get(message) != simdjson::SUCCESS) message = "";
    return JsonError(source, absl::StrCat("Prometheus answered status '", A(status), "' (", A(type), "): ",
                                          A(message)));
  }
  std::string_view result_type;
  if (doc["data"]["resultType"].get_string().get(result_type) != simdjson::SUCCESS) {
    return JsonError(source, "no data.resultType");
  }
  if (result_type != "matrix" && result_type != "vector") {
    return JsonError(source, absl::StrCat("resultType '", A(result_type), "' is not a matrix or a vector"));
  }
  simdjson::dom::array result;
  if (doc["data"]["result"].get_array().get(result) != simdjson::SUCCESS) {
    return JsonError(source, "no data.result array");
  }
  out->source_is_instant[0] = result_type == "vector" ? 1 : 0;
  size_t series_index = 0;
  for (simdjson::dom::element item : result) {
    PromSeries series;
    simdjson::dom::object metric;
    if (item["metric"].get_object().get(metric) != simdjson::SUCCESS) {
      return JsonError(source, absl::StrCat("series ", series_index, ": no \"metric\" object"));
    }
    for (auto field : metric) {
      std::string_view v;
      if (field.value.get_string().get(v) != simdjson::SUCCESS) {
        return JsonError(source, absl::StrCat("series ", series_index, ": label '", A(field.key),
                                              "' is not a string"));
      }
      if (field.key == "__name__") {
        series.name = std::string(v);
      } else {
        series.labels.emplace_back(std::string(field.key), std::string(v));
      }
    }
    if (series.name.empty()) series.name = std::string(metric_name);
    const auto id = static_cast<int32_t>(out->series.size());
    out->series.push_back(std::move(series));
    if (result_type == "matrix") {
      simdjson::dom::array values;
      if (item["values"].get_array().get(values) != simdjson::SUCCESS) {
        // Native histograms come as "histograms"; gpucost reads float series only.
        return JsonError(source, absl::StrCat("series ", series_index, ": no \"values\" array"));
      }
      size_t point_index = 0;
      for (simdjson::dom::element point : values) {
        GPUCOST_RETURN_IF_ERROR(AddPoint(point, id, series_index, point_index, source, out));
        ++point_index;
      }
    } else {
      simdjson::dom::element point;
      if (item["value"].get(point) != simdjson::SUCCESS) {
        return JsonError(source, absl::StrCat("series ", series_index, ": no \"value\""));
      }
      GPUCOST_RETURN_IF_ERROR(AddPoint(point, id, series_index, 0, source, out));
    }
    ++series_index;
  }
  return absl::OkStatus();
}

// Drops the series `filter` does not keep, and their points (after the
// reference parser, which reads every series).
void KeepSeries(const SeriesFilter& filter, PromSamples* s) {
  if (filter.metrics.empty()) return;
  std::vector<int32_t> new_id(s->series.size(), -1);
  std::vector<PromSeries> kept;
  for (size_t i = 0; i < s->series.size(); ++i) {
    if (filter.Keeps(s->series[i])) {
      new_id[i] = static_cast<int32_t>(kept.size());
      kept.push_back(std::move(s->series[i]));
    } else {
      CountSkipped(s->series[i].name, s);
    }
  }
  size_t n = 0;
  for (size_t p = 0; p < s->size(); ++p) {
    const int32_t id = new_id[s->series_id[p]];
    if (id < 0) continue;
    s->series_id[n] = id;
    s->timestamp_ns[n] = s->timestamp_ns[p];
    s->value[n] = s->value[p];
    s->line[n] = s->line[p];
    ++n;
  }
  s->series = std::move(kept);
  s->series_id.resize(n);
  s->timestamp_ns.resize(n);
  s->value.resize(n);
  s->line.resize(n);
}

// ---- the fast parser (On Demand): the shape Prometheus writes -------------

// A padded copy of a body or a file, reused between answers of one thread.
class PaddedBuffer {
 public:
  [[nodiscard]] std::string_view view() const { return {data_.get(), size_}; }
  [[nodiscard]] size_t capacity() const { return capacity_; }

  char* Resize(size_t size) {
    if (size + simdjson::SIMDJSON_PADDING > capacity_) {
      capacity_ = size + size / 8 + simdjson::SIMDJSON_PADDING;
      data_ = std::make_unique<char[]>(capacity_);
    }
    size_ = size;
    std::fill(data_.get() + size, data_.get() + size + simdjson::SIMDJSON_PADDING, '\0');
    return data_.get();
  }

  absl::Status Load(const std::string& path) {
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (f == nullptr || std::fseek(f.get(), 0, SEEK_END) != 0) {
      return absl::NotFoundError(absl::StrCat(path, ": cannot open the file"));
    }
    const long size = std::ftell(f.get());
    if (size < 0 || std::fseek(f.get(), 0, SEEK_SET) != 0) {
      return absl::NotFoundError(absl::StrCat(path, ": cannot read the file"));
    }
    char* data = Resize(static_cast<size_t>(size));
    if (std::fread(data, 1, static_cast<size_t>(size), f.get()) != static_cast<size_t>(size)) {
      return absl::DataLossError(absl::StrCat(path, ": the file could not be read to its end"));
    }
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0, capacity_ = 0;
};

namespace od = simdjson::ondemand;

// The earliest and latest instant seen (QueryRangeSpans): points are timed,
// not stored.
struct TimeBounds {
  int64_t first = INT64_MAX, last = INT64_MIN;

  void Add(int64_t ns) {
    first = std::min(first, ns);
    last = std::max(last, ns);
  }
};

// One series' instants only: each value is left unread (the full read judges it).
bool FastTimes(od::array values, TimeBounds* bounds) {
  for (auto point : values) {
    od::array pair;
    if (point.get_array().get(pair) != simdjson::SUCCESS) return false;
    double seconds = 0;
    int k = 0;
    for (auto element : pair) {
      if (k == 0 && element.get_double().get(seconds) != simdjson::SUCCESS) return false;
      ++k;
    }
    int64_t ns;
    if (k != 2 || !std::isfinite(seconds) || !SecondsToNs(seconds, &ns)) return false;
    bounds->Add(ns);
  }
  return true;
}

// Appends one series' [time, "value"] points; false for anything else.
bool FastPoints(od::array values, int32_t id, PromSamples* out) {
  for (auto point : values) {
    od::array pair;
    if (point.get_array().get(pair) != simdjson::SUCCESS) return false;
    double seconds = 0, v = 0;
    std::string_view text;
    int k = 0;
    for (auto element : pair) {
      if (k == 0) {
        if (element.get_double().get(seconds) != simdjson::SUCCESS) return false;
      } else if (k == 1) {
        if (element.get_string().get(text) != simdjson::SUCCESS) return false;
      } else {
        return false;
      }
      ++k;
    }
    int64_t ns;
    if (k != 2 || !ParseDouble(text, &v) || !std::isfinite(seconds) || !SecondsToNs(seconds, &ns)) return false;
    out->series_id.push_back(id);
    out->timestamp_ns.push_back(ns);
    out->value.push_back(v);
  }
  return true;
}

// One series {"metric": {...}, "values": [...]}; false for another shape.
// With `bounds`, the points are only timed into it.
bool FastSeries(od::object item, std::string_view metric_name, const SeriesFilter& filter, PromSamples* out,
                TimeBounds* bounds) {
  PromSeries series;
  bool have_metric = false, have_values = false;
  for (auto field : item) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return false;
    if (key == "metric" && !have_metric) {
      od::object metric;
      if (field.value().get_object().get(metric) != simdjson::SUCCESS) return false;
      for (auto label : metric) {
        std::string_view k, v;
        if (label.unescaped_key().get(k) != simdjson::SUCCESS) return false;
        std::string name(k);  // the key's text lives in the parser until the next string is read
        if (label.value().get_string().get(v) != simdjson::SUCCESS) return false;
        // NOLINTNEXTLINE(bugprone-use-after-move): a "metric" key after "values" returns false first
        if (name == "__name__") series.name = std::string(v);
        else series.labels.emplace_back(std::move(name), std::string(v));
      }
      if (series.name.empty()) series.name = std::string(metric_name);
      have_metric = true;
    } else if (key == "values" && have_metric && !have_values) {
      have_values = true;
      if (!filter.Keeps(series)) {  // its points are skipped unparsed
        CountSkipped(series.name, out);
        continue;
      }
      od::array values;
      if (field.value().get_array().get(values) != simdjson::SUCCESS) return false;
      if (bounds != nullptr) {
        if (!FastTimes(values, bounds)) return false;
        continue;
      }
      const auto id = static_cast<int32_t>(out->series.size());
      out->series.push_back(std::move(series));
      if (!FastPoints(values, id, out)) return false;
    } else {
      return false;  // "histograms", "value", keys twice or out of order
    }
  }
  return have_values;
}

// The whole answer; false (with *out partly filled) for any shape the
// reference parser must judge.
bool FastAnswer(od::parser& parser, const PaddedBuffer& body, std::string_view metric_name,
                const SeriesFilter& filter, PromSamples* out, std::vector<std::string>* warnings,
                TimeBounds* bounds = nullptr) {
  od::document doc;
  if (parser.iterate(body.view().data(), body.view().size(), body.capacity()).get(doc) != simdjson::SUCCESS) {
    return false;
  }
  od::object top;
  if (doc.get_object().get(top) != simdjson::SUCCESS) return false;
  bool success = false, have_data = false;
  for (auto field : top) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return false;
    if (key == "status") {
      std::string_view status;
      if (success || have_data || field.value().get_string().get(status) != simdjson::SUCCESS ||
          status != "success") {
        return false;
      }
      success = true;
    } else if (key == "data") {
      od::object data;
      if (!success || have_data || field.value().get_object().get(data) != simdjson::SUCCESS) return false;
      bool matrix = false, have_result = false;
      for (auto d : data) {
        std::string_view dkey;
        if (d.unescaped_key().get(dkey) != simdjson::SUCCESS) return false;
        if (dkey == "resultType" && !matrix) {
          std::string_view type;
          if (d.value().get_string().get(type) != simdjson::SUCCESS || type != "matrix") return false;
          matrix = true;
        } else if (dkey == "result" && matrix && !have_result) {
          od::array result;
          if (d.value().get_array().get(result) != simdjson::SUCCESS) return false;
          for (auto item : result) {
            od::object series;
            if (item.get_object().get(series) != simdjson::SUCCESS) return false;
            if (!FastSeries(series, metric_name, filter, out, bounds)) return false;
          }
          have_result = true;
        } else {
          return false;
        }
      }
      if (!have_result) return false;
      have_data = true;
    } else if (key == "warnings") {
      od::array list;
      if (field.value().get_array().get(list) != simdjson::SUCCESS) return false;
      for (auto w : list) {
        std::string_view text;
        if (w.get_string().get(text) != simdjson::SUCCESS) return false;
        warnings->emplace_back(text);
      }
    } else if (key == "status" || key == "errorType" || key == "error" || key == "data") {
      return false;
    }
    // Other keys ("infos" of Prometheus 3) are skipped.
  }
  // Anything after the answer's closing brace is for the reference parser to refuse.
  const char* after = nullptr;
  return have_data && doc.current_location().get(after) != simdjson::SUCCESS;
}

// One answer: the fast parser, else the reference one.
struct AnswerReader {
  od::parser fast;
  simdjson::dom::parser dom;
  PaddedBuffer buffer;

  absl::Status Read(std::string_view source, std::string_view metric_name, const SeriesFilter& filter,
                    PromSamples* out, std::vector<std::string>* warnings) {
    out->sources.assign(1, std::string(source));
    out->source_is_instant.assign(1, 0);
    if (FastAnswer(fast, buffer, metric_name, filter, out, warnings)) {
      out->line.assign(out->value.size(), 0);
      return absl::OkStatus();
    }
    *out = PromSamples();
    out->sources.assign(1, std::string(source));
    out->source_is_instant.assign(1, 0);
    warnings->clear();
    GPUCOST_RETURN_IF_ERROR(ParseDom(buffer.view(), source, metric_name, dom, out, warnings));
    KeepSeries(filter, out);
    return absl::OkStatus();
  }

  // The instants of the points Read would keep; any answer the fast walk
  // does not take is read in full.
  absl::Status Span(std::string_view source, std::string_view metric_name, const SeriesFilter& filter,
                    TimeBounds* bounds, std::vector<std::string>* warnings) {
    PromSamples unused;
    if (FastAnswer(fast, buffer, metric_name, filter, &unused, warnings, bounds)) return absl::OkStatus();
    *bounds = TimeBounds();
    warnings->clear();
    PromSamples all;
    GPUCOST_RETURN_IF_ERROR(Read(source, metric_name, filter, &all, warnings));
    for (int64_t ns : all.timestamp_ns) bounds->Add(ns);
    return absl::OkStatus();
  }
};

absl::Status PartialAnswer(std::string_view source, const std::vector<std::string>& warnings) {
  const std::string more = warnings.size() > 1 ? absl::StrCat(" (and ", warnings.size() - 1, " more)") : "";
  return JsonError(source, absl::StrCat("Prometheus answered with warnings, a partial answer whose series or "
                                        "points may be missing: '",
                                        warnings[0], "'", more,
                                        "; pass allow_partial=True to read it anyway (attrs['telemetry']"
                                        "['warnings'])"));
}

// The first file's own spacing against the stated step (the rule and words
// of DurationsFromSeries; query_range points come series by series).
absl::Status CheckStep(const PromSamples& first, const QueryRangeFilesOptions& options) {
  if (!options.step_seconds.has_value() || first.size() == 0) return absl::OkStatus();
  if (!(*options.step_seconds > 0) || !(*options.step_seconds <= 1e9)) {
    return ParameterError(options.step_name,
                          absl::StrCat(*options.step_seconds, " is not a positive number of seconds"));
  }
  std::vector<int64_t> durations;
  return DurationsFromSeries(
             first.series_id, first.timestamp_ns, std::llround(*options.step_seconds * 1e9), 60'000'000'000,
             options.step_name,
             [&](int32_t id) { return absl::StrCat(first.sources[0], ": series ", first.series[id].ToString()); },
             &durations)
      .status();
}

// Runs `one(reader, i)` for files [from, n) on `threads` threads (0: one
// per core), one reader each. Files are taken in order, so once file k fails
// no later file is started and the first failure in file order is k's or an
// earlier one's.
template <typename One>
void ForEachFile(size_t from, size_t n, int threads, const One& one) {
  if (from >= n) return;
  std::atomic<size_t> next{from};
  std::atomic<size_t> first_failed{n};
  const auto work = [&] {
    AnswerReader reader;
    for (size_t i = next++; i < n && i < first_failed.load(); i = next++) {
      if (!one(reader, i)) {
        size_t seen = first_failed.load();
        while (i < seen && !first_failed.compare_exchange_weak(seen, i)) {
        }
      }
    }
  };
  const int count =
      std::clamp(threads > 0 ? threads : AvailableCores(), 1, static_cast<int>(std::max<size_t>(n - from, 1)));
  std::vector<std::thread> pool;
  for (int t = 1; t < count; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

// One saved answer read alone: its points, or the first problem (an
// unreadable file, bad JSON, a refused partial answer); warnings kept in the
// samples. `check_step` checks the stated step against it.
struct FileRead {
  absl::Status status;
  PromSamples samples;

  bool Run(AnswerReader& reader, const std::string& path, const QueryRangeFilesOptions& options,
           const SeriesFilter& filter, bool check_step) {
    std::vector<std::string> warnings;
    status = reader.buffer.Load(path);
    if (status.ok()) status = reader.Read(path, options.metric_name, filter, &samples, &warnings);
    if (status.ok() && !warnings.empty() && !options.allow_partial) status = PartialAnswer(path, warnings);
    if (status.ok() && check_step) status = CheckStep(samples, options);
    for (std::string& w : warnings) samples.warnings.emplace_back(0, std::move(w));
    return status.ok();
  }
};

// Every file read alone; the first file before the others, so that a step
// it contradicts is refused before the rest are read.
absl::StatusOr<std::vector<FileRead>> ReadEach(std::span<const std::string> paths,
                                               const QueryRangeFilesOptions& options, bool step_on_each) {
  const SeriesFilter filter{options.metrics, options.keep_label};
  std::vector<FileRead> results(paths.size());
  if (paths.empty()) return results;
  {
    AnswerReader reader;
    if (!results[0].Run(reader, paths[0], options, filter, /*check_step=*/true)) return results[0].status;
  }
  ForEachFile(1, paths.size(), options.threads, [&](AnswerReader& reader, size_t i) {
    return results[i].Run(reader, paths[i], options, filter, step_on_each);
  });
  for (const FileRead& r : results) {
    if (!r.status.ok()) return r.status;
  }
  return results;
}

}  // namespace

absl::StatusOr<PromSamples> ParseQueryRange(std::string_view body, std::string_view source,
                                            std::string_view metric_name) {
  AnswerReader reader;
  std::copy(body.begin(), body.end(), reader.buffer.Resize(body.size()));
  PromSamples out;
  std::vector<std::string> warnings;
  GPUCOST_RETURN_IF_ERROR(reader.Read(source, metric_name, SeriesFilter{}, &out, &warnings));
  for (std::string& w : warnings) out.warnings.emplace_back(0, std::move(w));
  return out;
}

absl::StatusOr<PromSamples> ReadQueryRangeFiles(std::span<const std::string> paths,
                                                const QueryRangeFilesOptions& options) {
  absl::StatusOr<std::vector<FileRead>> results = ReadEach(paths, options, /*step_on_each=*/false);
  if (!results.ok()) return results.status();
  // Merged in file order, each column sized once.
  PromSamples out;
  size_t points = 0, series = 0;
  for (const FileRead& r : *results) {
    points += r.samples.size();
    series += r.samples.series.size();
  }
  out.series.reserve(series);
  out.series_id.reserve(points);
  out.timestamp_ns.reserve(points);
  out.value.reserve(points);
  out.line.reserve(points);
  for (FileRead& r : *results) {
    out.Append(std::move(r.samples));
    r.samples = PromSamples();  // its columns freed as soon as they are copied
  }
  return out;
}

absl::StatusOr<std::vector<PromSamples>> ReadQueryRangeEach(std::span<const std::string> paths,
                                                           const QueryRangeFilesOptions& options) {
  absl::StatusOr<std::vector<FileRead>> results = ReadEach(paths, options, /*step_on_each=*/true);
  if (!results.ok()) return results.status();
  std::vector<PromSamples> out;
  out.reserve(results->size());
  for (FileRead& r : *results) out.push_back(std::move(r.samples));
  return out;
}

absl::StatusOr<std::vector<std::optional<QueryRangeSpan>>> QueryRangeSpans(std::span<const std::string> paths,
                                                                           const QueryRangeFilesOptions& options) {
  const SeriesFilter filter{options.metrics, options.keep_label};
  std::vector<absl::Status> status(paths.size());
  std::vector<TimeBounds> bounds(paths.size());
  ForEachFile(0, paths.size(), options.threads, [&](AnswerReader& reader, size_t i) {
    std::vector<std::string> warnings;
    status[i] = reader.buffer.Load(paths[i]);
    if (status[i].ok()) status[i] = reader.Span(paths[i], options.metric_name, filter, &bounds[i], &warnings);
    if (status[i].ok() && !warnings.empty() && !options.allow_partial) status[i] = PartialAnswer(paths[i], warnings);
    return status[i].ok();
  });
  std::vector<std::optional<QueryRangeSpan>> out(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    if (!status[i].ok()) return status[i];
    if (bounds[i].first <= bounds[i].last) out[i] = QueryRangeSpan{bounds[i].first, bounds[i].last};
  }
  return out;
}

}  // namespace gpucost
