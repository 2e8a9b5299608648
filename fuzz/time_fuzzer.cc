// libFuzzer target: the time and option parsers and the period arithmetic.
//
// Parse* must accept exactly their documented names and reject anything else
// with an error, never crash; FloorToPeriod must return the start of a period
// containing any instant the engine can see, and the civil-date conversions
// must round-trip.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzzer/FuzzedDataProvider.h"
#include "gpucost/allocate.h"
#include "gpucost/time.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "time_fuzzer: invariant violated: %s\n", what);
    std::abort();
  }
}

bool OneOf(const std::string& s, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (s == n) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const std::string text = in.ConsumeRandomLengthString(16);
  Check(gpucost::ParseTimeUnit(text).ok() == OneOf(text, {"ns", "us", "ms", "s"}), "ParseTimeUnit");
  Check(gpucost::ParsePeriodFreq(text).ok() == OneOf(text, {"h", "D", "MS"}), "ParsePeriodFreq");
  Check(gpucost::ParseBasis(text).ok() == OneOf(text, {"allocated", "used", "blended"}), "ParseBasis");
  Check(gpucost::ParseIdleMode(text).ok() == OneOf(text, {"keep", "share"}), "ParseIdleMode");

  // Instants the engine floors: its accepted range, 1970-01-01..2200-01-01.
  const int64_t instant = in.ConsumeIntegralInRange<int64_t>(gpucost::kMinInstant, gpucost::kMaxInstant - 1);
  Check(gpucost::InstantInRange(instant, gpucost::TimeUnit::kNanosecond), "InstantInRange");
  const int64_t seconds = in.ConsumeIntegral<int64_t>();
  Check(gpucost::InstantInRange(seconds, gpucost::TimeUnit::kSecond) ==
            (seconds >= 0 && seconds < gpucost::kMaxInstant / gpucost::kNanosPerSecond),
        "InstantInRange in seconds");
  for (gpucost::PeriodFreq freq : {gpucost::PeriodFreq::kHour, gpucost::PeriodFreq::kDay}) {
    const int64_t floor = gpucost::FloorToPeriod(instant, freq);
    const int64_t length = freq == gpucost::PeriodFreq::kHour ? gpucost::kNanosPerHour : gpucost::kNanosPerDay;
    Check(floor <= instant, "floor <= instant");
    Check(static_cast<uint64_t>(instant) - static_cast<uint64_t>(floor) < static_cast<uint64_t>(length),
          "instant - floor < period");
  }
  const int64_t month = gpucost::FloorToPeriod(instant, gpucost::PeriodFreq::kMonthStart);
  Check(month <= instant, "month start <= instant");
  Check(gpucost::CivilFromDays(month / gpucost::kNanosPerDay).day == 1, "month start is a 1st");
  const int64_t days = instant / gpucost::kNanosPerDay;
  const gpucost::CivilDate date = gpucost::CivilFromDays(days);
  Check(date.month >= 1 && date.month <= 12 && date.day >= 1 && date.day <= 31, "civil date in range");
  Check(gpucost::DaysFromCivil(date.year, date.month, date.day) == days, "civil date round trip");
  return 0;
}
