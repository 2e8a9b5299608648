#include "gpucost/status.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace gpucost {
namespace {
// Debian's absl::string_view does not convert from std::string_view.
absl::string_view ToAbsl(std::string_view sv) { return {sv.data(), sv.size()}; }
}  // namespace

absl::Status RowError(std::string_view table, long long row,
                      std::string_view column, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(ToAbsl(table), ": row ", row,
                                                 ", column '", ToAbsl(column),
                                                 "': ", ToAbsl(what)));
}

absl::Status LineError(std::string_view file, long long line,
                       std::string_view column, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(ToAbsl(file), ": line ", line,
                                                 ", column '", ToAbsl(column),
                                                 "': ", ToAbsl(what)));
}

absl::Status TableError(std::string_view table, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(ToAbsl(table), ": ", ToAbsl(what)));
}

absl::Status ParameterError(std::string_view parameter, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("parameter '", ToAbsl(parameter), "': ", ToAbsl(what)));
}

}  // namespace gpucost
