// Daily spend forecasts and anomaly bands (include/gpucost/analyses/budget.h):
// least squares with trend and weekday terms, solved with Eigen.
#include "gpucost/analyses/budget.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "gpucost/status.h"

namespace gpucost {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string Num(double v) { return absl::StrCat(v); }

int ParameterCount(ForecastModel model) {
  switch (model) {
    case ForecastModel::kNone:
      return 0;
    case ForecastModel::kMean:
      return 1;
    case ForecastModel::kTrend:
      return 2;
    case ForecastModel::kTrendWeekday:
      return 8;
  }
  return 0;
}

ForecastModel Simpler(ForecastModel model) {
  switch (model) {
    case ForecastModel::kTrendWeekday:
      return ForecastModel::kTrend;
    case ForecastModel::kTrend:
      return ForecastModel::kMean;
    default:
      return ForecastModel::kNone;
  }
}

// The design row of `day`: 1, t, then the weekday terms in deviation coding
// (Monday..Saturday indicators minus the Sunday indicator), so the seven
// effects sum to zero and `a` is the level of an average weekday.
void DesignRow(ForecastModel model, int64_t day, int64_t origin, double* row) {
  const int p = ParameterCount(model);
  if (p >= 1) row[0] = 1.0;
  if (p >= 2) row[1] = static_cast<double>(day - origin);
  if (p == 8) {
    const int wd = WeekdayOfDay(day);
    for (int k = 0; k < 6; ++k) row[2 + k] = wd == 6 ? -1.0 : (wd == k ? 1.0 : 0.0);
  }
}

// A fitted model: coefficients, (X'X)^-1, residual scale.
struct Fit {
  ForecastModel model = ForecastModel::kNone;
  int64_t origin = 0;
  int64_t n = 0;
  int64_t dof = 0;
  double sigma = kNaN;
  Eigen::VectorXd beta;
  Eigen::MatrixXd cov;  // (X'X)^-1

  [[nodiscard]] Eigen::VectorXd Row(int64_t day) const {
    Eigen::VectorXd x(ParameterCount(model));
    DesignRow(model, day, origin, x.data());
    return x;
  }
};

ForecastModel ModelFor(int64_t n, const ForecastOptions& options) {
  if (n == 0) return ForecastModel::kNone;
  if (n >= options.min_days_weekday) return ForecastModel::kTrendWeekday;
  if (n >= options.min_days_trend) return ForecastModel::kTrend;
  return ForecastModel::kMean;
}

// Least squares over the days `idx` of (day, y); the richest model the data
// supports, falling back to a simpler one when the design is rank-deficient
// (e.g. history with gaps that miss a weekday).
Fit FitDays(std::span<const int64_t> day, std::span<const double> y, std::span<const int64_t> idx,
            const ForecastOptions& options) {
  Fit fit;
  fit.n = static_cast<int64_t>(idx.size());
  fit.origin = idx.empty() ? 0 : day[static_cast<size_t>(idx.front())];
  for (ForecastModel model = ModelFor(fit.n, options); model != ForecastModel::kNone; model = Simpler(model)) {
    const int p = ParameterCount(model);
    Eigen::MatrixXd x(fit.n, p);
    Eigen::VectorXd v(fit.n);
    for (int64_t r = 0; r < fit.n; ++r) {
      const auto i = static_cast<size_t>(idx[static_cast<size_t>(r)]);
      Eigen::VectorXd row(p);
      DesignRow(model, day[i], fit.origin, row.data());
      x.row(r) = row.transpose();
      v(r) = y[i];
    }
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(x);
    if (qr.rank() < p) continue;
    fit.model = model;
    fit.beta = qr.solve(v);
    fit.cov = (x.transpose() * x).inverse();
    fit.dof = fit.n - p;
    if (fit.dof > 0) fit.sigma = std::sqrt((v - x * fit.beta).squaredNorm() / static_cast<double>(fit.dof));
    return fit;
  }
  fit.model = ForecastModel::kNone;
  return fit;
}

absl::Status CheckSeries(const DailySeries& s) {
  if (s.offsets.empty()) return TableError("series", "'offsets' must hold at least one value (0)");
  if (s.spend.size() != s.day.size()) {
    return TableError("series", absl::StrCat("column 'spend' has ", s.spend.size(), " values for ",
                                             s.day.size(), " rows"));
  }
  if (s.offsets.front() != 0 || s.offsets.back() != static_cast<int64_t>(s.day.size())) {
    return TableError("series", "'offsets' must start at 0 and end at the number of rows");
  }
  for (size_t i = 0; i + 1 < s.offsets.size(); ++i) {
    if (s.offsets[i + 1] < s.offsets[i]) return TableError("series", "'offsets' must not decrease");
    for (int64_t r = s.offsets[i]; r < s.offsets[i + 1]; ++r) {
      const auto u = static_cast<size_t>(r);
      if (!std::isfinite(s.spend[u])) return RowError("series", r, "spend", Num(s.spend[u]) + " is not finite");
      if (r > s.offsets[i] && s.day[u] <= s.day[u - 1]) {
        return RowError("series", r, "day", absl::StrCat(s.day[u], " is not after the day before it (",
                                                         s.day[u - 1], ") in its series"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckOptions(const ForecastOptions& o) {
  if (!(o.level > 0 && o.level < 1)) return ParameterError("level", Num(o.level) + " is not in (0, 1)");
  if (o.min_days_trend < 2) return ParameterError("min_days_trend", "must be >= 2");
  if (o.min_days_weekday < 8) return ParameterError("min_days_weekday", "must be >= 8");
  return absl::OkStatus();
}

// Regularised incomplete beta I_x(a, b) by its continued fraction (modified
// Lentz), on the side of x where it converges fast.
double BetaContinuedFraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEps = 1e-15;
  double c = 1.0;
  double d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double f = d;
  for (int m = 1; m <= 1000; ++m) {
    const double dm = m;
    // Even step.
    double num = dm * (b - dm) * x / ((a + 2 * dm - 1) * (a + 2 * dm));
    d = 1.0 + num * d;
    c = 1.0 + num / c;
    if (std::fabs(d) < kTiny) d = kTiny;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    f *= d * c;
    // Odd step.
    num = -(a + dm) * (a + b + dm) * x / ((a + 2 * dm) * (a + 2 * dm + 1));
    d = 1.0 + num * d;
    c = 1.0 + num / c;
    if (std::fabs(d) < kTiny) d = kTiny;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    f *= delta;
    if (std::fabs(delta - 1.0) < kEps) break;
  }
  return f;
}

double IncompleteBeta(double a, double b, double x) {
  if (x <= 0) return 0.0;
  if (x >= 1) return 1.0;
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  const double front = std::exp(log_front);
  if (x < (a + 1.0) / (a + b + 2.0)) return front * BetaContinuedFraction(a, b, x) / a;
  return 1.0 - front * BetaContinuedFraction(b, a, 1.0 - x) / b;
}

}  // namespace

std::string_view ForecastModelName(ForecastModel model) {
  switch (model) {
    case ForecastModel::kNone:
      return "none";
    case ForecastModel::kMean:
      return "mean";
    case ForecastModel::kTrend:
      return "trend";
    case ForecastModel::kTrendWeekday:
      return "trend+weekday";
  }
  return "none";
}

int WeekdayOfDay(int64_t day) {
  // 1970-01-01 was a Thursday (3 with Monday = 0).
  return static_cast<int>(((day + 3) % 7 + 7) % 7);
}

double StudentTCdf(double t, double dof) {
  if (std::isnan(t) || !(dof > 0)) return kNaN;
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  const double tail = 0.5 * IncompleteBeta(0.5 * dof, 0.5, dof / (dof + t * t));
  return t > 0 ? 1.0 - tail : tail;
}

double StudentTQuantile(double p, double dof) {
  if (!(p > 0 && p < 1) || !(dof > 0)) return kNaN;
  if (p == 0.5) return 0.0;
  const double target = p > 0.5 ? p : 1.0 - p;
  double lo = 0.0, hi = 1.0;
  while (StudentTCdf(hi, dof) < target && hi < 1e300) hi *= 2.0;
  for (int i = 0; i < 2000 && hi - lo > 1e-14 * std::max(1.0, hi); ++i) {
    const double mid = 0.5 * (lo + hi);
    (StudentTCdf(mid, dof) < target ? lo : hi) = mid;
  }
  const double q = 0.5 * (lo + hi);
  return p > 0.5 ? q : -q;
}

absl::StatusOr<DailyForecasts> ForecastDaily(const DailySeries& series, std::span<const int64_t> horizon_first,
                                             std::span<const int64_t> horizon_last,
                                             const ForecastOptions& options) {
  GPUCOST_RETURN_IF_ERROR(CheckOptions(options));
  GPUCOST_RETURN_IF_ERROR(CheckSeries(series));
  const size_t n_series = series.size();
  if (horizon_first.size() != n_series || horizon_last.size() != n_series) {
    return ParameterError("horizon", absl::StrCat("needs one first and last day per series (", n_series, ")"));
  }
  DailyForecasts out;
  out.horizon_offsets.push_back(0);
  std::vector<int64_t> idx;
  for (size_t s = 0; s < n_series; ++s) {
    const int64_t begin = series.offsets[s], end = series.offsets[s + 1];
    const int64_t first = horizon_first[s], last = horizon_last[s];
    if (last >= first && last - first > int64_t{36600}) {  // 100 years of 366 days
      return ParameterError("horizon", absl::StrCat("series ", s, ": more than a century of days"));
    }
    idx.resize(static_cast<size_t>(end - begin));
    for (int64_t r = begin; r < end; ++r) idx[static_cast<size_t>(r - begin)] = r;
    const Fit fit = FitDays(series.day, series.spend, idx, options);
    out.model.push_back(static_cast<int32_t>(fit.model));
    out.observations.push_back(fit.n);
    out.dof.push_back(fit.dof);
    out.sigma.push_back(fit.sigma);
    const int p = ParameterCount(fit.model);
    out.intercept.push_back(p >= 1 ? fit.beta(0) : 0.0);
    out.trend.push_back(p >= 2 ? fit.beta(1) : 0.0);
    std::array<double, 7> w{};
    if (p == 8) {
      double sum = 0;
      for (int k = 0; k < 6; ++k) sum += (w[static_cast<size_t>(k)] = fit.beta(2 + k));
      w[6] = -sum;
    }
    out.weekday.push_back(w);

    const double t_q = fit.dof > 0 ? StudentTQuantile(0.5 + 0.5 * options.level, static_cast<double>(fit.dof))
                                   : kNaN;
    double total = 0;
    Eigen::VectorXd g = Eigen::VectorXd::Zero(p);
    int64_t m = 0;
    for (int64_t d = first; d <= last; ++d, ++m) {
      out.day.push_back(d);
      if (p == 0) {
        out.point.push_back(0.0);
        out.lower.push_back(kNaN);
        out.upper.push_back(kNaN);
        continue;
      }
      const Eigen::VectorXd x = fit.Row(d);
      const double point = x.dot(fit.beta);
      const double half = t_q * fit.sigma * std::sqrt(1.0 + x.dot(fit.cov * x));
      out.point.push_back(point);
      out.lower.push_back(point - half);
      out.upper.push_back(point + half);
      total += point;
      g += x;
    }
    out.horizon_offsets.push_back(static_cast<int64_t>(out.day.size()));
    out.total.push_back(total);
    if (m == 0) {
      out.total_lower.push_back(0.0);
      out.total_upper.push_back(0.0);
    } else if (p == 0) {
      out.total_lower.push_back(kNaN);
      out.total_upper.push_back(kNaN);
    } else {
      const double half =
          t_q * fit.sigma * std::sqrt(static_cast<double>(m) + g.dot(fit.cov * g));
      out.total_lower.push_back(total - half);
      out.total_upper.push_back(total + half);
    }
  }
  return out;
}

absl::StatusOr<SpendBands> DailyBands(const DailySeries& series, const AnomalyOptions& options) {
  GPUCOST_RETURN_IF_ERROR(CheckOptions(options.forecast));
  GPUCOST_RETURN_IF_ERROR(CheckSeries(series));
  if (!(options.level > 0 && options.level < 1)) {
    return ParameterError("level", Num(options.level) + " is not in (0, 1)");
  }
  if (options.min_history < 2) return ParameterError("min_history", "must be >= 2");
  if (options.max_history < options.min_history) {
    return ParameterError("max_history", "must be >= min_history");
  }
  if (!(options.min_relative_excess >= 0) || !std::isfinite(options.min_relative_excess)) {
    return ParameterError("min_relative_excess", Num(options.min_relative_excess) + " is not >= 0");
  }
  const size_t rows = series.day.size();
  SpendBands out;
  out.expected.assign(rows, kNaN);
  out.upper.assign(rows, kNaN);
  out.judged.assign(rows, 0);
  out.anomaly.assign(rows, 0);
  std::vector<int64_t> history;  // rows of normal days, oldest first
  for (size_t s = 0; s < series.size(); ++s) {
    history.clear();
    for (int64_t r = series.offsets[s]; r < series.offsets[s + 1]; ++r) {
      const auto u = static_cast<size_t>(r);
      const auto n = static_cast<int64_t>(history.size());
      const std::span<const int64_t> recent =
          std::span<const int64_t>(history).subspan(static_cast<size_t>(std::max<int64_t>(0, n - options.max_history)));
      if (!recent.empty()) {
        const Fit fit = FitDays(series.day, series.spend, recent, options.forecast);
        if (fit.model != ForecastModel::kNone) {
          const Eigen::VectorXd x = fit.Row(series.day[u]);
          const double expected = x.dot(fit.beta);
          out.expected[u] = expected;
          if (static_cast<int64_t>(recent.size()) >= options.min_history && fit.dof > 0) {
            const double upper = expected + StudentTQuantile(options.level, static_cast<double>(fit.dof)) *
                                                fit.sigma * std::sqrt(1.0 + x.dot(fit.cov * x));
            out.upper[u] = upper;
            out.judged[u] = 1;
            const double y = series.spend[u];
            out.anomaly[u] = y > upper && y - expected > options.min_relative_excess * std::fabs(expected);
          }
        }
      }
      if (out.anomaly[u] == 0) history.push_back(r);
    }
  }
  return out;
}

}  // namespace gpucost
