// File: status.h
//
// Error plumbing shared by every gpucost function. Fallible public functions
// return absl::Status or absl::StatusOr<T>; no exception crosses the API.
//
// Debian's Abseil (20220623) has its own absl::string_view, distinct from
// std::string_view, and predates ABSL_RETURN_IF_ERROR. So messages are built
// as std::string and the propagation macros are ours.
#ifndef GPUCOST_STATUS_H_
#define GPUCOST_STATUS_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gpucost {

// An InvalidArgument error naming the table (or file), the row and the column,
// in the one format every gpucost message uses:
//   "usage: row 17, column 'share': 1.5 is outside (0, 1]"
// `row` is the 0-based position in a table (as pandas' iloc counts).
[[nodiscard]] absl::Status RowError(std::string_view table, long long row,
                                    std::string_view column,
                                    std::string_view what);

// The same for a file: "bill.csv: line 12, column 'BilledCost': not a number".
// `line` is 1-based, as editors count.
[[nodiscard]] absl::Status LineError(std::string_view file, long long line,
                                     std::string_view column,
                                     std::string_view what);

// An InvalidArgument error about a table as a whole (a missing column).
[[nodiscard]] absl::Status TableError(std::string_view table,
                                      std::string_view what);

// An InvalidArgument error about a parameter of a call:
//   "parameter 'alpha': 1.5 is outside [0, 1]"
[[nodiscard]] absl::Status ParameterError(std::string_view parameter,
                                          std::string_view what);

// Where a bad-input error points, as the functions above were given it. They
// attach it to the status they build (as payloads, so it travels with every
// copy), and callers read it back without parsing the message: the Python
// bindings fill gpucost.InvalidInputError's fields from it.
struct ErrorLocation {
  std::optional<std::string> table;      // the table or file
  std::optional<long long> row;          // 0-based table row (RowError)
  std::optional<long long> line;         // 1-based file line (LineError)
  std::optional<std::string> column;     // RowError, LineError
  std::optional<std::string> parameter;  // ParameterError
  std::string reason;                    // `what`: the message after the location
};

// The location `status` was built with; nullopt for an OK status and for one
// built another way (a message rebuilt around another error's is a new status
// and has none).
[[nodiscard]] std::optional<ErrorLocation> GetErrorLocation(
    const absl::Status& status);

}  // namespace gpucost

#define GPUCOST_STATUS_CONCAT_INNER_(a, b) a##b
#define GPUCOST_STATUS_CONCAT_(a, b) GPUCOST_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` (an absl::Status) is not OK.
#define GPUCOST_RETURN_IF_ERROR(expr)                   \
  do {                                                  \
    ::absl::Status gpucost_status_ = (expr);            \
    if (!gpucost_status_.ok()) return gpucost_status_;  \
  } while (false)

// `GPUCOST_ASSIGN_OR_RETURN(auto x, Foo());` assigns the value of an
// absl::StatusOr or returns its error.
#define GPUCOST_ASSIGN_OR_RETURN(lhs, rexpr)                                \
  GPUCOST_ASSIGN_OR_RETURN_IMPL_(                                           \
      GPUCOST_STATUS_CONCAT_(gpucost_statusor_, __LINE__), lhs, rexpr)
// `statusor` is a name and `lhs` a declaration: neither can be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define GPUCOST_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                   \
  if (!statusor.ok()) return std::move(statusor).status();   \
  lhs = std::move(statusor).value()
// NOLINTEND(bugprone-macro-parentheses)

#endif  // GPUCOST_STATUS_H_
