// gpucost/status.h by example: errors that name where they are, read back
// as fields, and the propagation macros (run by ctest as cpp_example_status).
#include <cstdio>

#include "absl/status/statusor.h"
#include "example_check.h"
#include "gpucost/status.h"

namespace {

// [GPUCOST_ASSIGN_OR_RETURN]
// The macros propagate errors in functions that return a Status.
absl::StatusOr<double> Share(double value) {
  if (value <= 0 || value > 1) return gpucost::RowError("usage", 17, "share", "1.5 is outside (0, 1]");
  return value;
}

absl::Status Check(double value, double* out) {
  GPUCOST_ASSIGN_OR_RETURN(const double share, Share(value));
  GPUCOST_RETURN_IF_ERROR(share < 0.5 ? gpucost::ParameterError("share", "below one half") : absl::OkStatus());
  *out = share;
  return absl::OkStatus();
}
// [GPUCOST_ASSIGN_OR_RETURN]

}  // namespace

int main() {
  // [RowError]
  // One message format for every error: the table or file, the row (0-based)
  // or line (1-based), the column, then what is wrong.
  const absl::Status row = gpucost::RowError("usage", 17, "share", "1.5 is outside (0, 1]");
  CHECK(row.code() == absl::StatusCode::kInvalidArgument);
  CHECK(row.message() == "usage: row 17, column 'share': 1.5 is outside (0, 1]");
  const absl::Status line = gpucost::LineError("bill.csv", 12, "BilledCost", "'abc' is not a number");
  CHECK(line.message() == "bill.csv: line 12, column 'BilledCost': 'abc' is not a number");
  const absl::Status table = gpucost::TableError("usage", "column 'util' is missing");
  const absl::Status parameter = gpucost::ParameterError("alpha", "1.5 is outside [0, 1]");
  CHECK(parameter.message() == "parameter 'alpha': 1.5 is outside [0, 1]");
  std::printf("%s\n%s\n", std::string(line.message()).c_str(), std::string(table.message()).c_str());
  // [RowError]

  // [GetErrorLocation]
  // The same location as fields, without parsing the message.
  const std::optional<gpucost::ErrorLocation> where = gpucost::GetErrorLocation(row);
  CHECK(where.has_value() && *where->table == "usage" && *where->row == 17 && *where->column == "share");
  CHECK(!where->line.has_value() && where->reason == "1.5 is outside (0, 1]");
  CHECK(*gpucost::GetErrorLocation(line)->line == 12);
  CHECK(*gpucost::GetErrorLocation(parameter)->parameter == "alpha");
  CHECK(!gpucost::GetErrorLocation(absl::OkStatus()).has_value());
  CHECK(!gpucost::GetErrorLocation(absl::InternalError("not about one place")).has_value());
  // [GetErrorLocation]

  double out = 0;
  CHECK_OK(Check(0.75, &out));
  CHECK(out == 0.75);
  CHECK(Check(1.5, &out).message() == row.message());
  CHECK(*gpucost::GetErrorLocation(Check(0.25, &out))->parameter == "share");
  return 0;
}
