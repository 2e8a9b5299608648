// File: time.h
//
// Instants are int64 nanoseconds since the Unix epoch, UTC; durations are
// int64 nanoseconds. Columns from other sources may carry another unit; a
// TimeUnit says which, so the engine scales on the fly instead of copying.
#ifndef GPUCOST_TIME_H_
#define GPUCOST_TIME_H_

#include <cstdint>
#include <limits>
#include <string_view>

#include "absl/status/statusor.h"

namespace gpucost {

inline constexpr int64_t kNanosPerSecond = 1'000'000'000;
inline constexpr int64_t kNanosPerHour = 3600 * kNanosPerSecond;
inline constexpr int64_t kNanosPerDay = 24 * kNanosPerHour;

// pandas and Arrow write a missing instant (NaT, null) as INT64_MIN.
inline constexpr int64_t kMissingInstant = std::numeric_limits<int64_t>::min();

// The instants and durations the engine accepts (anything else is bad
// input): instants in [1970-01-01, 2200-01-01) UTC and durations up to ten
// years (3652 days). Inside these bounds no instant plus a duration, and no
// difference of instants, leaves int64 nanoseconds.
inline constexpr int64_t kMinInstant = 0;
inline constexpr int64_t kMaxInstant = 84'006 * kNanosPerDay;  // 2200-01-01, exclusive
inline constexpr int64_t kMaxDuration = 3'652 * kNanosPerDay;

// Ticks per nanosecond multiplier of a time column.
enum class TimeUnit : int64_t {
  kNanosecond = 1,
  kMicrosecond = 1'000,
  kMillisecond = 1'000'000,
  kSecond = 1'000'000'000,
};

// Whether `raw`, in ticks of `unit`, is an instant in [kMinInstant,
// kMaxInstant), resp. a duration in (0, kMaxDuration]. Checked before
// scaling, so absurd values cannot overflow.
[[nodiscard]] constexpr bool InstantInRange(int64_t raw, TimeUnit unit) {
  const auto ticks = static_cast<int64_t>(unit);
  return raw >= kMinInstant / ticks && raw < kMaxInstant / ticks;
}
[[nodiscard]] constexpr bool DurationInRange(int64_t raw, TimeUnit unit) {
  return raw > 0 && raw <= kMaxDuration / static_cast<int64_t>(unit);
}

// "ns", "us", "ms" or "s" (numpy's and Arrow's unit names).
[[nodiscard]] absl::StatusOr<TimeUnit> ParseTimeUnit(std::string_view unit);

// Periods results can be grouped by: UTC hour, UTC day, UTC month start
// (pandas' "h", "D" and "MS").
enum class PeriodFreq { kHour, kDay, kMonthStart };

[[nodiscard]] absl::StatusOr<PeriodFreq> ParsePeriodFreq(std::string_view freq);

// The start of the period that contains `instant_ns`, for instants in
// [kMinInstant, kMaxInstant) (the engine floors no others).
[[nodiscard]] int64_t FloorToPeriod(int64_t instant_ns, PeriodFreq freq);

// Days since 1970-01-01 of a proleptic Gregorian date, and back.
[[nodiscard]] int64_t DaysFromCivil(int64_t year, unsigned month,
                                    unsigned day);
struct CivilDate {
  int64_t year;
  unsigned month;  // 1..12
  unsigned day;    // 1..31
};
[[nodiscard]] CivilDate CivilFromDays(int64_t days);

}  // namespace gpucost

#endif  // GPUCOST_TIME_H_
