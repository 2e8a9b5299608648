// File: analyses/commitment.h
//
// Commitment arithmetic for purchasing advice (docs/advisor.md): what a
// reserved term costs per hour and per calendar month (amortisation), and
// the commitment level that minimises expected cost over an hourly demand
// curve (the quantile rule).
//
// The quantile rule. A commitment of L units (instances, GPUs, or dollars of
// savings-plan rate) costs `commit_rate` per unit-hour whether it is used or
// not; demand above L is paid at `excess_rate` (on-demand, or the effective
// spot rate for interruptible work). Over hourly demand d_1..d_T,
//
//   C(L) = sum_t [ commit_rate * L + excess_rate * max(d_t - L, 0) ],
//
// which is convex and piecewise linear in L. Between the sorted demands
// d_(k) and d_(k+1) its slope is T * commit_rate - (T - k) * excess_rate, so
// the smallest minimiser is d_(k*) with k* the smallest k such that
// (T - k) * excess_rate <= T * commit_rate: the (1 - commit_rate /
// excess_rate) quantile of hourly demand (L = 0 when commit_rate >=
// excess_rate). When commitments come in whole units the best whole level is
// the floor or the ceiling of that quantile (convexity).
//
// Example:
//   std::vector<double> demand = {3, 3, 4, 8, 8, 3};    // instances per hour
//   absl::StatusOr<double> level = gpucost::OptimalCommitmentLevel(
//       demand, /*commit_rate=*/0.62, /*excess_rate=*/1.006, /*whole_units=*/true);
//   // *level == 3: the 0.384 quantile of the demand.
#ifndef GPUCOST_ANALYSES_COMMITMENT_H_
#define GPUCOST_ANALYSES_COMMITMENT_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gpucost/model.h"

namespace gpucost {

// A 1-year term is 365 days (31,536,000 s), a 3-year term 1,095 days, as AWS
// defines them; a month is a twelfth of a year for monthly figures.
inline constexpr int64_t kHoursPerYear = 8760;
inline constexpr double kHoursPerMonth = 730.0;

// The price of one unit of a purchase option is its PurchaseTerms (model.h):
// `upfront` paid once for the whole term, `hourly` paid every hour of it (no
// upfront: upfront 0; all upfront: hourly 0), over `term_years`.

// hourly + upfront / (8760 * term_years): what one unit costs per hour once
// the upfront payment is spread over every hour of the term.
[[nodiscard]] absl::StatusOr<double> EffectiveHourlyRate(const PurchaseTerms& price);

// The same for a table of options; errors name `table`, the row and the
// column ('upfront', 'hourly' or 'term_years').
[[nodiscard]] absl::StatusOr<std::vector<double>> EffectiveHourlyRates(
    std::span<const double> upfront, std::span<const double> hourly,
    std::span<const int32_t> term_years, std::string_view table = "rates");

// One calendar month (UTC) of an amortised term.
struct AmortizedMonth {
  int64_t month_start_ns = 0;  // first instant of the calendar month
  double hours = 0;            // hours of the term inside the month
  int64_t upfront_cents = 0;   // the upfront payment's share
  int64_t recurring_cents = 0;
  int64_t total_cents = 0;     // upfront_cents + recurring_cents
};

// For commitment terms only (8,760-hour years); owned hardware's
// depreciation is OwnedCostLines (owned.h), over calendar years by the hour.
// Spreads `units` units of `price`, bought at `start_ns`, over the calendar
// months of the term (the first and last months partial unless the term
// starts at a month start). Each part (upfront share, recurring fees) is in
// whole cents rounded on its running total, so in every month each part is
// within a cent of its exact amount, and over the term the parts add up
// exactly to round(units * upfront) and round(units * hourly * term hours)
// cents.
[[nodiscard]] absl::StatusOr<std::vector<AmortizedMonth>> AmortizeTerm(
    const PurchaseTerms& price, int64_t start_ns, double units = 1.0);

// The smallest commitment level minimising C(L) above. `demand` must be
// finite and >= 0; both rates > 0.
[[nodiscard]] absl::StatusOr<double> OptimalCommitmentLevel(
    std::span<const double> demand, double commit_rate, double excess_rate,
    bool whole_units);

// C(L) summed over the curve.
[[nodiscard]] double CommitmentCost(std::span<const double> demand,
                                    double level, double commit_rate,
                                    double excess_rate);

// What a commitment level does to a demand curve.
struct CommitmentOutcome {
  double level = 0;
  double hourly_cost = 0;             // (commitment + excess) / hours
  double commitment_hourly_cost = 0;  // commit_rate * level
  double excess_hourly_cost = 0;      // excess_rate * mean(max(d - L, 0))
  double utilization = 0;   // sum min(d, L) / (L * hours); NaN when L == 0
  double coverage = 0;      // sum min(d, L) / sum d; NaN when demand is all 0
  // Risk: the block (a week by default) in which the largest share of the
  // commitment went unused, that share, and its unused dollars.
  int64_t worst_block = 0;
  double worst_block_unused_share = 0;
  double worst_block_unused_cost = 0;
};

[[nodiscard]] absl::StatusOr<CommitmentOutcome> EvaluateCommitment(
    std::span<const double> demand, double level, double commit_rate,
    double excess_rate, int64_t block_hours = 168);

// Many problems over many curves in one call (what the Python advisor uses).
// `values` holds the curves row-major, `hours` values per curve.
struct DemandCurves {
  std::span<const double> values;
  int64_t hours = 0;
};

// One row per problem: which curve, the two rates, whether the level must be
// whole, a demand multiplier (sensitivity: 0.8, 1.2; 1 = as observed) and a
// level to evaluate (NaN: find the optimal one).
struct CommitmentProblems {
  std::span<const int32_t> curve;
  std::span<const double> commit_rate;
  std::span<const double> excess_rate;
  std::span<const uint8_t> whole_units;
  std::span<const double> scale;
  std::span<const double> level;

  [[nodiscard]] size_t size() const { return curve.size(); }
};

// Column-wise CommitmentOutcome, one row per problem.
struct CommitmentOutcomes {
  std::vector<double> level, hourly_cost, commitment_hourly_cost,
      excess_hourly_cost, utilization, coverage, worst_block_unused_share,
      worst_block_unused_cost;
  std::vector<int64_t> worst_block;
};

// Errors name the table "demand" (row = curve, column 'hour <h>') or
// "problems" (row, column).
[[nodiscard]] absl::StatusOr<CommitmentOutcomes> SolveCommitments(
    const DemandCurves& curves, const CommitmentProblems& problems,
    int64_t block_hours = 168);

}  // namespace gpucost

#endif  // GPUCOST_ANALYSES_COMMITMENT_H_
