// Private to src/io/: the number and text helpers the Prometheus parsers
// share (exposition text, query answers).
#ifndef GPUCOST_SRC_IO_PROM_NUMBER_H_
#define GPUCOST_SRC_IO_PROM_NUMBER_H_

#include <charconv>
#include <limits>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace gpucost::prom_text {

inline std::string Shorten(std::string_view s) {
  if (s.size() <= 40) return std::string(s);
  return absl::StrCat(absl::string_view(s.data(), 37), "...");
}

// Go's ParseFloat forms Prometheus accepts: decimals, exponents, NaN, Inf
// with an optional sign (any case).
inline bool ParseDouble(std::string_view s, double* out) {
  if (s.empty()) return false;
  bool negative = false;
  std::string_view body = s;
  if (body[0] == '+' || body[0] == '-') {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (body.empty() || body[0] == '+' || body[0] == '-') return false;
  double v = 0;
  auto [ptr, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
  if (ptr != body.data() + body.size()) return false;
  if (ec == std::errc::result_out_of_range) {
    // Underflow to 0 or overflow to Inf, as Go would.
    v = std::numeric_limits<double>::infinity();
    for (char c : body) {
      if (c == 'e' || c == 'E') {
        if (body.find("e-") != std::string_view::npos || body.find("E-") != std::string_view::npos) v = 0;
        break;
      }
    }
  } else if (ec != std::errc()) {
    return false;
  }
  *out = negative ? -v : v;
  return true;
}

}  // namespace gpucost::prom_text

#endif  // GPUCOST_SRC_IO_PROM_NUMBER_H_
