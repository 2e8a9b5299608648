// Commitment arithmetic: amortisation and the quantile rule
// (include/gpucost/analyses/commitment.h, docs/advisor.md).
#include "gpucost/analyses/commitment.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "gpucost/status.h"
#include "gpucost/time.h"

namespace gpucost {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kMaxTermYears = 10;

std::string Num(double v) { return absl::StrCat(v); }

absl::Status CheckRates(double commit_rate, double excess_rate) {
  if (!std::isfinite(commit_rate) || commit_rate <= 0) {
    return ParameterError("commit_rate", Num(commit_rate) + " is not a positive rate");
  }
  if (!std::isfinite(excess_rate) || excess_rate <= 0) {
    return ParameterError("excess_rate", Num(excess_rate) + " is not a positive rate");
  }
  return absl::OkStatus();
}

absl::Status CheckDemand(std::span<const double> demand, std::string_view table, int64_t row) {
  for (size_t h = 0; h < demand.size(); ++h) {
    const double d = demand[h];
    if (!std::isfinite(d) || d < 0) {
      return RowError(table, row, absl::StrCat("hour ", h), Num(d) + " is not a demand (finite, >= 0)");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckPurchaseTerms(const PurchaseTerms& p, std::string_view table, int64_t row) {
  if (!std::isfinite(p.upfront) || p.upfront < 0) {
    return RowError(table, row, "upfront", Num(p.upfront) + " is not an amount >= 0");
  }
  if (!std::isfinite(p.hourly) || p.hourly < 0) {
    return RowError(table, row, "hourly", Num(p.hourly) + " is not an amount >= 0");
  }
  if (p.term_years < 1 || p.term_years > kMaxTermYears) {
    return RowError(table, row, "term_years",
                    absl::StrCat(p.term_years, " is not a term in years (1..", kMaxTermYears, ")"));
  }
  return absl::OkStatus();
}

// The smallest minimiser of C(L) over `demand`, which the caller may
// reorder. Rates and demand are already checked.
double QuantileLevel(std::span<double> demand, double commit_rate, double excess_rate) {
  const auto hours = static_cast<int64_t>(demand.size());
  if (hours == 0 || commit_rate >= excess_rate) return 0.0;
  const double budget = static_cast<double>(hours) * commit_rate;
  // k*: the smallest k with (T - k) * excess_rate <= T * commit_rate. Start
  // from the closed form and settle the rounding with the exact comparison.
  const auto fits = [&](int64_t k) { return static_cast<double>(hours - k) * excess_rate <= budget; };
  auto k = static_cast<int64_t>(std::ceil(static_cast<double>(hours) * (1.0 - commit_rate / excess_rate)));
  k = std::clamp<int64_t>(k, 1, hours);
  while (k > 1 && fits(k - 1)) --k;
  while (k < hours && !fits(k)) ++k;
  auto nth = demand.begin() + (k - 1);
  std::nth_element(demand.begin(), nth, demand.end());
  return *nth;
}

double WholeLevel(std::span<const double> demand, double level, double commit_rate, double excess_rate) {
  const double lo = std::floor(level);
  const double hi = std::ceil(level);
  if (lo == hi) return lo;
  return CommitmentCost(demand, hi, commit_rate, excess_rate) <
                 CommitmentCost(demand, lo, commit_rate, excess_rate)
             ? hi
             : lo;
}

CommitmentOutcome Evaluate(std::span<const double> demand, double level, double commit_rate, double excess_rate,
                           int64_t block_hours) {
  CommitmentOutcome out;
  out.level = level;
  const auto hours = static_cast<int64_t>(demand.size());
  double used = 0, total = 0, excess = 0;
  double block_used = 0;
  int64_t block_start = 0;
  for (int64_t h = 0; h < hours; ++h) {
    const double d = demand[h];
    const double u = std::min(d, level);
    used += u;
    total += d;
    excess += d - u;
    block_used += u;
    const bool block_ends = (h + 1 - block_start == block_hours) || h + 1 == hours;
    if (block_ends) {
      const double capacity = level * static_cast<double>(h + 1 - block_start);
      if (capacity > 0) {
        const double unused = capacity - block_used;
        const double share = unused / capacity;
        if (share > out.worst_block_unused_share) {
          out.worst_block_unused_share = share;
          out.worst_block_unused_cost = unused * commit_rate;
          out.worst_block = block_start / block_hours;
        }
      }
      block_used = 0;
      block_start = h + 1;
    }
  }
  const double t = static_cast<double>(hours);
  out.commitment_hourly_cost = hours > 0 ? commit_rate * level : 0.0;
  out.excess_hourly_cost = hours > 0 ? excess_rate * excess / t : 0.0;
  out.hourly_cost = out.commitment_hourly_cost + out.excess_hourly_cost;
  out.utilization = level > 0 && hours > 0 ? used / (level * t) : kNaN;
  out.coverage = total > 0 ? used / total : kNaN;
  return out;
}

}  // namespace

absl::StatusOr<double> EffectiveHourlyRate(const PurchaseTerms& price) {
  GPUCOST_RETURN_IF_ERROR(CheckPurchaseTerms(price, "price", 0));
  return price.hourly + price.upfront / static_cast<double>(kHoursPerYear * price.term_years);
}

absl::StatusOr<std::vector<double>> EffectiveHourlyRates(std::span<const double> upfront,
                                                         std::span<const double> hourly,
                                                         std::span<const int32_t> term_years,
                                                         std::string_view table) {
  if (hourly.size() != upfront.size() || term_years.size() != upfront.size()) {
    return TableError(table, "columns 'upfront', 'hourly' and 'term_years' differ in length");
  }
  std::vector<double> out(upfront.size());
  for (size_t i = 0; i < upfront.size(); ++i) {
    const PurchaseTerms p{.term_years = term_years[i], .hourly = hourly[i], .upfront = upfront[i]};
    GPUCOST_RETURN_IF_ERROR(CheckPurchaseTerms(p, table, static_cast<int64_t>(i)));
    out[i] = p.hourly + p.upfront / static_cast<double>(kHoursPerYear * p.term_years);
  }
  return out;
}

absl::StatusOr<std::vector<AmortizedMonth>> AmortizeTerm(const PurchaseTerms& price, int64_t start_ns, double units) {
  GPUCOST_RETURN_IF_ERROR(CheckPurchaseTerms(price, "price", 0));
  if (!std::isfinite(units) || units <= 0) {
    return ParameterError("units", Num(units) + " is not a positive number of units");
  }
  const int64_t term_ns = price.term_years * kHoursPerYear * kNanosPerHour;
  if (start_ns == kMissingInstant || start_ns > std::numeric_limits<int64_t>::max() - term_ns) {
    return ParameterError("start", "not a valid instant");
  }
  const int64_t end_ns = start_ns + term_ns;
  const double upfront_cents = units * price.upfront * 100.0;
  const double hourly_cents = units * price.hourly * 100.0;
  std::vector<AmortizedMonth> months;
  int64_t upfront_done = 0, recurring_done = 0;
  for (int64_t month = FloorToPeriod(start_ns, PeriodFreq::kMonthStart); month < end_ns;) {
    const CivilDate date = CivilFromDays(month / kNanosPerDay);
    const unsigned next_month = date.month == 12 ? 1 : date.month + 1;
    const int64_t next_year = date.month == 12 ? date.year + 1 : date.year;
    const int64_t next = DaysFromCivil(next_year, next_month, 1) * kNanosPerDay;
    const int64_t piece_end = std::min(next, end_ns);
    const int64_t elapsed = piece_end - start_ns;
    // Cents rounded on the running total: months add up exactly.
    const int64_t upfront_cum = elapsed == term_ns
                                    ? std::llround(upfront_cents)
                                    : std::llround(upfront_cents * (static_cast<double>(elapsed) /
                                                                    static_cast<double>(term_ns)));
    const int64_t recurring_cum =
        std::llround(hourly_cents * (static_cast<double>(elapsed) / static_cast<double>(kNanosPerHour)));
    AmortizedMonth m;
    m.month_start_ns = month;
    m.hours = static_cast<double>(piece_end - std::max(month, start_ns)) / static_cast<double>(kNanosPerHour);
    m.upfront_cents = upfront_cum - upfront_done;
    m.recurring_cents = recurring_cum - recurring_done;
    m.total_cents = m.upfront_cents + m.recurring_cents;
    upfront_done = upfront_cum;
    recurring_done = recurring_cum;
    months.push_back(m);
    month = next;
  }
  return months;
}

double CommitmentCost(std::span<const double> demand, double level, double commit_rate, double excess_rate) {
  double excess = 0;
  for (const double d : demand) excess += std::max(d - level, 0.0);
  return commit_rate * level * static_cast<double>(demand.size()) + excess_rate * excess;
}

absl::StatusOr<double> OptimalCommitmentLevel(std::span<const double> demand, double commit_rate,
                                              double excess_rate, bool whole_units) {
  GPUCOST_RETURN_IF_ERROR(CheckRates(commit_rate, excess_rate));
  GPUCOST_RETURN_IF_ERROR(CheckDemand(demand, "demand", 0));
  std::vector<double> work(demand.begin(), demand.end());
  const double level = QuantileLevel(work, commit_rate, excess_rate);
  return whole_units ? WholeLevel(demand, level, commit_rate, excess_rate) : level;
}

absl::StatusOr<CommitmentOutcome> EvaluateCommitment(std::span<const double> demand, double level,
                                                     double commit_rate, double excess_rate,
                                                     int64_t block_hours) {
  GPUCOST_RETURN_IF_ERROR(CheckRates(commit_rate, excess_rate));
  GPUCOST_RETURN_IF_ERROR(CheckDemand(demand, "demand", 0));
  if (!std::isfinite(level) || level < 0) return ParameterError("level", Num(level) + " is not a level >= 0");
  if (block_hours < 1) return ParameterError("block_hours", absl::StrCat(block_hours, " is not >= 1"));
  return Evaluate(demand, level, commit_rate, excess_rate, block_hours);
}

absl::StatusOr<CommitmentOutcomes> SolveCommitments(const DemandCurves& curves,
                                                    const CommitmentProblems& problems,
                                                    int64_t block_hours) {
  if (block_hours < 1) return ParameterError("block_hours", absl::StrCat(block_hours, " is not >= 1"));
  if (curves.hours < 0 || (curves.hours == 0 && !curves.values.empty()) ||
      (curves.hours > 0 && curves.values.size() % static_cast<size_t>(curves.hours) != 0)) {
    return TableError("demand", absl::StrCat(curves.values.size(), " values are not whole curves of ",
                                             curves.hours, " hours"));
  }
  const int64_t n_curves =
      curves.hours > 0 ? static_cast<int64_t>(curves.values.size()) / curves.hours : 0;
  const auto hours = static_cast<size_t>(curves.hours);
  const auto curve_span = [&](int64_t c) { return curves.values.subspan(static_cast<size_t>(c) * hours, hours); };
  for (int64_t c = 0; c < n_curves; ++c) GPUCOST_RETURN_IF_ERROR(CheckDemand(curve_span(c), "demand", c));

  const size_t n = problems.size();
  for (const auto& [name, size] :
       {std::pair<std::string_view, size_t>{"commit_rate", problems.commit_rate.size()},
        {"excess_rate", problems.excess_rate.size()},
        {"whole_units", problems.whole_units.size()},
        {"scale", problems.scale.size()},
        {"level", problems.level.size()}}) {
    if (size != n) {
      return TableError("problems", absl::StrCat("column '", absl::string_view(name.data(), name.size()),
                                                 "' has ", size, " values for ", n, " rows"));
    }
  }
  CommitmentOutcomes out;
  for (auto* v : {&out.level, &out.hourly_cost, &out.commitment_hourly_cost, &out.excess_hourly_cost,
                  &out.utilization, &out.coverage, &out.worst_block_unused_share, &out.worst_block_unused_cost}) {
    v->resize(n);
  }
  out.worst_block.resize(n);
  std::vector<double> scaled(hours), work(hours);
  for (size_t i = 0; i < n; ++i) {
    const auto row = static_cast<int64_t>(i);
    const int32_t c = problems.curve[i];
    if (c < 0 || c >= n_curves) {
      return RowError("problems", row, "curve", absl::StrCat(c, " is not a curve (0..", n_curves - 1, ")"));
    }
    const double rc = problems.commit_rate[i], rx = problems.excess_rate[i], s = problems.scale[i];
    if (!std::isfinite(rc) || rc <= 0) return RowError("problems", row, "commit_rate", Num(rc) + " is not > 0");
    if (!std::isfinite(rx) || rx <= 0) return RowError("problems", row, "excess_rate", Num(rx) + " is not > 0");
    if (!std::isfinite(s) || s < 0) return RowError("problems", row, "scale", Num(s) + " is not >= 0");
    const std::span<const double> d = curve_span(c);
    for (size_t h = 0; h < hours; ++h) scaled[h] = d[h] * s;
    double level = problems.level[i];
    if (std::isnan(level)) {
      work = scaled;
      level = QuantileLevel(work, rc, rx);
      if (problems.whole_units[i] != 0) level = WholeLevel(scaled, level, rc, rx);
    } else if (!std::isfinite(level) || level < 0) {
      return RowError("problems", row, "level", Num(level) + " is not a level >= 0 (or NaN)");
    }
    const CommitmentOutcome o = Evaluate(scaled, level, rc, rx, block_hours);
    out.level[i] = o.level;
    out.hourly_cost[i] = o.hourly_cost;
    out.commitment_hourly_cost[i] = o.commitment_hourly_cost;
    out.excess_hourly_cost[i] = o.excess_hourly_cost;
    out.utilization[i] = o.utilization;
    out.coverage[i] = o.coverage;
    out.worst_block_unused_share[i] = o.worst_block_unused_share;
    out.worst_block_unused_cost[i] = o.worst_block_unused_cost;
    out.worst_block[i] = o.worst_block;
  }
  return out;
}

}  // namespace gpucost
