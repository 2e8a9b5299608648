// The commitment arithmetic: the quantile rule against brute force on random
// curves (exact agreement), the outcome figures, amortisation to the cent.
#include "gpucost/analyses/commitment.h"

#include <algorithm>
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

using ::gpucost::testing::IsOk;
using ::gpucost::testing::StatusIs;
using ::testing::HasSubstr;

// The value of an OK result (NaN, and a failure, otherwise).
double Value(const absl::StatusOr<double>& result) {
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : std::nan("");
}

// The smallest level among `candidates` with the least C(L).
double BruteForce(const std::vector<double>& demand, std::vector<double> candidates, double rc, double rx) {
  std::sort(candidates.begin(), candidates.end());
  double best = candidates.front();
  double best_cost = CommitmentCost(demand, best, rc, rx);
  for (const double c : candidates) {
    const double cost = CommitmentCost(demand, c, rc, rx);
    if (cost < best_cost) {
      best = c;
      best_cost = cost;
    }
  }
  return best;
}

TEST(QuantileRule, MatchesBruteForceOnRandomCurves) {
  std::mt19937_64 rng(20260301);
  std::uniform_int_distribution<int> hours(1, 400);
  std::uniform_real_distribution<double> ratio(0.05, 1.3), unit(0.0, 1.0);
  for (int trial = 0; trial < 600; ++trial) {
    const int t = hours(rng);
    std::vector<double> demand(static_cast<size_t>(t));
    // Three shapes: continuous, whole counts with many ties, bursty (mostly 0).
    const int shape = trial % 3;
    std::poisson_distribution<int> counts(4.0);
    for (double& d : demand) {
      if (shape == 0) d = 10.0 * unit(rng);
      if (shape == 1) d = counts(rng);
      if (shape == 2) d = unit(rng) < 0.8 ? 0.0 : 16.0 * unit(rng);
    }
    const double rx = 0.5 + 40.0 * unit(rng);
    const double rc = rx * ratio(rng);

    std::vector<double> candidates = demand;
    candidates.push_back(0.0);
    GPUCOST_ASSERT_OK_AND_ASSIGN(const double level, (OptimalCommitmentLevel(demand, rc, rx, false)));
    EXPECT_EQ(level, BruteForce(demand, candidates, rc, rx)) << "trial " << trial;

    std::vector<double> whole;
    const double top = std::ceil(*std::max_element(demand.begin(), demand.end()));
    for (double k = 0; k <= top; ++k) whole.push_back(k);
    GPUCOST_ASSERT_OK_AND_ASSIGN(const double whole_level, (OptimalCommitmentLevel(demand, rc, rx, true)));
    EXPECT_EQ(whole_level, BruteForce(demand, whole, rc, rx)) << "trial " << trial;
  }
}

TEST(QuantileRule, HeaderExample) {
  const std::vector<double> demand = {3, 3, 4, 8, 8, 3};
  // 1 - 0.62 / 1.006 = 0.3837...; ceil(6 * 0.3837) = 3rd smallest = 3.
  EXPECT_DOUBLE_EQ(Value(OptimalCommitmentLevel(demand, 0.62, 1.006, true)), 3.0);
  EXPECT_DOUBLE_EQ(Value(OptimalCommitmentLevel(demand, 0.62, 1.006, false)), 3.0);
  // A commitment that costs more than paying as you go is never worth it.
  EXPECT_DOUBLE_EQ(Value(OptimalCommitmentLevel(demand, 1.2, 1.006, false)), 0.0);
  // Nearly free: cover the peak.
  EXPECT_DOUBLE_EQ(Value(OptimalCommitmentLevel(demand, 0.001, 1.006, false)), 8.0);
}

TEST(QuantileRule, RejectsBadInput) {
  const std::vector<double> bad = {1, 2, -1};
  EXPECT_THAT(OptimalCommitmentLevel(bad, 0.5, 1.0, false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("demand: row 0, column 'hour 2': -1")));
  const std::vector<double> nan = {1, std::nan("")};
  EXPECT_THAT(OptimalCommitmentLevel(nan, 0.5, 1.0, false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("column 'hour 1'")));
  const std::vector<double> ok = {1, 2};
  EXPECT_THAT(OptimalCommitmentLevel(ok, 0.0, 1.0, false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("parameter 'commit_rate'")));
  EXPECT_THAT(OptimalCommitmentLevel(ok, 0.5, -1.0, false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("parameter 'excess_rate'")));
}

TEST(EvaluateCommitment, FiguresOfTwoWeeks) {
  // Week 0: 4 units every hour; week 1: 1 unit. Commit 3 at 0.5 (on demand 1).
  std::vector<double> demand(336, 4.0);
  std::fill(demand.begin() + 168, demand.end(), 1.0);
  GPUCOST_ASSERT_OK_AND_ASSIGN(const CommitmentOutcome o, (EvaluateCommitment(demand, 3.0, 0.5, 1.0)));
  EXPECT_DOUBLE_EQ(o.commitment_hourly_cost, 1.5);
  EXPECT_DOUBLE_EQ(o.excess_hourly_cost, 0.5);  // 1 unit above in half the hours
  EXPECT_DOUBLE_EQ(o.hourly_cost, 2.0);
  EXPECT_DOUBLE_EQ(o.utilization, (168 * 3.0 + 168 * 1.0) / (3.0 * 336));
  EXPECT_DOUBLE_EQ(o.coverage, (168 * 3.0 + 168 * 1.0) / (168 * 4.0 + 168 * 1.0));
  EXPECT_EQ(o.worst_block, 1);
  EXPECT_DOUBLE_EQ(o.worst_block_unused_share, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(o.worst_block_unused_cost, 168 * 2 * 0.5);

  GPUCOST_ASSERT_OK_AND_ASSIGN(const CommitmentOutcome none, (EvaluateCommitment(demand, 0.0, 0.5, 1.0)));
  EXPECT_TRUE(std::isnan(none.utilization));
  EXPECT_DOUBLE_EQ(none.hourly_cost, 2.5);
  EXPECT_DOUBLE_EQ(none.worst_block_unused_share, 0.0);
}

TEST(SolveCommitments, OptimisesEvaluatesAndScales) {
  // Two curves of 4 hours.
  const std::vector<double> values = {1, 2, 3, 4, /**/ 0, 0, 10, 10};
  const std::vector<int32_t> curve = {0, 0, 1, 1};
  const std::vector<double> rc = {0.5, 0.5, 0.5, 0.5}, rx = {1, 1, 1, 1};
  const std::vector<uint8_t> whole = {0, 0, 1, 0};
  const std::vector<double> scale = {1.0, 1.2, 1.0, 1.0};
  const std::vector<double> level = {NAN, 2.0, NAN, 5.0};
  const CommitmentProblems problems{curve, rc, rx, whole, scale, level};
  GPUCOST_ASSERT_OK_AND_ASSIGN(const CommitmentOutcomes out, (SolveCommitments({values, 4}, problems)));
  // ceil(4 * 0.5) = 2nd smallest.
  EXPECT_DOUBLE_EQ(out.level[0], 2.0);
  EXPECT_DOUBLE_EQ(out.hourly_cost[0], 0.5 * 2 + (0 + 0 + 1 + 2) / 4.0);
  // Level 2 under demand x1.2 = {1.2, 2.4, 3.6, 4.8}.
  EXPECT_DOUBLE_EQ(out.level[1], 2.0);
  EXPECT_NEAR(out.excess_hourly_cost[1], (0.4 + 1.6 + 2.8) / 4.0, 1e-12);
  EXPECT_DOUBLE_EQ(out.level[2], 0.0);  // 2nd smallest of {0,0,10,10}
  EXPECT_DOUBLE_EQ(out.utilization[3], 0.5);
}

TEST(SolveCommitments, ErrorsNameTheRow) {
  const std::vector<double> values = {1, 2, 3, 4};
  const std::vector<int32_t> curve = {0, 3};
  const std::vector<double> rc = {0.5, 0.5}, rx = {1, 1}, scale = {1, 1}, level = {NAN, NAN};
  const std::vector<uint8_t> whole = {0, 0};
  EXPECT_THAT(SolveCommitments({values, 4}, {curve, rc, rx, whole, scale, level}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("problems: row 1, column 'curve'")));
  const std::vector<double> bad_rc = {0.5, -2};
  const std::vector<int32_t> ok_curve = {0, 0};
  EXPECT_THAT(SolveCommitments({values, 4}, {ok_curve, bad_rc, rx, whole, scale, level}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("problems: row 1, column 'commit_rate'")));
  EXPECT_THAT(SolveCommitments({values, 3}, {ok_curve, rc, rx, whole, scale, level}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not whole curves")));
}

PurchaseTerms Terms(double upfront, double hourly, int term_years) {
  return {.term_years = term_years, .hourly = hourly, .upfront = upfront};
}

// FOCUS commitment scenarios: 8,760.00 all upfront for a year, or 4,380.00
// upfront plus 0.50 an hour, or 1.00 an hour, all cost 1.00 per hour.
TEST(Amortization, EffectiveHourlyRateOfFocusScenarios) {
  EXPECT_DOUBLE_EQ(Value(EffectiveHourlyRate(Terms(8760.0, 0.0, 1))), 1.0);
  EXPECT_DOUBLE_EQ(Value(EffectiveHourlyRate(Terms(4380.0, 0.5, 1))), 1.0);
  EXPECT_DOUBLE_EQ(Value(EffectiveHourlyRate(Terms(0.0, 1.0, 1))), 1.0);
  EXPECT_DOUBLE_EQ(Value(EffectiveHourlyRate(Terms(26280.0, 0.0, 3))), 1.0);
  EXPECT_THAT(EffectiveHourlyRate(Terms(-1.0, 0.0, 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("column 'upfront'")));
  EXPECT_THAT(EffectiveHourlyRate(Terms(0.0, 1.0, 0)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("column 'term_years'")));
  const std::vector<double> up = {8760, 1}, hourly = {0, NAN};
  const std::vector<int32_t> years = {1, 1};
  EXPECT_THAT(EffectiveHourlyRates(up, hourly, years),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rates: row 1, column 'hourly'")));
}

int64_t Instant(int64_t y, unsigned m, unsigned d, int hour = 0) {
  return DaysFromCivil(y, m, d) * kNanosPerDay + hour * kNanosPerHour;
}

TEST(Amortization, CalendarMonthsToTheCent) {
  // All upfront from 2023-01-01: 744 h in January, 672 in February.
  GPUCOST_ASSERT_OK_AND_ASSIGN(const auto all, (AmortizeTerm(Terms(8760.0, 0.0, 1), Instant(2023, 1, 1))));
  ASSERT_EQ(all.size(), 12u);
  EXPECT_EQ(all[0].total_cents, 74400);
  EXPECT_EQ(all[1].total_cents, 67200);
  EXPECT_DOUBLE_EQ(all[1].hours, 672.0);
  int64_t sum = 0;
  for (const auto& m : all) sum += m.total_cents;
  EXPECT_EQ(sum, 876000);

  // Partial upfront: the same 1.00 an hour, half from each part.
  GPUCOST_ASSERT_OK_AND_ASSIGN(const auto partial, (AmortizeTerm(Terms(4380.0, 0.5, 1), Instant(2023, 1, 1))));
  EXPECT_EQ(partial[0].upfront_cents, 37200);
  EXPECT_EQ(partial[0].recurring_cents, 37200);

  // Awkward prices, a term starting mid-month at noon, three units, 3 years:
  // 37 calendar months, each part within a cent of exact, adding up exactly.
  const PurchaseTerms price{.term_years = 3, .hourly = 0.3097, .upfront = 2713.17};
  const int64_t start = Instant(2026, 3, 15, 12);
  GPUCOST_ASSERT_OK_AND_ASSIGN(const auto months, (AmortizeTerm(price, start, 3.0)));
  ASSERT_EQ(months.size(), 37u);
  int64_t upfront = 0, recurring = 0;
  double hours = 0;
  const double term_hours = 3.0 * 8760;
  for (const auto& m : months) {
    upfront += m.upfront_cents;
    recurring += m.recurring_cents;
    hours += m.hours;
    const double exact_upfront = 3.0 * price.upfront * m.hours / term_hours * 100.0;
    const double exact_recurring = 3.0 * price.hourly * m.hours * 100.0;
    EXPECT_LE(std::fabs(static_cast<double>(m.upfront_cents) - exact_upfront), 1.0 + 1e-6);
    EXPECT_LE(std::fabs(static_cast<double>(m.recurring_cents) - exact_recurring), 1.0 + 1e-6);
    EXPECT_EQ(m.total_cents, m.upfront_cents + m.recurring_cents);
  }
  EXPECT_DOUBLE_EQ(hours, term_hours);
  EXPECT_EQ(upfront, std::llround(3.0 * 2713.17 * 100.0));
  EXPECT_EQ(recurring, std::llround(3.0 * 0.3097 * term_hours * 100.0));
  EXPECT_EQ(months.front().month_start_ns, Instant(2026, 3, 1));
  EXPECT_DOUBLE_EQ(months.front().hours, 16.5 * 24);  // 15 Mar 12:00 to 1 Apr
}

}  // namespace
}  // namespace gpucost
