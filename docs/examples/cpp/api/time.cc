// gpucost/time.h by example: instants, units, periods and civil dates
// (run by ctest as cpp_example_time).
#include "example_check.h"
#include "gpucost/time.h"

int main() {
  // [ParseTimeUnit]
  // A column in another unit is read in place: TimeUnit is ticks per ns.
  CHECK(*gpucost::ParseTimeUnit("ms") == gpucost::TimeUnit::kMillisecond);
  CHECK(!gpucost::ParseTimeUnit("minutes").ok());
  // [ParseTimeUnit]

  // [InstantInRange]
  // Instants in [1970, 2200) and durations up to ten years, checked before
  // scaling so absurd values cannot overflow.
  CHECK(gpucost::InstantInRange(1'740'823'200, gpucost::TimeUnit::kSecond));  // 2025-03-01
  CHECK(!gpucost::InstantInRange(-1, gpucost::TimeUnit::kSecond));
  CHECK(!gpucost::InstantInRange(gpucost::kMissingInstant, gpucost::TimeUnit::kNanosecond));
  CHECK(gpucost::DurationInRange(3600, gpucost::TimeUnit::kSecond));
  CHECK(!gpucost::DurationInRange(gpucost::kMaxDuration + 1, gpucost::TimeUnit::kNanosecond));
  // [InstantInRange]

  // [DaysFromCivil]
  // Days since 1970-01-01, and back: 2025-03-01 is day 20148.
  const int64_t day = gpucost::DaysFromCivil(2025, 3, 1);
  CHECK(day == 20148);
  const gpucost::CivilDate date = gpucost::CivilFromDays(day + 30);
  CHECK(date.year == 2025 && date.month == 3 && date.day == 31);
  // [DaysFromCivil]

  // [FloorToPeriod]
  // The start of the hour, day or month (pandas' "h", "D", "MS") an instant is in.
  const int64_t t = day * gpucost::kNanosPerDay + 14 * gpucost::kNanosPerHour + 5 * gpucost::kNanosPerSecond;
  CHECK(*gpucost::ParsePeriodFreq("D") == gpucost::PeriodFreq::kDay);
  CHECK(gpucost::FloorToPeriod(t, gpucost::PeriodFreq::kHour) == day * gpucost::kNanosPerDay + 14 * gpucost::kNanosPerHour);
  CHECK(gpucost::FloorToPeriod(t, gpucost::PeriodFreq::kDay) == day * gpucost::kNanosPerDay);
  CHECK(gpucost::FloorToPeriod(t, *gpucost::ParsePeriodFreq("MS")) == day * gpucost::kNanosPerDay);  // March 1st
  // [FloorToPeriod]
  return 0;
}
