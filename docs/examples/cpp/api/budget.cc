// gpucost/analyses/budget.h by example: daily spend forecasts and anomaly
// bands (run by ctest as cpp_example_budget).
#include <cmath>
#include <cstdio>
#include <vector>

#include "example_check.h"
#include "gpucost/analyses/budget.h"
#include "gpucost/time.h"

int main() {
  // [WeekdayOfDay]
  // Monday = 0: 1970-01-01 was a Thursday, 2025-03-03 a Monday.
  CHECK(gpucost::WeekdayOfDay(0) == 3);
  CHECK(gpucost::WeekdayOfDay(gpucost::DaysFromCivil(2025, 3, 3)) == 0);
  // [WeekdayOfDay]

  // [ForecastDaily]
  // Series 0: 10 days of spend growing by $10 a day around $100; series 1:
  // 3 days, too few for a trend (the mean). Forecast the next 7 days of each.
  const int64_t first = gpucost::DaysFromCivil(2025, 3, 1);
  std::vector<int64_t> day;
  std::vector<double> spend;
  for (int i = 0; i < 10; ++i) day.push_back(first + i), spend.push_back(100 + 10 * i + (i % 2 == 0 ? 1 : -1));
  for (int i = 0; i < 3; ++i) day.push_back(first + i), spend.push_back(50);
  const std::vector<int64_t> offsets = {0, 10, 13};
  const gpucost::DailySeries series{.offsets = offsets, .day = day, .spend = spend};
  CHECK(series.size() == 2);
  const std::vector<int64_t> horizon_first = {first + 10, first + 3}, horizon_last = {first + 16, first + 9};
  gpucost::ForecastOptions options;
  options.level = 0.90;
  absl::StatusOr<gpucost::DailyForecasts> forecast =
      gpucost::ForecastDaily(series, horizon_first, horizon_last, options);
  CHECK_OK(forecast);
  CHECK(forecast->model[0] == static_cast<int32_t>(gpucost::ForecastModel::kTrend));
  CHECK(forecast->model[1] == static_cast<int32_t>(gpucost::ForecastModel::kMean));
  CHECK(gpucost::ForecastModelName(gpucost::ForecastModel::kTrendWeekday) == "trend+weekday");
  CHECK(std::abs(forecast->trend[0] - 10) < 0.5);
  CHECK(forecast->total_lower[0] < forecast->total[0] && forecast->total[0] < forecast->total_upper[0]);
  CHECK(forecast->horizon_offsets[1] == 7 && forecast->day.size() == 14);
  CHECK_NEAR(forecast->total[1], 7 * 50.0);
  std::printf("next week: $%.0f (90%%: $%.0f to $%.0f)\n", forecast->total[0], forecast->total_lower[0],
              forecast->total_upper[0]);
  // [ForecastDaily]

  // [DailyBands]
  // 30 steady days then a spike: the spike is above its band.
  std::vector<int64_t> days;
  std::vector<double> daily;
  for (int i = 0; i < 31; ++i) days.push_back(first + i), daily.push_back(i == 30 ? 300 : 100 + (i % 3));
  const std::vector<int64_t> one = {0, 31};
  gpucost::AnomalyOptions anomaly;
  anomaly.min_history = 14;
  absl::StatusOr<gpucost::SpendBands> bands =
      gpucost::DailyBands(gpucost::DailySeries{.offsets = one, .day = days, .spend = daily}, anomaly);
  CHECK_OK(bands);
  CHECK(bands->judged[0] == 0 && bands->judged[30] == 1 && bands->anomaly[30] == 1 && bands->anomaly[20] == 0);
  CHECK(bands->upper[30] < 300 && bands->expected[30] > 95);
  // [DailyBands]

  // [StudentTQuantile]
  CHECK_NEAR(gpucost::StudentTCdf(0, 5), 0.5);
  CHECK(std::abs(gpucost::StudentTQuantile(0.975, 10) - 2.228) < 1e-3);
  CHECK(std::abs(gpucost::StudentTCdf(gpucost::StudentTQuantile(0.9, 3), 3) - 0.9) < 1e-9);
  // [StudentTQuantile]
  return 0;
}
