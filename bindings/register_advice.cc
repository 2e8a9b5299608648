// gpucost._core purchasing-advice numerics: amortisation, the commitment
// optimiser (quantile rule), daily spend forecasts and anomaly bands. Arrays
// in are viewed (forcecast), arrays out own the C++ vectors; the GIL is
// released around every call into the library.
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "gpucost/analyses/budget.h"
#include "gpucost/analyses/commitment.h"
#include "numpy_views.h"
#include "status_to_python.h"

namespace gpucost::python {
namespace {

py::dict ForecastsToPython(DailyForecasts&& f) {
  std::vector<double> weekday;
  weekday.reserve(f.weekday.size() * 7);
  for (const auto& w : f.weekday) weekday.insert(weekday.end(), w.begin(), w.end());
  py::dict out;
  out["model"] = MoveToNumpy(std::move(f.model));
  out["observations"] = MoveToNumpy(std::move(f.observations));
  out["dof"] = MoveToNumpy(std::move(f.dof));
  out["sigma"] = MoveToNumpy(std::move(f.sigma));
  out["intercept"] = MoveToNumpy(std::move(f.intercept));
  out["trend"] = MoveToNumpy(std::move(f.trend));
  out["weekday"] = MoveToNumpy(std::move(weekday));
  out["total"] = MoveToNumpy(std::move(f.total));
  out["total_lower"] = MoveToNumpy(std::move(f.total_lower));
  out["total_upper"] = MoveToNumpy(std::move(f.total_upper));
  out["horizon_offsets"] = MoveToNumpy(std::move(f.horizon_offsets));
  out["day"] = MoveToNumpy(std::move(f.day));
  out["point"] = MoveToNumpy(std::move(f.point));
  out["lower"] = MoveToNumpy(std::move(f.lower));
  out["upper"] = MoveToNumpy(std::move(f.upper));
  return out;
}

ForecastOptions MakeForecastOptions(double level, int64_t min_days_trend, int64_t min_days_weekday) {
  ForecastOptions options;
  options.level = level;
  options.min_days_trend = min_days_trend;
  options.min_days_weekday = min_days_weekday;
  return options;
}

}  // namespace

void RegisterAdvice(py::module_& m) {
  m.def(
      "effective_hourly_rates",
      [](const CArray<double>& upfront, const CArray<double>& hourly, const CArray<int32_t>& term_years) {
        absl::StatusOr<std::vector<double>> result;
        {
          py::gil_scoped_release release;
          result = EffectiveHourlyRates(Span(upfront), Span(hourly), Span(term_years));
        }
        return MoveToNumpy(ValueOrThrow(std::move(result)));
      },
      py::arg("upfront"), py::arg("hourly"), py::arg("term_years"),
      R"pbdoc(hourly + upfront / (8760 * term_years) per row of a rates table.)pbdoc");

  m.def(
      "amortize_term",
      [](double upfront, double hourly, int term_years, int64_t start_ns, double units) {
        absl::StatusOr<std::vector<AmortizedMonth>> result;
        {
          py::gil_scoped_release release;
          result = AmortizeTerm(PurchaseTerms{.term_years = term_years, .hourly = hourly, .upfront = upfront}, start_ns, units);
        }
        const std::vector<AmortizedMonth> months = ValueOrThrow(std::move(result));
        std::vector<int64_t> start(months.size()), up(months.size()), rec(months.size()), total(months.size());
        std::vector<double> hours(months.size());
        for (size_t i = 0; i < months.size(); ++i) {
          start[i] = months[i].month_start_ns;
          hours[i] = months[i].hours;
          up[i] = months[i].upfront_cents;
          rec[i] = months[i].recurring_cents;
          total[i] = months[i].total_cents;
        }
        py::dict out;
        out["month"] = MoveToNumpy(std::move(start));
        out["hours"] = MoveToNumpy(std::move(hours));
        out["upfront_cents"] = MoveToNumpy(std::move(up));
        out["recurring_cents"] = MoveToNumpy(std::move(rec));
        out["total_cents"] = MoveToNumpy(std::move(total));
        return out;
      },
      py::arg("upfront"), py::arg("hourly"), py::arg("term_years"), py::arg("start_ns"), py::arg("units"),
      R"pbdoc(Calendar-month amortisation of a term, in cents that add up exactly.)pbdoc");

  m.def(
      "solve_commitments",
      [](const CArray<double>& values, int64_t hours, const CArray<int32_t>& curve, const CArray<double>& commit_rate,
         const CArray<double>& excess_rate, const CArray<uint8_t>& whole_units, const CArray<double>& scale,
         const CArray<double>& level, int64_t block_hours) {
        const CommitmentProblems problems{Span(curve), Span(commit_rate), Span(excess_rate),
                                          Span(whole_units), Span(scale), Span(level)};
        absl::StatusOr<CommitmentOutcomes> result;
        {
          py::gil_scoped_release release;
          result = SolveCommitments(DemandCurves{Span(values), hours}, problems, block_hours);
        }
        CommitmentOutcomes o = ValueOrThrow(std::move(result));
        py::dict out;
        out["level"] = MoveToNumpy(std::move(o.level));
        out["hourly_cost"] = MoveToNumpy(std::move(o.hourly_cost));
        out["commitment_hourly_cost"] = MoveToNumpy(std::move(o.commitment_hourly_cost));
        out["excess_hourly_cost"] = MoveToNumpy(std::move(o.excess_hourly_cost));
        out["utilization"] = MoveToNumpy(std::move(o.utilization));
        out["coverage"] = MoveToNumpy(std::move(o.coverage));
        out["worst_block"] = MoveToNumpy(std::move(o.worst_block));
        out["worst_block_unused_share"] = MoveToNumpy(std::move(o.worst_block_unused_share));
        out["worst_block_unused_cost"] = MoveToNumpy(std::move(o.worst_block_unused_cost));
        return out;
      },
      py::arg("values"), py::arg("hours"), py::arg("curve"), py::arg("commit_rate"), py::arg("excess_rate"),
      py::arg("whole_units"), py::arg("scale"), py::arg("level"), py::arg("block_hours"),
      R"pbdoc(The quantile rule over hourly demand curves (row-major values, `hours` per curve).)pbdoc");

  m.def(
      "forecast_daily",
      [](const CArray<int64_t>& offsets, const CArray<int64_t>& day, const CArray<double>& spend,
         const CArray<int64_t>& horizon_first, const CArray<int64_t>& horizon_last, double level,
         int64_t min_days_trend, int64_t min_days_weekday) {
        const ForecastOptions options = MakeForecastOptions(level, min_days_trend, min_days_weekday);
        absl::StatusOr<DailyForecasts> result;
        {
          py::gil_scoped_release release;
          result = ForecastDaily(DailySeries{Span(offsets), Span(day), Span(spend)}, Span(horizon_first),
                                 Span(horizon_last), options);
        }
        return ForecastsToPython(ValueOrThrow(std::move(result)));
      },
      py::arg("offsets"), py::arg("day"), py::arg("spend"), py::arg("horizon_first"), py::arg("horizon_last"),
      py::arg("level"), py::arg("min_days_trend"), py::arg("min_days_weekday"),
      R"pbdoc(Least-squares forecasts (trend, weekday) of daily spend series with prediction intervals.)pbdoc");

  m.def(
      "daily_bands",
      [](const CArray<int64_t>& offsets, const CArray<int64_t>& day, const CArray<double>& spend, double level,
         int64_t min_history, int64_t max_history, double min_relative_excess, int64_t min_days_trend,
         int64_t min_days_weekday) {
        AnomalyOptions options;
        options.level = level;
        options.min_history = min_history;
        options.max_history = max_history;
        options.min_relative_excess = min_relative_excess;
        options.forecast = MakeForecastOptions(0.9, min_days_trend, min_days_weekday);
        absl::StatusOr<SpendBands> result;
        {
          py::gil_scoped_release release;
          result = DailyBands(DailySeries{Span(offsets), Span(day), Span(spend)}, options);
        }
        SpendBands b = ValueOrThrow(std::move(result));
        py::dict out;
        out["expected"] = MoveToNumpy(std::move(b.expected));
        out["upper"] = MoveToNumpy(std::move(b.upper));
        out["judged"] = MoveToNumpy(std::move(b.judged));
        out["anomaly"] = MoveToNumpy(std::move(b.anomaly));
        return out;
      },
      py::arg("offsets"), py::arg("day"), py::arg("spend"), py::arg("level"), py::arg("min_history"),
      py::arg("max_history"), py::arg("min_relative_excess"), py::arg("min_days_trend"),
      py::arg("min_days_weekday"),
      R"pbdoc(One-step-ahead spend bands per day; days above them are anomalies.)pbdoc");

  m.def("student_t_quantile", &StudentTQuantile, py::arg("p"), py::arg("dof"),
        R"pbdoc(Student's t quantile (NaN outside (0, 1) or for dof <= 0).)pbdoc");
}

}  // namespace gpucost::python
