// How a billing reader's rows look to a format (private, not installed):
// typed cell results, tag and credit sinks, and where a format's fields are
// in one input. Shared by the row sources (CSV, Arrow: billing.cc; JSON
// lines: json_cells.cc) and the formats.
#ifndef GPUCOST_SRC_IO_CELLS_H_
#define GPUCOST_SRC_IO_CELLS_H_

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"

namespace gpucost::io::internal {

inline absl::string_view ToAbsl(std::string_view sv) { return {sv.data(), sv.size()}; }



// Result of reading a typed value from a cell.
enum class Parsed { kOk, kNull, kBad };

// How a tag (or label) value was written: a JSON string, or another JSON
// scalar kept as its JSON text (number, true, false, null).
enum class ValueKind { kString, kRaw };
using PairSink = absl::FunctionRef<void(std::string_view key, std::string_view value, ValueKind kind)>;
// A GCP credit: amount (negative), type and name.
using CreditSink = absl::FunctionRef<void(double amount, std::string_view type, std::string_view name)>;

// The logical columns of a format and the column names each may have in an
// export (the first is the canonical spelling, used in errors).
struct ColumnSpec {
  int field;
  std::array<std::string_view, 8> names;  // unused entries are empty
};

// Where a format's fields are in one input: physical column per field.
struct Layout {
  std::vector<int> column;         // per field: physical column, or -1
  std::vector<std::string> names;  // physical column names
  std::vector<std::string> field_names;  // per field: the name to report
  // Extra tag columns (legacy CUR "resourceTags/user:team"): column -> key.
  std::vector<std::pair<int, std::string>> tag_columns;

  [[nodiscard]] int col(int field) const { return column[field]; }
  [[nodiscard]] bool has(int field) const { return column[field] >= 0; }
  [[nodiscard]] const std::string& name(int field) const { return field_names[field]; }
};

}  // namespace gpucost::io::internal

#endif  // GPUCOST_SRC_IO_CELLS_H_
