// File: io/usage_csv.h
//
// Usage CSV files (SEMANTICS 1.3) parsed into columns laid out as Arrow lays
// them out, one block of whole lines at a time: a file cut at line ends
// parses on every core, each block on its own, its strings dictionary-encoded
// per block (a string is hashed only when it differs from the row before's).
// Only the usage columns are known here; a file with any other column goes
// through a general CSV reader.
//
// Values are read as Arrow's CSV reader reads them with gpucost's usage
// column types, so either reader gives the same table:
// - fields are separated by `,`, lines by LF or CRLF; empty lines are skipped
//   (their line numbers still count); a field may be quoted with `"` (`""`
//   is one quote); a quoted value holds no line break (the file is cut into
//   blocks at line ends);
// - strings are kept as written (UTF-8 checked), never null, except an empty
//   resource_id, which is null (Arrow's reader gives "": every sample must
//   name its resource, and a sample of resource "" would match no bill line);
// - numbers and instants ignore spaces and tabs around them; unquoted, the
//   spellings Arrow reads as null ("", "NA", "null", "NaN", "n/a", "#N/A",
//   ...) are null; a quoted value is read, never null;
// - int32: decimal digits with an optional `-`, or `0x` and hex digits; a
//   fraction of zeros too ("3.0", as a float column writes a device index:
//   Arrow refuses it);
// - float64: an optional sign, digits with a fraction and an exponent, or
//   `inf`/`infinity`; beyond double's range is +-inf or 0;
// - instants: ISO 8601 as ParseInstant reads them (a naive one is UTC).
//
// Example:
//   std::vector<std::string> names = {"timestamp", "resource_id", "device", "consumer", "share"};
//   absl::StatusOr<UsageCsvBlock> block =
//       ParseUsageCsvBlock(lines, names, "usage.csv", /*first_line=*/2);
#ifndef GPUCOST_IO_USAGE_CSV_H_
#define GPUCOST_IO_USAGE_CSV_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gpucost::io {

// What a usage CSV column holds.
enum class UsageCsvKind : uint8_t { kInstant, kString, kInt32, kFloat64 };

// The kind of the usage column `name`: "timestamp" instants; "resource_id"
// and "consumer" strings; "device" int32; "share", "util", "mem_used" and
// "duration" float64. nullopt for any other name.
[[nodiscard]] std::optional<UsageCsvKind> UsageCsvColumnKind(std::string_view name);

// One column of a parsed block.
struct UsageCsvColumn {
  UsageCsvKind kind = UsageCsvKind::kString;
  // Arrow's validity bitmap (bit i of byte i / 8 set: row i has a value);
  // empty when every row has one.
  std::vector<uint8_t> validity;
  std::vector<int64_t> instants;  // kInstant: ns since the epoch, UTC; INT64_MIN where null
  std::vector<int32_t> ints;      // kInt32: the values (0 where null); kString: dictionary codes
  std::vector<double> doubles;    // kFloat64 (0 where null)
  // kString: the block's distinct values in order of first appearance, as
  // Arrow string buffers: `dictionary_offsets` (one more than the values)
  // into `dictionary_data`.
  std::vector<int32_t> dictionary_offsets;
  std::string dictionary_data;
};

struct UsageCsvBlock {
  int64_t rows = 0;
  int64_t lines = 0;  // the lines the text held, empty ones too
  std::vector<UsageCsvColumn> columns;  // in the order of `names`
};

// Parses `text`, whole lines of a usage CSV that follow its header, whose
// columns are `names` (each known to UsageCsvColumnKind, else an error).
// `text` starts on line `first_line` of `file`; a bad value is an error
// naming the file, its line and its column.
[[nodiscard]] absl::StatusOr<UsageCsvBlock> ParseUsageCsvBlock(std::string_view text,
                                                               std::span<const std::string> names,
                                                               std::string_view file, int64_t first_line);

// The same parse given a block's lines in pieces, one after another (a
// block read from its file a piece at a time, each parsed while the bytes
// are still in cache): each piece holds whole lines, and need not outlive
// the call. `bytes_hint`: about how many bytes the pieces hold in all (the
// columns are reserved for them; 0: the first piece's size). The first
// error is kept: Add() and Finish() return it from then on.
//
//   UsageCsvParser parser(names, "usage.csv", /*first_line=*/2);
//   for (std::string_view piece : pieces) RETURN_IF_ERROR(parser.Add(piece));
//   absl::StatusOr<UsageCsvBlock> block = parser.Finish();
class UsageCsvParser {
 public:
  UsageCsvParser(std::span<const std::string> names, std::string_view file, int64_t first_line,
                 size_t bytes_hint = 0);
  ~UsageCsvParser();
  UsageCsvParser(UsageCsvParser&&) noexcept;
  UsageCsvParser& operator=(UsageCsvParser&&) noexcept;

  [[nodiscard]] absl::Status Add(std::string_view lines);
  // The block of every piece added. Call once.
  [[nodiscard]] absl::StatusOr<UsageCsvBlock> Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpucost::io

#endif  // GPUCOST_IO_USAGE_CSV_H_
