// File: analyses/budget.h
//
// Forecasts of daily spend and the band anomalies are judged against
// (docs/advisor.md, "Budgets and forecasts").
//
// The model is ordinary least squares on daily spend y:
//
//   y_t = a + b * t + w_{weekday(t)} + e_t,   sum of the seven w = 0,
//
// t the day number counted from the series' first day, e_t independent with
// variance s^2. With fewer days than ForecastOptions asks for, the weekday
// terms and then the trend are left out (the model actually fitted is
// reported). The prediction interval of a sum of future days accounts for
// both the noise of each day and the uncertainty of the fitted coefficients:
//
//   Var(sum of m future days) = s^2 * (m + g' (X'X)^-1 g),  g = sum of their rows x_j,
//
// with Student's t quantile on n - p degrees of freedom.
//
// Example:
//   gpucost::DailySeries series{offsets, days, spend};   // one or more series
//   absl::StatusOr<gpucost::DailyForecasts> f = gpucost::ForecastDaily(
//       series, horizon_first, horizon_last, gpucost::ForecastOptions{});
//   // f->total[0]: forecast spend of series 0 over its horizon days.
#ifndef GPUCOST_ANALYSES_BUDGET_H_
#define GPUCOST_ANALYSES_BUDGET_H_

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gpucost {

enum class ForecastModel : int32_t {
  kNone = 0,          // no observations: forecast 0, no interval
  kMean = 1,          // y = a
  kTrend = 2,         // y = a + b t
  kTrendWeekday = 3,  // y = a + b t + w_weekday
};

[[nodiscard]] std::string_view ForecastModelName(ForecastModel model);

struct ForecastOptions {
  // Two-sided coverage of the prediction intervals.
  double level = 0.90;
  // Observed days needed for the trend, and for the weekday terms.
  int64_t min_days_trend = 7;
  int64_t min_days_weekday = 21;
};

// Daily series in one table: series i is rows [offsets[i], offsets[i+1]),
// `day` = days since 1970-01-01 (UTC), strictly increasing within a series;
// a missing day is unobserved (not zero: pass zeros for days without spend).
struct DailySeries {
  std::span<const int64_t> offsets;
  std::span<const int64_t> day;
  std::span<const double> spend;

  [[nodiscard]] size_t size() const { return offsets.empty() ? 0 : offsets.size() - 1; }
};

// Monday = 0 ... Sunday = 6 of a day number.
[[nodiscard]] int WeekdayOfDay(int64_t day);

// One row per series, and the forecast days of every series one after the
// other (`horizon_offsets`, like DailySeries::offsets).
struct DailyForecasts {
  std::vector<int32_t> model;  // ForecastModel
  std::vector<int64_t> observations, dof;
  std::vector<double> sigma;      // residual standard deviation (NaN without dof)
  std::vector<double> intercept;  // a, at the series' first day
  std::vector<double> trend;      // b, per day (0 when not fitted)
  std::vector<std::array<double, 7>> weekday;  // w, Monday..Sunday (0 when not fitted)
  std::vector<double> total, total_lower, total_upper;  // over the horizon
  std::vector<int64_t> horizon_offsets;
  std::vector<int64_t> day;
  std::vector<double> point, lower, upper;
};

// Forecasts series i over days [horizon_first[i], horizon_last[i]] (empty
// when last < first). Intervals are NaN when the model has no degrees of
// freedom left. Errors name the table "series" (row, column).
[[nodiscard]] absl::StatusOr<DailyForecasts> ForecastDaily(
    const DailySeries& series, std::span<const int64_t> horizon_first,
    std::span<const int64_t> horizon_last, const ForecastOptions& options);

struct AnomalyOptions {
  // One-sided: a day is anomalous above the `level` quantile of its
  // one-step-ahead prediction.
  double level = 0.99;
  // Days of history needed before a day is judged, and the most recent
  // days a band is fitted on.
  int64_t min_history = 14;
  int64_t max_history = 91;
  // Materiality: a day is never anomalous when it exceeds its expected spend
  // by less than this fraction of it, however smooth the history.
  double min_relative_excess = 0.10;
  ForecastOptions forecast;  // model choice by history length
};

// Per observed day: the spend expected from the days before it (anomalous
// days left out of later fits, so one spike does not widen the band for the
// next), the upper edge of the band, whether the day had enough history to
// be judged, and whether it is above the band.
struct SpendBands {
  std::vector<double> expected, upper;
  std::vector<uint8_t> judged, anomaly;
};

[[nodiscard]] absl::StatusOr<SpendBands> DailyBands(const DailySeries& series,
                                                    const AnomalyOptions& options);

// Student's t distribution: P(T <= t) with `dof` degrees of freedom, and its
// inverse (p in (0, 1)). dof must be > 0.
[[nodiscard]] double StudentTCdf(double t, double dof);
[[nodiscard]] double StudentTQuantile(double p, double dof);

}  // namespace gpucost

#endif  // GPUCOST_ANALYSES_BUDGET_H_
