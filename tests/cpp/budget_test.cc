// Daily spend forecasts: known trend and weekday pattern recovered exactly
// (no noise) and within their standard errors (noise), interval coverage,
// model fall-backs, Student's t, anomaly bands.
#include "gpucost/analyses/budget.h"

#include <cmath>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "gpucost/status.h"
#include "gpucost/time.h"
#include "testing/status_matchers.h"

namespace gpucost {
namespace {

using ::gpucost::testing::StatusIs;
using ::testing::HasSubstr;

// 2026-03-02 is a Monday.
const int64_t kMonday = DaysFromCivil(2026, 3, 2);
constexpr double kWeekday[7] = {10, 5, 0, -2, 8, -9, -12};  // sums to 0

struct Series {
  std::vector<int64_t> offsets = {0};
  std::vector<int64_t> day;
  std::vector<double> spend;

  void Add(const std::vector<double>& values, int64_t first_day) {
    for (size_t i = 0; i < values.size(); ++i) {
      day.push_back(first_day + static_cast<int64_t>(i));
      spend.push_back(values[i]);
    }
    offsets.push_back(static_cast<int64_t>(day.size()));
  }
  DailySeries view() const { return {offsets, day, spend}; }
};

std::vector<double> Synthetic(int days, double a, double b, double noise_sd, std::mt19937_64* rng) {
  std::normal_distribution<double> noise(0.0, noise_sd);
  std::vector<double> y(static_cast<size_t>(days));
  for (int t = 0; t < days; ++t) {
    y[static_cast<size_t>(t)] = a + b * t + kWeekday[WeekdayOfDay(kMonday + t)] + (noise_sd > 0 ? noise(*rng) : 0.0);
  }
  return y;
}

TEST(Weekday, OfKnownDays) {
  EXPECT_EQ(WeekdayOfDay(0), 3);  // 1970-01-01, a Thursday
  EXPECT_EQ(WeekdayOfDay(kMonday), 0);
  EXPECT_EQ(WeekdayOfDay(kMonday - 1), 6);
  EXPECT_EQ(WeekdayOfDay(-1), 2);
}

TEST(StudentT, KnownQuantiles) {
  EXPECT_NEAR(StudentTQuantile(0.975, 1), 12.706204736174698, 1e-9);
  EXPECT_NEAR(StudentTQuantile(0.975, 10), 2.2281388519649385, 1e-10);
  EXPECT_NEAR(StudentTQuantile(0.95, 5), 2.0150483733330233, 1e-10);
  EXPECT_NEAR(StudentTQuantile(0.99, 20), 2.5279770027415722, 1e-10);
  EXPECT_NEAR(StudentTQuantile(0.975, 1e7), 1.959963984540054, 1e-5);
  EXPECT_NEAR(StudentTQuantile(0.025, 10), -2.2281388519649385, 1e-10);
  EXPECT_DOUBLE_EQ(StudentTCdf(0.0, 3), 0.5);
  EXPECT_NEAR(StudentTCdf(2.2281388519649385, 10), 0.975, 1e-12);
  EXPECT_TRUE(std::isnan(StudentTQuantile(1.0, 3)));
}

TEST(ForecastDaily, RecoversExactTrendAndWeekdays) {
  Series s;
  s.Add(Synthetic(56, 200, 3, 0, nullptr), kMonday);
  const int64_t first = kMonday + 56, last = kMonday + 65;
  const std::vector<int64_t> f = {first}, l = {last};
  GPUCOST_ASSERT_OK_AND_ASSIGN(const DailyForecasts out, (ForecastDaily(s.view(), f, l, ForecastOptions{})));
  EXPECT_EQ(out.model[0], static_cast<int32_t>(ForecastModel::kTrendWeekday));
  EXPECT_EQ(out.dof[0], 56 - 8);
  EXPECT_NEAR(out.intercept[0], 200, 1e-9);
  EXPECT_NEAR(out.trend[0], 3, 1e-11);
  for (int k = 0; k < 7; ++k) EXPECT_NEAR(out.weekday[0][static_cast<size_t>(k)], kWeekday[k], 1e-9) << k;
  EXPECT_NEAR(out.sigma[0], 0, 1e-9);
  double expected_total = 0;
  for (int64_t d = first; d <= last; ++d) {
    const double y = 200 + 3.0 * static_cast<double>(d - kMonday) + kWeekday[WeekdayOfDay(d)];
    EXPECT_NEAR(out.point[static_cast<size_t>(d - first)], y, 1e-8);
    expected_total += y;
  }
  EXPECT_NEAR(out.total[0], expected_total, 1e-7);
  EXPECT_NEAR(out.total_upper[0] - out.total_lower[0], 0, 1e-6);
}

TEST(ForecastDaily, RecoversNoisyTrendWithinStandardErrors) {
  std::mt19937_64 rng(7);
  Series s;
  s.Add(Synthetic(182, 500, -1.25, 5.0, &rng), kMonday);
  const std::vector<int64_t> f = {kMonday + 182}, l = {kMonday + 212};
  GPUCOST_ASSERT_OK_AND_ASSIGN(const DailyForecasts out, (ForecastDaily(s.view(), f, l, ForecastOptions{})));
  // Standard error of the trend: 5 / sqrt(sum (t - mean t)^2) ~ 0.007.
  EXPECT_NEAR(out.trend[0], -1.25, 0.035);
  for (int k = 0; k < 7; ++k) EXPECT_NEAR(out.weekday[0][static_cast<size_t>(k)], kWeekday[k], 3.0) << k;
  EXPECT_NEAR(out.sigma[0], 5.0, 0.75);
  EXPECT_LT(out.total_lower[0], out.total[0]);
  EXPECT_GT(out.total_upper[0], out.total[0]);
}

TEST(ForecastDaily, IntervalCoversAtItsLevel) {
  std::mt19937_64 rng(11);
  int covered_total = 0, covered_day = 0;
  constexpr int kTrials = 400;
  for (int trial = 0; trial < kTrials; ++trial) {
    const std::vector<double> all = Synthetic(70, 100, 0.5, 4.0, &rng);
    Series s;
    s.Add(std::vector<double>(all.begin(), all.begin() + 60), kMonday);
    const std::vector<int64_t> f = {kMonday + 60}, l = {kMonday + 69};
    GPUCOST_ASSERT_OK_AND_ASSIGN(const DailyForecasts out, (ForecastDaily(s.view(), f, l, ForecastOptions{})));
    double actual = 0;
    for (int i = 60; i < 70; ++i) actual += all[static_cast<size_t>(i)];
    covered_total += actual >= out.total_lower[0] && actual <= out.total_upper[0];
    covered_day += all[60] >= out.lower[0] && all[60] <= out.upper[0];
  }
  // 90% nominal; binomial sd over 400 trials is 1.5 points.
  EXPECT_NEAR(covered_total / static_cast<double>(kTrials), 0.90, 0.05);
  EXPECT_NEAR(covered_day / static_cast<double>(kTrials), 0.90, 0.05);
}

TEST(ForecastDaily, FallsBackWithShortHistory) {
  Series s;
  s.Add({}, kMonday);
  s.Add({42}, kMonday);
  s.Add({10, 12, 14, 16, 18, 20, 22, 24, 26, 28}, kMonday);
  s.Add(std::vector<double>(30, 7.0), kMonday);
  const std::vector<int64_t> f(4, kMonday + 30), l(4, kMonday + 31);
  GPUCOST_ASSERT_OK_AND_ASSIGN(const DailyForecasts out, (ForecastDaily(s.view(), f, l, ForecastOptions{})));
  EXPECT_EQ(out.model, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(out.total[0], 0.0);
  EXPECT_TRUE(std::isnan(out.total_upper[0]));
  EXPECT_DOUBLE_EQ(out.total[1], 84.0);
  EXPECT_TRUE(std::isnan(out.total_upper[1]));  // no degrees of freedom
  EXPECT_NEAR(out.total[2], (10 + 2 * 30) + (10 + 2 * 31), 1e-9);
  EXPECT_NEAR(out.total[3], 14.0, 1e-9);
  EXPECT_EQ(out.horizon_offsets, (std::vector<int64_t>{0, 2, 4, 6, 8}));
  EXPECT_EQ(ForecastModelName(ForecastModel::kTrendWeekday), "trend+weekday");
}

TEST(ForecastDaily, ErrorsNameRowAndColumn) {
  const std::vector<int64_t> offsets = {0, 3}, day = {5, 6, 6};
  const std::vector<double> spend = {1, 2, 3};
  const std::vector<int64_t> f = {7}, l = {8};
  EXPECT_THAT(ForecastDaily({offsets, day, spend}, f, l, ForecastOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("series: row 2, column 'day'")));
  const std::vector<int64_t> ok_day = {5, 6, 7};
  const std::vector<double> bad = {1, INFINITY, 3};
  EXPECT_THAT(ForecastDaily({offsets, ok_day, bad}, f, l, ForecastOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("series: row 1, column 'spend'")));
  ForecastOptions wrong;
  wrong.level = 1.5;
  EXPECT_THAT(ForecastDaily({offsets, ok_day, spend}, f, l, wrong),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("parameter 'level'")));
}

TEST(DailyBands, FlagsSpikesWithoutWideningTheBand) {
  std::mt19937_64 rng(3);
  std::vector<double> y = Synthetic(60, 1000, 0, 10.0, &rng);
  y[40] += 400;  // a spike
  y[41] += 400;  // and the day after: still judged against the normal days
  Series s;
  s.Add(y, kMonday);
  GPUCOST_ASSERT_OK_AND_ASSIGN(const SpendBands bands, (DailyBands(s.view(), AnomalyOptions{})));
  for (int i = 0; i < 14; ++i) EXPECT_EQ(bands.judged[static_cast<size_t>(i)], 0) << i;
  for (int i = 14; i < 60; ++i) {
    EXPECT_EQ(bands.judged[static_cast<size_t>(i)], 1) << i;
    EXPECT_EQ(bands.anomaly[static_cast<size_t>(i)], i == 40 || i == 41 ? 1 : 0) << i;
  }
  EXPECT_NEAR(bands.expected[41], 1000 + kWeekday[WeekdayOfDay(kMonday + 41)], 15.0);
}

TEST(DailyBands, MaterialityFloorOnSmoothSeries) {
  Series s;
  std::vector<double> y(30, 100.0);
  y[20] = 103.0;  // above a zero-width band, but only 3%
  y[25] = 150.0;
  s.Add(y, kMonday);
  GPUCOST_ASSERT_OK_AND_ASSIGN(const SpendBands bands, (DailyBands(s.view(), AnomalyOptions{})));
  EXPECT_EQ(bands.anomaly[20], 0);
  EXPECT_EQ(bands.anomaly[25], 1);
}

}  // namespace
}  // namespace gpucost
