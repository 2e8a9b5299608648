// GCP committed-use discounts amortized by the billing reader (src/io/amortize.cc).
// Every expected number is worked out by hand in the comments.
#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gpucost/io/billing.h"
#include "gpucost/io/gcp.h"
#include "gpucost/status.h"
#include "gpucost/time.h"
#include "gtest/gtest.h"
#include "testing/billing_lines.h"
#include "testing/status_matchers.h"

namespace gpucost::io {
namespace {

using ::gpucost::testing::At;
using ::gpucost::testing::Sum;
using ::gpucost::testing::BillingFixture;

// The line of `resource` ("" for resource-less) with SKU `sku` starting at
// 2025-03-01 23:00 + `hour` hours, and with commitment status `status`.
size_t Find(const CostLines& lines, const std::string& resource, const std::string& sku, int hour,
            const std::string& status = "<any>") {
  const int64_t start = (DaysFromCivil(2025, 3, 1) * 24 + 23 + hour) * kNanosPerHour;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string id = At(lines.resource_id, i);
    const bool resource_ok = resource.empty() ? id == "<null>" : id.find(resource) != std::string::npos;
    if (resource_ok && At(lines.sku, i) == sku && lines.start[i] == start &&
        (status == "<any>" || At(lines.commitment_status, i) == status)) {
      return i;
    }
  }
  ADD_FAILURE() << "no line " << resource << " " << sku << " hour " << hour << " " << status;
  return 0;
}

constexpr const char* kA100 = "039F-D0DA-4055";
constexpr const char* kCore = "SKU-A2-CORE";
constexpr const char* kFeeA100 = "SKU-CUD-A100";
constexpr const char* kFeeCpu = "SKU-CUD-A2-CPU";

// A 1-year CUD for 2 A100 GPUs ($1.80/GPU-hour: $3.60 an hour for 7,200
// GPU-seconds) and 24 A2 vCPUs ($0.018/vCPU-hour: $0.432 for 86,400
// vCPU-seconds), on demand $3.00/GPU-hour and $0.03/vCPU-hour.
//   23:00 (March 1): serve-1 and serve-2 (1 A100 + 12 vCPU each) run the hour,
//     fully covered: each GPU line 3.00 - 3.00 credit + 3.60 * 3/6 = 1.80,
//     each core line 0.36 - 0.36 + 0.432 * 0.36/0.72 = 0.216; nothing unused.
//   00:00 (March 2): only serve-1 runs: 3,600 of 7,200 GPU-seconds and
//     43,200 of 86,400 vCPU-seconds covered, u = 0.5: serve-1's GPU line
//     1.80, its core line 0.216; unused 3.60 - 1.80 = 1.80 (A100) and
//     0.432 - 0.216 = 0.216 (cores) on lines of their own.
//   The L4 in us-east4 has no commitment: 0.70 as billed.
TEST(GcpCommitments, ResourceBasedAcrossADayBoundary) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines lines, ReadGcpBillingCsv(BillingFixture("gcp_cud.csv")));
  ASSERT_EQ(lines.size(), 11u + 2u);  // the rows, and two unused-commitment lines
  // Money in = money out: the fees (3.60 + 0.432) * 2 and the L4's 0.70.
  EXPECT_NEAR(Sum(lines.cost), (3.60 + 0.432) * 2 + 0.70, 1e-12);
  EXPECT_NEAR(Sum(lines.billed_cost), Sum(lines.cost), 1e-12);

  for (const char* vm : {"instances/serve-1", "instances/serve-2"}) {
    EXPECT_NEAR(lines.cost[Find(lines, vm, kA100, 0)], 1.80, 1e-12) << vm;
    EXPECT_NEAR(lines.cost[Find(lines, vm, kCore, 0)], 0.216, 1e-12) << vm;
    EXPECT_EQ(At(lines.commitment_status, Find(lines, vm, kA100, 0)), "Used");
    EXPECT_NEAR(lines.billed_cost[Find(lines, vm, kA100, 0)], 0.0, 1e-12);  // the invoice: covered at 0
  }
  EXPECT_NEAR(lines.cost[Find(lines, "instances/serve-1", kA100, 1)], 1.80, 1e-12);
  EXPECT_NEAR(lines.cost[Find(lines, "instances/serve-1", kCore, 1)], 0.216, 1e-12);
  EXPECT_EQ(At(lines.commitment_id, Find(lines, "instances/serve-1", kA100, 1)), "gcp-cud:us-central1/gpu:a100");
  EXPECT_EQ(At(lines.commitment_id, Find(lines, "instances/serve-1", kCore, 1)), "gcp-cud:us-central1/cpu:a2");

  // The fees: billed as invoiced, nothing left to allocate on them.
  for (int hour : {0, 1}) {
    const size_t fee = Find(lines, "", kFeeA100, hour, "<null>");
    EXPECT_EQ(At(lines.charge_category, fee), "Purchase");
    EXPECT_DOUBLE_EQ(lines.billed_cost[fee], 3.60);
    EXPECT_NEAR(lines.cost[fee], 0.0, 1e-12);
    EXPECT_NEAR(lines.cost[Find(lines, "", kFeeCpu, hour, "<null>")], 0.0, 1e-12);
  }
  // The unused hours of March 2, 00:00: their own lines, the buyer's labels and project.
  const size_t unused_gpu = Find(lines, "", kFeeA100, 1, "Unused");
  const size_t unused_cpu = Find(lines, "", kFeeCpu, 1, "Unused");
  EXPECT_NEAR(lines.cost[unused_gpu], 1.80, 1e-12);
  EXPECT_NEAR(lines.cost[unused_cpu], 0.216, 1e-12);
  EXPECT_DOUBLE_EQ(lines.billed_cost[unused_gpu], 0.0);
  EXPECT_EQ(At(lines.charge_category, unused_gpu), "Usage");
  EXPECT_EQ(At(lines.tags, unused_gpu), R"({"cost-center":"ml-platform"})");
  EXPECT_EQ(At(lines.account, unused_cpu), "ml-prod");
  EXPECT_EQ(lines.end[unused_gpu] - lines.start[unused_gpu], kNanosPerHour);
  // The A100 commitment and its A2 core commitment are both GPU commitments.
  EXPECT_TRUE(lines.gpu[unused_gpu]);
  EXPECT_TRUE(lines.gpu[unused_cpu]);
  EXPECT_TRUE(lines.gpu[Find(lines, "", kFeeCpu, 0, "<null>")]);
  EXPECT_EQ(lines.gpu[Find(lines, "", kFeeCpu, 0, "<null>")], lines.gpu[Find(lines, "", kFeeA100, 0, "<null>")]);

  EXPECT_NEAR(lines.cost[Find(lines, "instances/l4-1", "SKU-L4", 1)], 0.70, 1e-12);
}

TEST(GcpCommitments, OnlyTheEffectiveAmountIsAmortized) {
  BillingOptions billed;
  billed.amount = CostAmount::kBilled;
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines lines, ReadGcpBillingCsv(BillingFixture("gcp_cud.csv"), billed));
  ASSERT_EQ(lines.size(), 11u);
  EXPECT_NEAR(lines.cost[Find(lines, "instances/serve-1", kA100, 0)], 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(lines.cost[Find(lines, "", kFeeA100, 0)], 3.60);
  EXPECT_NEAR(Sum(lines.cost), (3.60 + 0.432) * 2 + 0.70, 1e-12);
}

// A legacy spend-based (flexible) CUD, as in GCP's own example: $50/hour of
// on-demand spend committed (usage.amount_in_pricing_units 5,000, in cents)
// for a $37.50 fee. Covered this hour: web-1 $30 and batch-1 $10 of N2 cores
// (COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE credits -30 and -10), $40 of $50:
// u = 0.8, used = 37.50 * 0.8 = 30.00 spread 30:10 -> web-1 22.50,
// batch-1 7.50; unused 37.50 - 30.00 = 7.50.
TEST(GcpCommitments, SpendBased) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines lines, ReadGcpBillingCsv(BillingFixture("gcp_cud_spend.csv")));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_NEAR(Sum(lines.cost), 37.50, 1e-12);
  EXPECT_NEAR(lines.cost[Find(lines, "instances/web-1", "SKU-N2-CORE", 0)], 22.50, 1e-12);
  EXPECT_NEAR(lines.cost[Find(lines, "instances/batch-1", "SKU-N2-CORE", 0)], 7.50, 1e-12);
  const size_t unused = Find(lines, "", "SKU-FLEX-1Y", 0, "Unused");
  EXPECT_NEAR(lines.cost[unused], 7.50, 1e-12);
  EXPECT_EQ(At(lines.commitment_id, unused), "gcp-cud:spend-based");
  EXPECT_EQ(At(lines.tags, unused), R"({"cost-center":"platform"})");
  EXPECT_NEAR(lines.cost[Find(lines, "", "SKU-FLEX-1Y", 0, "<null>")], 0.0, 1e-12);
}

// Credits near the largest double: their sum is not finite, which is an
// error, never an infinite cost.
TEST(GcpCommitments, AmountsThatDoNotAddUpAreAnError) {
  std::string csv = BillingFixture("gcp_cud_spend.csv");
  for (auto [from, to] : {std::pair{",30.00,", ",1.7e308,"}, std::pair{",10.00,", ",1.7e308,"},
                          std::pair{"-30.0,", "-1.7e308,"}, std::pair{"-10.0,", "-1.7e308,"}}) {
    const size_t at = csv.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    csv.replace(at, std::string(from).size(), to);
  }
  BillingOptions options;
  options.source = "spend.csv";
  EXPECT_THAT(ReadGcpBillingCsv(csv, options),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                ::testing::HasSubstr("spend.csv: the committed-use discount amounts of pool "
                                                     "'spend-based' in one hour add up to a number that is not finite")));
}

}  // namespace
}  // namespace gpucost::io
