// gpucost/io/csv.h by example: the streaming CSV tokenizer and the field
// parsers every reader shares; gpucost/io/usage_csv.h: usage CSV blocks
// parsed into Arrow-shaped columns (run by ctest as cpp_example_csv).
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "example_check.h"
#include "gpucost/io/csv.h"
#include "gpucost/io/usage_csv.h"
#include "gpucost/time.h"

int main() {
  // [CsvTokenizer]
  // Records come out through a callback as the bytes arrive, in chunks of
  // any size; a quoted field may hold the delimiter, quotes and line breaks.
  const std::string_view text = "resource,cost,note\ni-1,8.00,\"says \"\"hi\"\", twice\"\ni-2,,\"two\nlines\"";
  std::vector<std::vector<std::string>> rows;
  std::vector<int64_t> lines;
  // CsvCallback is an absl::FunctionRef: keep the lambda in a variable.
  auto on_record = [&](const gpucost::io::CsvRecord& record) -> absl::Status {
    rows.emplace_back(record.fields.begin(), record.fields.end());  // fields live until the callback returns
    lines.push_back(record.line);
    if (record.line == 2) CHECK(record.quoted[2] == 1 && record.quoted[1] == 0);
    return absl::OkStatus();
  };
  gpucost::io::CsvTokenizer csv("bill.csv");
  CHECK_OK(csv.Feed(text.substr(0, 25), on_record));  // ends inside the second record
  CHECK(csv.has_pending_record() && csv.pending_line() == 2 && csv.pending_column() == 1);
  CHECK_OK(csv.Feed(text.substr(25), on_record));
  CHECK_OK(csv.Finish(on_record));  // the last record has no final line break
  CHECK(rows.size() == 3 && rows[1][2] == "says \"hi\", twice" && rows[2][2] == "two\nlines");
  CHECK((lines == std::vector<int64_t>{1, 2, 3}));
  // An open quote at the end is an error naming the line and the column.
  gpucost::io::CsvTokenizer open("bill.csv", ';');
  const gpucost::io::CsvCallback callback = on_record;
  CHECK_OK(open.Feed("a;b\n1;\"never closed", callback));
  const std::vector<std::string> header = {"a", "b"};
  const absl::Status unterminated = open.Finish(callback, header);
  CHECK(!unterminated.ok());
  std::printf("%s\n", std::string(unterminated.message()).c_str());
  // [CsvTokenizer]

  // [ParseDouble]
  double value = 0;
  CHECK(gpucost::io::ParseDouble(" 1.5e3 ", &value) && value == 1500);
  CHECK(!gpucost::io::ParseDouble("$12", &value) && !gpucost::io::ParseDouble("NaN", &value));
  // [ParseDouble]

  // [ParseInstant]
  // ISO 8601 instants to ns UTC; a zone designator moves them.
  int64_t ns = 0;
  CHECK(gpucost::io::ParseInstant("2025-03-01T10:00:00Z", &ns));
  const int64_t ten = ns;
  CHECK(gpucost::io::ParseInstant("2025-03-01 12:00:00+02:00", &ns) && ns == ten);
  CHECK(gpucost::io::ParseInstant("2025-03-01 10:00:00 UTC", &ns) && ns == ten);
  CHECK(!gpucost::io::ParseInstant("2025-02-30", &ns));
  CHECK(gpucost::io::HasZoneDesignator("2025-03-01T10:00:00Z"));
  CHECK(!gpucost::io::HasZoneDesignator("2025-03-01 10:00:00"));  // local time of some zone
  CHECK(gpucost::io::ParseUsDate("03/01/2025", &ns) && ns == ten - 10 * gpucost::kNanosPerHour);
  // [ParseInstant]

  // [IsNullText]
  CHECK(gpucost::io::IsNullText("") && gpucost::io::IsNullText("NULL") && !gpucost::io::IsNullText("none"));
  CHECK(gpucost::io::TrimSpaces(" \ti-1 ") == "i-1");
  // [IsNullText]

  // [ParseUsageCsvBlock]
  // Whole lines after a usage CSV's header (a block a thread parses on its
  // own): strings become per-block dictionary codes, numbers and instants
  // Arrow-shaped arrays, unquoted null spellings nulls.
  const std::vector<std::string> names = {"timestamp", "resource_id", "device", "consumer", "share", "util"};
  for (const std::string& name : names) CHECK(gpucost::io::UsageCsvColumnKind(name).has_value());
  CHECK(!gpucost::io::UsageCsvColumnKind("hostname").has_value());  // such a file goes to a general reader
  const std::string_view usage_lines =
      "2026-03-01T00:00:00Z,node-a,0,team/a,1,0.5\n"
      "2026-03-01T00:00:00Z,node-a,1,\"team/b\",1,NA\n";
  absl::StatusOr<gpucost::io::UsageCsvBlock> block = gpucost::io::ParseUsageCsvBlock(usage_lines, names, "usage.csv", 2);
  CHECK_OK(block);
  CHECK(block->rows == 2 && block->lines == 2);
  const gpucost::io::UsageCsvColumn& resource = block->columns[1];
  CHECK(resource.kind == gpucost::io::UsageCsvKind::kString);
  CHECK((resource.ints == std::vector<int32_t>{0, 0}) && resource.dictionary_data == "node-a");
  CHECK((block->columns[3].dictionary_offsets == std::vector<int32_t>{0, 6, 12}));  // team/a, team/b
  const gpucost::io::UsageCsvColumn& util = block->columns[5];
  CHECK(util.doubles[0] == 0.5 && util.validity.size() == 1 && util.validity[0] == 0b01);  // row 1 is null
  const absl::Status bad =
      gpucost::io::ParseUsageCsvBlock("2026-03-01T00:00:00Z,node-a,x,a,1,0.5\n", names, "usage.csv", 7).status();
  CHECK(!bad.ok());
  std::printf("%s\n", std::string(bad.message()).c_str());  // usage.csv: line 7, column 'device': 'x' is not an integer
  // [ParseUsageCsvBlock]

  // [UsageCsvParser]
  // The same block given in pieces of whole lines (read from a file a piece
  // at a time into one buffer): a piece need not outlive its Add().
  gpucost::io::UsageCsvParser parser(names, "usage.csv", 2);
  const size_t cut = usage_lines.find('\n') + 1;
  std::string piece(usage_lines.substr(0, cut));
  CHECK_OK(parser.Add(piece));
  piece.assign(usage_lines.substr(cut));  // the first piece's bytes overwritten
  CHECK_OK(parser.Add(piece));
  absl::StatusOr<gpucost::io::UsageCsvBlock> pieces = parser.Finish();
  CHECK_OK(pieces);
  CHECK(pieces->rows == 2 && pieces->columns[3].dictionary_data == block->columns[3].dictionary_data);
  // [UsageCsvParser]
  return 0;
}
