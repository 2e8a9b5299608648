// JSON inside billing exports (private, not installed): tag objects, GCP
// label and credit arrays, and rows of BigQuery's JSON-lines export.
// json_cells.cc is the only user of simdjson (a large header).
#ifndef GPUCOST_SRC_IO_JSON_CELLS_H_
#define GPUCOST_SRC_IO_JSON_CELLS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "gpucost/io/csv.h"
#include "gpucost/status.h"
#include "io/cells.h"

namespace gpucost::io::internal {

// Tags as a JSON object ({"k": "v", ...}), an array of {"key":..,"value":..}
// objects (GCP labels), or Azure's brace-less object ("k": "v", ...).
absl::Status ParseTagsJson(std::string_view text, PairSink sink);
// GCP credits: a JSON array of {"amount": .., "type": .., "name": ..}.
absl::Status ParseCreditsJson(std::string_view text, CreditSink sink);
// The value of `key` in a flat JSON object (as text), if any.
absl::Status JsonObjectValue(std::string_view text, std::string_view key, std::string* value, bool* found);

// One JSON line (BigQuery export): "columns" are the format's fields, looked
// up by dotted path ("service.description" = {"service": {"description"}}).
class JsonLine;  // json_cells.cc
class JsonRow {
 public:
  JsonRow(const JsonLine& line, int64_t line_number, std::string_view source, const Layout& layout)
      : line_(line), line_number_(line_number), source_(source), layout_(layout) {}

  [[nodiscard]] bool IsNull(int col) const;
  [[nodiscard]] std::string_view Text(int col) const;
  [[nodiscard]] Parsed Number(int col, double* out) const;
  [[nodiscard]] Parsed Instant(int col, int64_t* out) const;
  [[nodiscard]] Parsed Day(int col, int64_t* out) const { return Instant(col, out); }
  [[nodiscard]] bool Naive(int col) const { return !IsNull(col) && !HasZoneDesignator(Text(col)); }
  [[nodiscard]] bool RawText(int col, std::string_view* text) const;
  [[nodiscard]] absl::Status Pairs(int col, PairSink sink) const;
  [[nodiscard]] absl::Status Credits(int col, CreditSink sink) const;
  [[nodiscard]] std::string_view Shown(int col) const { return Text(col); }
  [[nodiscard]] absl::Status Error(std::string_view column, std::string_view what) const {
    return LineError(source_, line_number_, column, what);
  }
  [[nodiscard]] const Layout& layout() const { return layout_; }

 private:
  const JsonLine& line_;
  int64_t line_number_;
  std::string_view source_;
  const Layout& layout_;
  mutable std::string scratch_;
};

// Splits JSON lines and parses each into fields (json_cells.cc).
class JsonLinesParser {
 public:
  // `paths[field]`: the dotted paths a field may have, first match wins.
  explicit JsonLinesParser(std::vector<std::vector<std::string>> paths);
  ~JsonLinesParser();
  // Parses one line; the JsonLine stays valid until the next call.
  absl::Status Parse(std::string_view text, std::string_view source, int64_t line_number);
  [[nodiscard]] const JsonLine& line() const { return *line_; }

 private:
  std::unique_ptr<JsonLine> line_;
  std::vector<std::vector<std::string>> paths_;
};

}  // namespace gpucost::io::internal

#endif  // GPUCOST_SRC_IO_JSON_CELLS_H_
