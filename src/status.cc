#include "gpucost/status.h"

#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace gpucost {
namespace {
// Debian's absl::string_view does not convert from std::string_view.
absl::string_view ToAbsl(std::string_view sv) { return {sv.data(), sv.size()}; }

// One payload per field of ErrorLocation: no encoding, so any name (a column
// with a quote or a NUL in it) comes back as it went in.
constexpr std::string_view kTableUrl = "gpucost/error/table";
constexpr std::string_view kRowUrl = "gpucost/error/row";
constexpr std::string_view kLineUrl = "gpucost/error/line";
constexpr std::string_view kColumnUrl = "gpucost/error/column";
constexpr std::string_view kParameterUrl = "gpucost/error/parameter";
constexpr std::string_view kReasonUrl = "gpucost/error/reason";

void Put(absl::Status& status, std::string_view url, std::string_view value) {
  status.SetPayload(ToAbsl(url), absl::Cord(ToAbsl(value)));
}

std::optional<std::string> Get(const absl::Status& status, std::string_view url) {
  const auto value = status.GetPayload(ToAbsl(url));  // absl::optional in Debian
  if (!value.has_value()) return std::nullopt;
  return std::string(*value);
}

std::optional<long long> GetNumber(const absl::Status& status, std::string_view url) {
  const std::optional<std::string> text = Get(status, url);
  long long value = 0;
  if (!text.has_value() ||
      std::from_chars(text->data(), text->data() + text->size(), value).ec != std::errc()) {
    return std::nullopt;
  }
  return value;
}

absl::Status WithLocation(absl::Status status, std::string_view table, std::string_view number_url,
                          long long number, std::string_view column, std::string_view what) {
  Put(status, kTableUrl, table);
  Put(status, number_url, std::to_string(number));
  Put(status, kColumnUrl, column);
  Put(status, kReasonUrl, what);
  return status;
}

}  // namespace

absl::Status RowError(std::string_view table, long long row,
                      std::string_view column, std::string_view what) {
  return WithLocation(absl::InvalidArgumentError(absl::StrCat(ToAbsl(table), ": row ", row, ", column '",
                                                              ToAbsl(column), "': ", ToAbsl(what))),
                      table, kRowUrl, row, column, what);
}

absl::Status LineError(std::string_view file, long long line,
                       std::string_view column, std::string_view what) {
  return WithLocation(absl::InvalidArgumentError(absl::StrCat(ToAbsl(file), ": line ", line, ", column '",
                                                              ToAbsl(column), "': ", ToAbsl(what))),
                      file, kLineUrl, line, column, what);
}

absl::Status TableError(std::string_view table, std::string_view what) {
  absl::Status status = absl::InvalidArgumentError(absl::StrCat(ToAbsl(table), ": ", ToAbsl(what)));
  Put(status, kTableUrl, table);
  Put(status, kReasonUrl, what);
  return status;
}

absl::Status ParameterError(std::string_view parameter, std::string_view what) {
  absl::Status status =
      absl::InvalidArgumentError(absl::StrCat("parameter '", ToAbsl(parameter), "': ", ToAbsl(what)));
  Put(status, kParameterUrl, parameter);
  Put(status, kReasonUrl, what);
  return status;
}

std::optional<ErrorLocation> GetErrorLocation(const absl::Status& status) {
  std::optional<std::string> reason = Get(status, kReasonUrl);
  if (status.ok() || !reason.has_value()) return std::nullopt;
  ErrorLocation out;
  out.table = Get(status, kTableUrl);
  out.row = GetNumber(status, kRowUrl);
  out.line = GetNumber(status, kLineUrl);
  out.column = Get(status, kColumnUrl);
  out.parameter = Get(status, kParameterUrl);
  out.reason = std::move(*reason);
  return out;
}

}  // namespace gpucost
