// File: io/csv.h
//
// A streaming RFC 4180 CSV tokenizer and the field parsers every gpucost
// reader shares (numbers, ISO 8601 instants). Bytes arrive in chunks of any
// size; complete records come out through a callback, so memory stays
// bounded by the longest record, not the file.
//
// Rules (RFC 4180 plus what real exports need):
// - fields are separated by `delimiter`, records by LF or CRLF;
// - a field may be quoted with `"`; inside quotes, `""` is one quote and
//   delimiters and line breaks are data;
// - a UTF-8 byte-order mark at the very start is skipped (Azure writes one);
// - empty lines are skipped (their line numbers still count);
// - an unterminated quote at the end of input is an error naming the line
//   where the quoted field started and its column.
//
// Example:
//   gpucost::io::CsvTokenizer csv;
//   auto on_record = [&](const gpucost::io::CsvRecord& r) -> absl::Status {
//     // r.fields[i] is valid until the callback returns.
//     return absl::OkStatus();
//   };
//   absl::Status s = csv.Feed(chunk, on_record);   // as often as needed
//   if (s.ok()) s = csv.Finish(on_record);
#ifndef GPUCOST_IO_CSV_H_
#define GPUCOST_IO_CSV_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"

namespace gpucost::io {

struct CsvRecord {
  std::span<const std::string_view> fields;
  // Whether field i was quoted (a quoted empty field is an empty string,
  // an unquoted one is null to the readers).
  std::span<const uint8_t> quoted;
  int64_t line = 0;  // 1-based line where the record starts
};

using CsvCallback = absl::FunctionRef<absl::Status(const CsvRecord&)>;

class CsvTokenizer {
 public:
  // `name` is used in errors (a file name, or a table name).
  explicit CsvTokenizer(std::string_view name = "csv", char delimiter = ',');

  // Tokenizes `chunk` after what earlier calls left incomplete and calls
  // `on_record` for every complete record. Stops at the first error (the
  // callback's or the tokenizer's).
  [[nodiscard]] absl::Status Feed(std::string_view chunk, CsvCallback on_record);

  // Ends the input: a last record without a final line break is emitted; an
  // open quote is an error. `column_names` (optional, e.g. the header) name
  // the column in that error.
  [[nodiscard]] absl::Status Finish(CsvCallback on_record,
                                    std::span<const std::string> column_names = {});

  // The line the next unread byte is on (1-based), and the 0-based column the
  // tokenizer is in (of the pending, incomplete record), for callers that
  // report an error of the input stream itself (a truncated gzip).
  [[nodiscard]] int64_t pending_line() const { return pending_line_; }
  [[nodiscard]] int pending_column() const;
  [[nodiscard]] bool has_pending_record() const { return !pending_.empty(); }

 private:
  // Parses complete records of `data`; returns the bytes consumed (the rest
  // is an incomplete record).
  absl::Status Parse(std::string_view data, bool at_end, CsvCallback on_record,
                     size_t* consumed);

  std::string name_;
  char delimiter_;
  bool at_start_ = true;
  std::string pending_;         // the incomplete tail of the previous chunk
  int64_t pending_line_ = 1;    // line at the start of pending_
  std::span<const std::string> column_names_;  // set during Finish()
  // Per-record scratch, reused.
  std::vector<std::string_view> fields_;
  std::vector<uint8_t> quoted_;
  std::string unescaped_;
  std::vector<std::pair<size_t, size_t>> unescaped_spans_;  // field -> offset
};

// Parses a decimal number (integer, fraction, exponent). Surrounding spaces
// are ignored; NaN, infinities, thousands separators and currency symbols are
// not numbers. Returns false on anything else.
[[nodiscard]] bool ParseDouble(std::string_view text, double* out);

// Parses an ISO 8601 instant into nanoseconds since the epoch, UTC:
//   YYYY-MM-DD, optionally followed by `T` or a space and HH:MM[:SS[.f...]]
//   (up to 9 fraction digits), optionally followed by `Z`, `+HH:MM`, `+HHMM`,
//   `+HH` (or `-`) or ` UTC` (BigQuery). No zone means UTC. 24:00:00 is the
//   end of the day. Field ranges are checked (month 1-12, the month's days,
//   hour 0-23, minute and second 0-59).
[[nodiscard]] bool ParseInstant(std::string_view text, int64_t* ns);

// Whether a timestamp's text carries its zone ("Z", "+02:00", " UTC"):
// text without one is local time of a zone the caller must know.
[[nodiscard]] bool HasZoneDesignator(std::string_view text);

// Parses a US-style date MM/DD/YYYY (older Azure exports) as midnight UTC.
[[nodiscard]] bool ParseUsDate(std::string_view text, int64_t* ns);

// Whether `text` is a null marker: empty, or `null`/`NULL`/`Null`.
[[nodiscard]] inline bool IsNullText(std::string_view text) {
  return text.empty() || (text.size() == 4 && (text == "null" || text == "NULL" || text == "Null"));
}

// `text` with ASCII spaces and tabs removed at both ends.
[[nodiscard]] inline std::string_view TrimSpaces(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace gpucost::io

#endif  // GPUCOST_IO_CSV_H_
