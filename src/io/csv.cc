#include "gpucost/io/csv.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <string>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "gpucost/status.h"
#include "gpucost/time.h"

namespace gpucost::io {
namespace {

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

// The `index`th column's name for messages, "#<n>" (1-based) when unnamed.
std::string ColumnName(std::span<const std::string> names, size_t index) {
  if (index < names.size()) return names[index];
  return absl::StrCat("#", index + 1);
}

}  // namespace

CsvTokenizer::CsvTokenizer(std::string_view name, char delimiter)
    : name_(name), delimiter_(delimiter) {}

absl::Status CsvTokenizer::Feed(std::string_view chunk, CsvCallback on_record) {
  size_t consumed = 0;
  absl::Status status;
  if (pending_.empty()) {
    status = Parse(chunk, /*at_end=*/false, on_record, &consumed);
    if (status.ok()) pending_.assign(chunk.substr(consumed));
  } else {
    pending_.append(chunk);
    status = Parse(pending_, /*at_end=*/false, on_record, &consumed);
    if (status.ok()) pending_.erase(0, consumed);
  }
  return status;
}

absl::Status CsvTokenizer::Finish(CsvCallback on_record,
                                  std::span<const std::string> column_names) {
  size_t consumed = 0;
  std::string data = std::move(pending_);
  pending_.clear();
  column_names_ = column_names;
  absl::Status status = Parse(data, /*at_end=*/true, on_record, &consumed);
  column_names_ = {};
  return status;
}

int CsvTokenizer::pending_column() const {
  int column = 0;
  bool in_quotes = false;
  for (char c : pending_) {
    if (c == '"') {
      in_quotes = !in_quotes;
    } else if (!in_quotes && c == delimiter_) {
      ++column;
    }
  }
  return column;
}

absl::Status CsvTokenizer::Parse(std::string_view data, bool at_end, CsvCallback on_record,
                                 size_t* consumed) {
  const size_t n = data.size();
  size_t pos = 0;
  if (at_start_) {
    if (n < kUtf8Bom.size() && !at_end && kUtf8Bom.substr(0, n) == data) {
      *consumed = 0;  // wait for more bytes to tell
      return absl::OkStatus();
    }
    if (data.substr(0, kUtf8Bom.size()) == kUtf8Bom) pos = kUtf8Bom.size();
    at_start_ = false;
  }
  *consumed = pos;
  int64_t line = pending_line_;
  const char delim = delimiter_;
  while (pos < n) {
    // Empty lines carry no record.
    if (data[pos] == '\n') {
      ++pos;
      ++line;
      *consumed = pos;
      pending_line_ = line;
      continue;
    }
    if (data[pos] == '\r') {
      if (pos + 1 < n && data[pos + 1] == '\n') {
        pos += 2;
        ++line;
        *consumed = pos;
        pending_line_ = line;
        continue;
      }
      if (pos + 1 == n) {
        if (!at_end) break;
        ++pos;
        *consumed = pos;
        continue;
      }
    }
    const int64_t record_line = line;
    fields_.clear();
    quoted_.clear();
    unescaped_.clear();
    unescaped_spans_.clear();
    bool complete = false;
    bool incomplete = false;
    while (!complete && !incomplete) {
      if (pos < n && data[pos] == '"') {
        // Quoted field: find the closing quote, skipping doubled quotes.
        size_t q = pos + 1;
        const size_t begin = q;
        bool escaped = false;
        size_t close = std::string_view::npos;
        while (q < n) {
          const void* hit = std::memchr(data.data() + q, '"', n - q);
          if (hit == nullptr) break;
          const size_t at = static_cast<const char*>(hit) - data.data();
          if (at + 1 < n && data[at + 1] == '"') {
            escaped = true;
            q = at + 2;
            continue;
          }
          if (at + 1 == n && !at_end) break;  // might be the first of ""
          close = at;
          break;
        }
        if (close == std::string_view::npos) {
          if (at_end) {
            return LineError(name_, record_line, ColumnName(column_names_, fields_.size()),
                             "unterminated quote (the quoted field never closes before the end "
                             "of the input)");
          }
          incomplete = true;
          break;
        }
        std::string_view raw = data.substr(begin, close - begin);
        for (char c : raw) line += (c == '\n');
        pos = close + 1;
        // Text between the closing quote and the delimiter (not RFC 4180)
        // is kept as data, as Python's csv module does.
        size_t tail = pos;
        while (tail < n && data[tail] != delim && data[tail] != '\n' && data[tail] != '\r') ++tail;
        if (tail == n && !at_end) {
          incomplete = true;
          break;
        }
        std::string_view extra = data.substr(pos, tail - pos);
        if (escaped || !extra.empty()) {
          const size_t offset = unescaped_.size();
          for (size_t i = 0; i < raw.size(); ++i) {
            unescaped_.push_back(raw[i]);
            if (raw[i] == '"') ++i;  // "" -> "
          }
          unescaped_.append(extra);
          unescaped_spans_.emplace_back(fields_.size(), offset);
          fields_.emplace_back(nullptr, unescaped_.size() - offset);
        } else {
          fields_.push_back(raw);
        }
        quoted_.push_back(1);
        pos = tail;
      } else {
        size_t end = pos;
        while (end < n && data[end] != delim && data[end] != '\n') ++end;
        if (end == n && !at_end) {
          incomplete = true;
          break;
        }
        std::string_view field = data.substr(pos, end - pos);
        if (!field.empty() && field.back() == '\r' && (end < n ? data[end] == '\n' : true)) {
          field.remove_suffix(1);
        }
        fields_.push_back(field);
        quoted_.push_back(0);
        pos = end;
      }
      // pos is at a delimiter, a line break or the end of the data.
      if (pos == n) {
        complete = true;  // at_end: the last record has no line break
      } else if (data[pos] == delim) {
        ++pos;
        if (pos == n) {
          if (!at_end) {
            incomplete = true;
          } else {
            fields_.emplace_back();
            quoted_.push_back(0);
            complete = true;
          }
        }
      } else if (data[pos] == '\r') {
        if (pos + 1 < n && data[pos + 1] == '\n') {
          pos += 2;
          ++line;
          complete = true;
        } else if (pos + 1 == n && !at_end) {
          incomplete = true;
        } else {
          ++pos;  // a lone CR ends the record, and the line
          ++line;
          complete = true;
        }
      } else {  // '\n'
        ++pos;
        ++line;
        complete = true;
      }
    }
    if (incomplete) break;
    for (const auto& [field, offset] : unescaped_spans_) {
      fields_[field] = std::string_view(unescaped_.data() + offset, fields_[field].size());
    }
    GPUCOST_RETURN_IF_ERROR(on_record(CsvRecord{fields_, quoted_, record_line}));
    *consumed = pos;
    pending_line_ = line;
  }
  return absl::OkStatus();
}

bool ParseDouble(std::string_view text, double* out) {
  text = TrimSpaces(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return false;
  const char first = text.front() == '-' && text.size() > 1 ? text[1] : text.front();
  if (!(first >= '0' && first <= '9') && first != '.') return false;  // nan, inf
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) return false;
  *out = value;
  return true;
}

namespace {

// Reads exactly `digits` decimal digits at `pos`.
bool Digits(std::string_view t, size_t pos, int digits, int* out) {
  if (pos + digits > t.size()) return false;
  int value = 0;
  for (int i = 0; i < digits; ++i) {
    const char c = t[pos + i];
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  *out = value;
  return true;
}

bool IsLeap(int year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

int DaysInMonth(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && IsLeap(year) ? 29 : kDays[month - 1];
}

bool CivilToNanos(int year, int month, int day, int64_t seconds_of_day, int64_t* ns) {
  if (month < 1 || month > 12 || day < 1 || day > DaysInMonth(year, month)) return false;
  const int64_t days = DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  // int64 nanoseconds reach 1677-09-21..2262-04-11; dates beyond are not instants.
  if (days < -106'000 || days > 106'000) return false;
  *ns = days * kNanosPerDay + seconds_of_day * kNanosPerSecond;
  return true;
}

}  // namespace

bool HasZoneDesignator(std::string_view text) {
  text = TrimSpaces(text);
  if (text.empty()) return false;
  if (text.back() == 'Z' || text.back() == 'z' || text.ends_with("UTC")) return true;
  // An offset after the time of day: "2025-03-01T10:00:00+02:00".
  return text.size() > 11 && text.find_first_of("+-", 11) != std::string_view::npos;
}

bool ParseInstant(std::string_view t, int64_t* ns) {
  t = TrimSpaces(t);
  int year = 0, month = 0, day = 0;
  if (!Digits(t, 0, 4, &year) || t.size() < 10 || t[4] != '-' || !Digits(t, 5, 2, &month) ||
      t[7] != '-' || !Digits(t, 8, 2, &day)) {
    return false;
  }
  size_t pos = 10;
  int64_t seconds_of_day = 0;
  int64_t fraction_ns = 0;
  if (pos < t.size() && (t[pos] == 'T' || t[pos] == 't' || t[pos] == ' ')) {
    ++pos;
    int hour = 0, minute = 0, second = 0;
    if (!Digits(t, pos, 2, &hour) || pos + 2 >= t.size() || t[pos + 2] != ':' ||
        !Digits(t, pos + 3, 2, &minute)) {
      return false;
    }
    pos += 5;
    if (pos < t.size() && t[pos] == ':') {
      if (!Digits(t, pos + 1, 2, &second)) return false;
      pos += 3;
      if (pos < t.size() && (t[pos] == '.' || t[pos] == ',')) {
        ++pos;
        int digits = 0;
        int64_t scale = 100'000'000;
        while (pos < t.size() && t[pos] >= '0' && t[pos] <= '9') {
          if (digits < 9) fraction_ns += (t[pos] - '0') * scale;
          scale /= 10;
          ++digits;
          ++pos;
        }
        if (digits == 0) return false;
      }
    }
    if (minute > 59 || second > 59) return false;
    if (hour == 24) {
      if (minute != 0 || second != 0 || fraction_ns != 0) return false;
    } else if (hour > 23) {
      return false;
    }
    seconds_of_day = hour * 3600 + minute * 60 + second;
    // Zone designator.
    std::string_view zone = t.substr(pos);
    if (!zone.empty() && zone.front() == ' ') zone.remove_prefix(1);
    if (zone.empty() || zone == "Z" || zone == "z" || zone == "UTC") {
      // UTC
    } else if (zone.front() == '+' || zone.front() == '-') {
      const int sign = zone.front() == '-' ? -1 : 1;
      int oh = 0, om = 0;
      if (!Digits(zone, 1, 2, &oh)) return false;
      const bool hh = zone.size() == 3;                                                  // +HH
      const bool hh_mm = zone.size() == 6 && zone[3] == ':' && Digits(zone, 4, 2, &om);  // +HH:MM
      const bool hhmm = zone.size() == 5 && Digits(zone, 3, 2, &om);                     // +HHMM
      if (!hh && !hh_mm && !hhmm) return false;
      if (oh > 23 || om > 59) return false;
      seconds_of_day -= int64_t{sign} * (oh * 3600 + om * 60);
    } else {
      return false;
    }
  } else if (pos != t.size()) {
    std::string_view zone = t.substr(pos);
    if (zone != "Z" && zone != " UTC") return false;
  }
  if (!CivilToNanos(year, month, day, seconds_of_day, ns)) return false;
  *ns += fraction_ns;
  return true;
}

bool ParseUsDate(std::string_view t, int64_t* ns) {
  t = TrimSpaces(t);
  int parts[3] = {0, 0, 0};
  int part = 0;
  int digits = 0;
  for (char c : t) {
    if (c >= '0' && c <= '9') {
      parts[part] = parts[part] * 10 + (c - '0');
      if (++digits > 4) return false;
    } else if (c == '/' && part < 2 && digits > 0) {
      ++part;
      digits = 0;
    } else {
      return false;
    }
  }
  if (part != 2 || digits != 4) return false;
  return CivilToNanos(parts[2], parts[0], parts[1], 0, ns);
}

}  // namespace gpucost::io
