// gpucost/analyses/commitment.h by example: amortisation and the quantile
// rule for commitment levels (run by ctest as cpp_example_commitment).
#include <cmath>
#include <vector>

#include "example_check.h"
#include "gpucost/analyses/commitment.h"
#include "gpucost/time.h"

int main() {
  // [EffectiveHourlyRate]
  // A 1-year all-upfront reservation of $8,760: $1 an hour.
  const gpucost::PurchaseTerms ri{.purchase = gpucost::Purchase::kReserved, .term_years = 1,
                                  .payment = gpucost::Payment::kAllUpfront, .hourly = 0, .upfront = 8760};
  CHECK_NEAR(*gpucost::EffectiveHourlyRate(ri), 1.0);
  const std::vector<double> upfront = {8760, 0}, hourly = {0, 0.62};
  const std::vector<int32_t> years = {1, 3};
  absl::StatusOr<std::vector<double>> rates = gpucost::EffectiveHourlyRates(upfront, hourly, years, "offers");
  CHECK_OK(rates);
  CHECK_NEAR((*rates)[1], 0.62);
  const std::vector<int32_t> bad_years = {1, 0};
  CHECK(!gpucost::EffectiveHourlyRates(upfront, hourly, bad_years, "offers").ok());  // names offers, row 1
  // [EffectiveHourlyRate]

  // [AmortizeTerm]
  // The term spread over calendar months in whole cents; the parts add up
  // exactly over the term. Bought 2025-03-01: 12 months, 306 days after March.
  const int64_t march = gpucost::DaysFromCivil(2025, 3, 1) * gpucost::kNanosPerDay;
  absl::StatusOr<std::vector<gpucost::AmortizedMonth>> months = gpucost::AmortizeTerm(ri, march, /*units=*/2);
  CHECK_OK(months);
  CHECK(months->size() == 12 && months->front().month_start_ns == march);
  int64_t cents = 0;
  for (const gpucost::AmortizedMonth& m : *months) cents += m.total_cents;
  CHECK(cents == 2 * 876'000);
  CHECK_NEAR(months->front().hours, 31.0 * 24);
  CHECK(months->front().upfront_cents == 2 * 31 * 24 * 100 && months->front().recurring_cents == 0);
  // [AmortizeTerm]

  // [OptimalCommitmentLevel]
  // Hourly demand of 3 to 8 instances; a commitment at $0.62 against
  // $1.006 on demand is worth it up to the 0.384 quantile: 3 instances.
  const std::vector<double> demand = {3, 3, 4, 8, 8, 3};
  absl::StatusOr<double> level = gpucost::OptimalCommitmentLevel(demand, 0.62, 1.006, /*whole_units=*/true);
  CHECK_OK(level);
  CHECK(*level == 3);
  CHECK(gpucost::CommitmentCost(demand, 3, 0.62, 1.006) <= gpucost::CommitmentCost(demand, 4, 0.62, 1.006));
  CHECK_NEAR(gpucost::CommitmentCost(demand, 3, 0.62, 1.006), 6 * 3 * 0.62 + (1 + 5 + 5) * 1.006);
  // [OptimalCommitmentLevel]

  // [EvaluateCommitment]
  // What that level does: utilisation, coverage and the worst block's unused part.
  absl::StatusOr<gpucost::CommitmentOutcome> outcome = gpucost::EvaluateCommitment(demand, 3, 0.62, 1.006, 3);
  CHECK_OK(outcome);
  CHECK(outcome->utilization == 1.0);
  CHECK_NEAR(outcome->coverage, 18.0 / 29);
  CHECK_NEAR(outcome->commitment_hourly_cost, 3 * 0.62);
  CHECK(outcome->worst_block_unused_share == 0);
  // [EvaluateCommitment]

  // [SolveCommitments]
  // Many problems over many curves in one call: the optimum, the optimum at
  // 120 % demand, and a given level (4) evaluated.
  const gpucost::DemandCurves curves{.values = demand, .hours = 6};
  const std::vector<int32_t> curve = {0, 0, 0};
  const std::vector<double> commit = {0.62, 0.62, 0.62}, excess = {1.006, 1.006, 1.006};
  const std::vector<uint8_t> whole = {1, 1, 1};
  const std::vector<double> scale = {1.0, 1.2, 1.0}, given = {NAN, NAN, 4};
  const gpucost::CommitmentProblems problems{.curve = curve, .commit_rate = commit, .excess_rate = excess,
                                             .whole_units = whole, .scale = scale, .level = given};
  absl::StatusOr<gpucost::CommitmentOutcomes> solved = gpucost::SolveCommitments(curves, problems, 3);
  CHECK_OK(solved);
  CHECK(problems.size() == 3 && solved->level[0] == 3 && solved->level[2] == 4);
  CHECK(solved->level[1] >= 3);
  CHECK(solved->worst_block.size() == 3);
  // [SolveCommitments]
  return 0;
}
