#include "gpucost/time.h"

#include <string>

#include "gpucost/status.h"

namespace gpucost {

absl::StatusOr<TimeUnit> ParseTimeUnit(std::string_view unit) {
  if (unit == "ns") return TimeUnit::kNanosecond;
  if (unit == "us") return TimeUnit::kMicrosecond;
  if (unit == "ms") return TimeUnit::kMillisecond;
  if (unit == "s") return TimeUnit::kSecond;
  return ParameterError("time_unit", "unknown unit '" + std::string(unit) +
                                         "' (expected ns, us, ms or s)");
}

absl::StatusOr<PeriodFreq> ParsePeriodFreq(std::string_view freq) {
  if (freq == "h") return PeriodFreq::kHour;
  if (freq == "D") return PeriodFreq::kDay;
  if (freq == "MS") return PeriodFreq::kMonthStart;
  return ParameterError("freq", "unknown freq '" + std::string(freq) +
                                    "' (expected \"h\", \"D\" or \"MS\")");
}

namespace {
int64_t FloorDiv(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}
}  // namespace

// Civil-date conversions after H. Hinnant's public-domain date algorithms
// (era-based, exact for the whole int64 day range we use).
int64_t DaysFromCivil(int64_t year, unsigned month, unsigned day) {
  year -= month <= 2 ? 1 : 0;
  const int64_t era = FloorDiv(year, 400);
  const auto yoe = static_cast<unsigned>(year - era * 400);
  const unsigned doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

CivilDate CivilFromDays(int64_t days) {
  days += 719468;
  const int64_t era = FloorDiv(days, 146097);
  const auto doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned day = doy - (153 * mp + 2) / 5 + 1;
  const unsigned month = mp < 10 ? mp + 3 : mp - 9;
  const int64_t year = static_cast<int64_t>(yoe) + era * 400 + (month <= 2 ? 1 : 0);
  return {year, month, day};
}

int64_t FloorToPeriod(int64_t instant_ns, PeriodFreq freq) {
  switch (freq) {
    case PeriodFreq::kHour:
      return FloorDiv(instant_ns, kNanosPerHour) * kNanosPerHour;
    case PeriodFreq::kDay:
      return FloorDiv(instant_ns, kNanosPerDay) * kNanosPerDay;
    case PeriodFreq::kMonthStart: {
      const CivilDate date = CivilFromDays(FloorDiv(instant_ns, kNanosPerDay));
      return DaysFromCivil(date.year, date.month, 1) * kNanosPerDay;
    }
  }
  return instant_ns;
}

}  // namespace gpucost
