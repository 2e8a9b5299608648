#include "gpucost/time.h"

#include "gtest/gtest.h"

namespace gpucost {
namespace {

TEST(Time, CivilRoundTripOverFourCenturies) {
  for (int64_t days = -146097; days <= 146097; days += 13) {
    const CivilDate date = CivilFromDays(days);
    EXPECT_EQ(DaysFromCivil(date.year, date.month, date.day), days);
  }
  EXPECT_EQ(DaysFromCivil(1970, 1, 1), 0);
  EXPECT_EQ(DaysFromCivil(2024, 2, 29), 19782);
}

TEST(Time, FloorToPeriod) {
  const int64_t t = DaysFromCivil(2026, 3, 15) * kNanosPerDay + 5 * kNanosPerHour + 17;
  EXPECT_EQ(FloorToPeriod(t, PeriodFreq::kHour), DaysFromCivil(2026, 3, 15) * kNanosPerDay + 5 * kNanosPerHour);
  EXPECT_EQ(FloorToPeriod(t, PeriodFreq::kDay), DaysFromCivil(2026, 3, 15) * kNanosPerDay);
  EXPECT_EQ(FloorToPeriod(t, PeriodFreq::kMonthStart), DaysFromCivil(2026, 3, 1) * kNanosPerDay);
  // Before the epoch, floors go down, not toward zero.
  EXPECT_EQ(FloorToPeriod(-1, PeriodFreq::kDay), -kNanosPerDay);
  EXPECT_EQ(FloorToPeriod(-1, PeriodFreq::kMonthStart), DaysFromCivil(1969, 12, 1) * kNanosPerDay);
}

}  // namespace
}  // namespace gpucost
