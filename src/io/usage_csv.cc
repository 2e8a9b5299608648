#include "gpucost/io/usage_csv.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <limits>
#include <string>
#include <system_error>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "gpucost/io/csv.h"
#include "gpucost/status.h"
#include "gpucost/time.h"
#include "io/cells.h"

namespace gpucost::io {
namespace {

using internal::ToAbsl;

// The values Arrow's CSV reader reads as null in a number or instant column
// (its ConvertOptions.null_values default).
constexpr std::string_view kNullSpellings[] = {"",     "#N/A",    "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN",
                                               "-NaN", "-nan",    "1.#IND",   "1.#QNAN", "N/A", "NA",
                                               "NULL", "NaN",     "n/a",      "nan",  "null"};

bool IsNullSpelling(std::string_view raw) {
  return std::find(std::begin(kNullSpellings), std::end(kNullSpellings), raw) != std::end(kNullSpellings);
}

bool IsUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    if (*p < 0x80) {
      ++p;
      continue;
    }
    int extra = 0;
    uint32_t code = 0;
    if ((*p & 0xE0) == 0xC0) {
      extra = 1, code = *p & 0x1F;
    } else if ((*p & 0xF0) == 0xE0) {
      extra = 2, code = *p & 0x0F;
    } else if ((*p & 0xF8) == 0xF0) {
      extra = 3, code = *p & 0x07;
    } else {
      return false;
    }
    if (end - p <= extra) return false;
    for (int i = 1; i <= extra; ++i) {
      if ((p[i] & 0xC0) != 0x80) return false;
      code = (code << 6) | (p[i] & 0x3F);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
    static constexpr uint32_t kSmallest[] = {0, 0x80, 0x800, 0x10000};
    if (code < kSmallest[extra] || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) return false;
    p += extra + 1;
  }
  return true;
}

bool ParseInt32(std::string_view t, int32_t* out) {
  t = TrimSpaces(t);
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    uint32_t value = 0;
    const auto [end, ec] = std::from_chars(t.data() + 2, t.data() + t.size(), value, 16);
    if (ec != std::errc() || end != t.data() + t.size() || value > uint32_t{INT32_MAX}) return false;
    *out = static_cast<int32_t>(value);
    return true;
  }
  if (t.empty() || t[0] == '+') return false;  // from_chars takes no '+'; neither does Arrow
  const char* const stop = t.data() + t.size();
  auto [end, ec] = std::from_chars(t.data(), stop, *out);
  if (ec != std::errc()) return false;
  // "3.0": a device index a float column wrote (pandas writes an integer
  // column with a missing value so); Arrow refuses it, gpucost reads 3.
  if (end < stop && *end == '.' && end > t.data() && end[-1] >= '0' && end[-1] <= '9') {
    for (++end; end < stop && *end == '0';) ++end;
  }
  return end == stop;
}

// A double as Arrow reads one (NaN too: the caller tells a null spelling).
bool ParseFloat64(std::string_view t, double* out) {
  t = TrimSpaces(t);
  if (!t.empty() && t[0] == '+') {
    t.remove_prefix(1);
    if (!t.empty() && t[0] == '-') return false;
  }
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), *out);
  if (end != t.data() + t.size() || t.empty()) return false;
  if (ec == std::errc::result_out_of_range) {
    // Beyond double's range: Arrow reads +-inf or 0, as strtod does.
    const std::string copy(t);
    *out = std::strtod(copy.c_str(), nullptr);
    return true;
  }
  return ec == std::errc();
}

// One column's output and what the parser remembers between its rows.
struct ColumnState {
  std::string_view name;
  UsageCsvColumn* out = nullptr;
  std::vector<int64_t> null_rows;
  // The last value read (instants: a copy of its text, and its instant;
  // strings: the dictionary's kept copy and its code): scrape instants and
  // resources repeat row after row.
  std::string previous_text;
  std::string_view previous;
  bool empty_is_null = false;  // resource_id: every sample names its resource
  int64_t previous_instant = 0;
  int32_t previous_code = -1;
  absl::flat_hash_map<std::string_view, int32_t> codes;
};

// Copies of text that stay where they are while more are made (the
// dictionaries' keys: the lines they were read from are gone by the next
// piece).
class KeptText {
 public:
  std::string_view Keep(std::string_view text) {
    if (text.empty()) return {};
    if (text.size() > size_ - used_) {
      size_ = std::max(kChunk, text.size());
      chunks_.push_back(std::make_unique_for_overwrite<char[]>(size_));
      used_ = 0;
    }
    char* at = chunks_.back().get() + used_;
    std::memcpy(at, text.data(), text.size());
    used_ += text.size();
    return {at, text.size()};
  }

 private:
  static constexpr size_t kChunk = size_t{64} << 10;
  std::vector<std::unique_ptr<char[]>> chunks_;
  size_t used_ = 0, size_ = 0;
};

}  // namespace

struct UsageCsvParser::Impl {
  Impl(std::span<const std::string> names, std::string_view file, int64_t first_line, size_t bytes_hint)
      : names_(names.begin(), names.end()), file_(file), first_line_(first_line), line_(first_line),
        bytes_hint_(bytes_hint) {
    block_.columns.resize(names_.size());
    states_.resize(names_.size());
    for (size_t c = 0; c < names_.size(); ++c) {
      const std::optional<UsageCsvKind> kind = UsageCsvColumnKind(names_[c]);
      if (!kind) {
        status_ = LineError(file_, 1, names_[c], "not a usage column");
        return;
      }
      block_.columns[c].kind = *kind;
      states_[c].name = names_[c];
      states_[c].out = &block_.columns[c];
      states_[c].empty_is_null = names_[c] == "resource_id";
      if (*kind == UsageCsvKind::kString) block_.columns[c].dictionary_offsets.push_back(0);
    }
  }

  absl::Status Add(std::string_view text) {
    if (!status_.ok()) return status_;
    bytes_ += text.size();
    if (bytes_ > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
      return status_ = absl::InvalidArgumentError(absl::StrCat(ToAbsl(file_), ": a block of ", bytes_,
                                                               " bytes; blocks of under 2 GiB are parsed"));
    }
    if (!reserved_) Reserve(text);
    const char* p = text.data();
    const char* const end = p + text.size();
    while (p < end) {
      const char* newline = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
      const char* next = newline != nullptr ? newline + 1 : end;
      const char* line_end = newline != nullptr ? newline : end;
      if (line_end > p && line_end[-1] == '\r') --line_end;
      if (line_end > p) {
        if (absl::Status status = ParseLine(p, line_end); !status.ok()) return status_ = status;
        ++block_.rows;
      }
      p = next;
      ++line_;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<UsageCsvBlock> Finish() {
    if (!status_.ok()) return status_;
    block_.lines = line_ - first_line_;
    FinishValidity();
    status_ = absl::FailedPreconditionError("UsageCsvParser: Finish() was called already");
    return std::move(block_);
  }

 private:
  // Vectors sized for the rows the first line's length suggests over the
  // bytes expected (the hint, else the first piece's).
  void Reserve(std::string_view text) {
    reserved_ = true;
    const size_t first = std::min(text.find('\n'), text.size());
    const size_t bytes = std::max(bytes_hint_, text.size());
    const size_t rows = bytes / std::max<size_t>(first + 1, 8) * 11 / 10 + 16;
    for (UsageCsvColumn& column : block_.columns) {
      switch (column.kind) {
        case UsageCsvKind::kInstant: column.instants.reserve(rows); break;
        case UsageCsvKind::kString:
        case UsageCsvKind::kInt32: column.ints.reserve(rows); break;
        case UsageCsvKind::kFloat64: column.doubles.reserve(rows); break;
      }
    }
  }

  absl::Status ParseLine(const char* p, const char* line_end) {
    const size_t n = states_.size();
    for (size_t c = 0; c < n; ++c) {
      std::string_view value;
      bool quoted = false;
      const char* after;  // the delimiter after the field, or line_end
      if (p < line_end && *p == '"') {
        quoted = true;
        const char* close = p + 1;
        bool escaped = false;
        for (;;) {
          close = static_cast<const char*>(std::memchr(close, '"', static_cast<size_t>(line_end - close)));
          if (close == nullptr) return LineError(file_, line_, names_[c], "unterminated quote");
          if (close + 1 < line_end && close[1] == '"') {
            escaped = true;
            close += 2;
            continue;
          }
          break;
        }
        value = escaped ? Unescape(std::string_view(p + 1, static_cast<size_t>(close - p - 1)))
                        : std::string_view(p + 1, static_cast<size_t>(close - p - 1));
        after = close + 1;
        if (after < line_end && *after != ',') {
          return LineError(file_, line_, names_[c], "text after a closing quote");
        }
      } else {
        after = static_cast<const char*>(std::memchr(p, ',', static_cast<size_t>(line_end - p)));
        if (after == nullptr) after = line_end;
        value = std::string_view(p, static_cast<size_t>(after - p));
      }
      if (after == line_end && c + 1 < n) return FieldCountError(static_cast<int64_t>(c) + 1);
      if (after != line_end && c + 1 == n) {
        return FieldCountError(static_cast<int64_t>(n) + CountFields(after + 1, line_end));
      }
      if (absl::Status status = Convert(states_[c], value, quoted); !status.ok()) return status;
      p = after + 1;
    }
    return absl::OkStatus();
  }

  absl::Status Convert(ColumnState& state, std::string_view value, bool quoted) {
    UsageCsvColumn& out = *state.out;
    const auto row = static_cast<int64_t>(block_.rows);
    switch (out.kind) {
      case UsageCsvKind::kInstant: {
        if (!value.empty() && value == state.previous_text) {
          out.instants.push_back(state.previous_instant);
          return absl::OkStatus();
        }
        int64_t ns = 0;
        if (ParseInstant(value, &ns)) {
          state.previous_text.assign(value);  // the line is gone by the next piece
          state.previous_instant = ns;
          out.instants.push_back(ns);
        } else if (!quoted && IsNullSpelling(value)) {
          state.null_rows.push_back(row);
          out.instants.push_back(kMissingInstant);
        } else {
          return BadValue(state, value, "is not an ISO 8601 instant");
        }
        return absl::OkStatus();
      }
      case UsageCsvKind::kString: {
        if (state.previous_code >= 0 && value == state.previous) {
          out.ints.push_back(state.previous_code);
          return absl::OkStatus();
        }
        if (value.empty() && state.empty_is_null) {
          state.null_rows.push_back(row);
          out.ints.push_back(0);
          return absl::OkStatus();
        }
        auto found = state.codes.find(value);
        if (found == state.codes.end()) {
          if (!IsUtf8(value)) return BadValue(state, value, "is not UTF-8 text");
          const std::string_view key = kept_.Keep(value);  // outlives this piece's lines
          found = state.codes.emplace(key, static_cast<int32_t>(state.codes.size())).first;
          out.dictionary_data.append(key);
          out.dictionary_offsets.push_back(static_cast<int32_t>(out.dictionary_data.size()));
        }
        state.previous = found->first;
        state.previous_code = found->second;
        out.ints.push_back(found->second);
        return absl::OkStatus();
      }
      case UsageCsvKind::kInt32: {
        int32_t v = 0;
        if (ParseInt32(value, &v)) {
          out.ints.push_back(v);
        } else if (!quoted && IsNullSpelling(value)) {
          state.null_rows.push_back(row);
          out.ints.push_back(0);
        } else {
          return BadValue(state, value, "is not an integer");
        }
        return absl::OkStatus();
      }
      case UsageCsvKind::kFloat64: {
        double v = 0;
        const bool parsed = ParseFloat64(value, &v);
        // A NaN that is not a null's spelling is a value, as Arrow reads it
        // ("nan(1)", quoted "nan"); a null spelling unquoted is null.
        const bool null_spelling = !quoted && IsNullSpelling(value);  // "", "NA", "nan", ...
        if (parsed && (!std::isnan(v) || !null_spelling)) {
          out.doubles.push_back(v);
        } else if (null_spelling) {
          state.null_rows.push_back(row);
          out.doubles.push_back(0);
        } else {
          return BadValue(state, value, "is not a number");
        }
        return absl::OkStatus();
      }
    }
    return absl::OkStatus();
  }

  // The value between quotes with each `""` made one quote, in scratch
  // space valid until the next field is unescaped.
  std::string_view Unescape(std::string_view inner) {
    unescaped_.clear();
    for (size_t i = 0; i < inner.size(); ++i) {
      unescaped_.push_back(inner[i]);
      if (inner[i] == '"') ++i;  // the second quote of a pair
    }
    return unescaped_;
  }

  // Fields of [p, line_end), quotes respected (for the message only).
  static int64_t CountFields(const char* p, const char* line_end) {
    int64_t fields = 1;
    bool in_quotes = false;
    for (; p < line_end; ++p) {
      if (*p == '"') in_quotes = !in_quotes;
      if (*p == ',' && !in_quotes) ++fields;
    }
    return fields;
  }

  absl::Status FieldCountError(int64_t found) const {
    return absl::InvalidArgumentError(
        absl::StrCat(ToAbsl(file_), ": line ", line_, ": expected ", names_.size(), " fields, found ", found));
  }

  absl::Status BadValue(const ColumnState& state, std::string_view value, std::string_view what) const {
    return LineError(file_, line_, state.name, absl::StrCat("'", ToAbsl(value), "' ", ToAbsl(what)));
  }

  // Null rows become validity bitmaps.
  void FinishValidity() {
    for (ColumnState& state : states_) {
      if (state.null_rows.empty()) continue;
      std::vector<uint8_t>& validity = state.out->validity;
      validity.assign(static_cast<size_t>((block_.rows + 7) / 8), 0xFF);
      if (block_.rows % 8 != 0) {  // no bits past the rows
        validity.back() = static_cast<uint8_t>((1u << (block_.rows % 8)) - 1);
      }
      for (const int64_t row : state.null_rows) {
        validity[static_cast<size_t>(row / 8)] &= static_cast<uint8_t>(~(1u << (row % 8)));
      }
    }
  }

  std::vector<std::string> names_;
  std::string file_;
  int64_t first_line_;
  int64_t line_;
  size_t bytes_hint_;
  size_t bytes_ = 0;
  bool reserved_ = false;
  absl::Status status_;  // the first error, sticky
  UsageCsvBlock block_;
  std::vector<ColumnState> states_;
  std::string unescaped_;
  KeptText kept_;
};

std::optional<UsageCsvKind> UsageCsvColumnKind(std::string_view name) {
  if (name == "timestamp") return UsageCsvKind::kInstant;
  if (name == "resource_id" || name == "consumer") return UsageCsvKind::kString;
  if (name == "device") return UsageCsvKind::kInt32;
  if (name == "share" || name == "util" || name == "mem_used" || name == "duration") return UsageCsvKind::kFloat64;
  return std::nullopt;
}

UsageCsvParser::UsageCsvParser(std::span<const std::string> names, std::string_view file, int64_t first_line,
                               size_t bytes_hint)
    : impl_(std::make_unique<Impl>(names, file, first_line, bytes_hint)) {}
UsageCsvParser::~UsageCsvParser() = default;
UsageCsvParser::UsageCsvParser(UsageCsvParser&&) noexcept = default;
UsageCsvParser& UsageCsvParser::operator=(UsageCsvParser&&) noexcept = default;

absl::Status UsageCsvParser::Add(std::string_view lines) { return impl_->Add(lines); }

absl::StatusOr<UsageCsvBlock> UsageCsvParser::Finish() { return impl_->Finish(); }

absl::StatusOr<UsageCsvBlock> ParseUsageCsvBlock(std::string_view text, std::span<const std::string> names,
                                                 std::string_view file, int64_t first_line) {
  UsageCsvParser parser(names, file, first_line);
  if (absl::Status status = parser.Add(text); !status.ok()) return status;
  return parser.Finish();
}

}  // namespace gpucost::io
