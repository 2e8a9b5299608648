#include "gpucost/model.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gpucost/allocate.h"
#include "gpucost/catalog.h"
#include "gpucost/columns.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"
#include "testing/tables.h"

namespace gpucost {
namespace {

using ::gpucost::testing::IsOk;
using ::gpucost::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Every spelling reads back as its value, and the table lists them in order.
template <typename E, typename Parse>
void ExpectRoundTrip(std::string_view name, int count, Parse parse) {
  std::vector<std::string_view> spelled;
  for (int i = 0; i < count; ++i) {
    const E value = static_cast<E>(i);
    spelled.push_back(ToString(value));
    absl::StatusOr<E> back = parse(ToString(value));
    ASSERT_THAT(back.status(), IsOk()) << ToString(value);
    EXPECT_EQ(*back, value);
  }
  bool listed = false;
  for (const EnumSpellings& e : ModelEnumSpellings()) {
    if (e.name == name) {
      EXPECT_EQ(e.values, spelled);
      listed = true;
    }
  }
  EXPECT_TRUE(listed) << name;
}

TEST(Model, EverySpellingReadsBack) {
  ExpectRoundTrip<Provider>("Provider", 5, ParseProvider);
  ExpectRoundTrip<MigBasis>("MigBasis", 2, ParseMigBasis);
  ExpectRoundTrip<Purchase>("Purchase", 11, ParsePurchase);
  ExpectRoundTrip<Payment>("Payment", 3, ParsePayment);
  ExpectRoundTrip<ChargeCategory>("ChargeCategory", 5, ParseChargeCategory);
  ExpectRoundTrip<Basis>("Basis", 3, ParseBasis);
  ExpectRoundTrip<IdleMode>("IdleMode", 2, ParseIdleMode);
  ExpectRoundTrip<CostDriver>("CostDriver", 2, ParseCostDriver);
  EXPECT_EQ(ModelEnumSpellings().size(), 9u);
  EXPECT_EQ(ModelEnumSpellings().back().values,
            (std::vector<std::string_view>{kIdle, kUnattributed, kUnobserved, kUnlabelled, kDown}));
}

TEST(Model, PurchaseAliasesAndErrors) {
  EXPECT_EQ(*ParsePurchase("On-Demand"), Purchase::kOnDemand);
  EXPECT_EQ(*ParsePurchase("Reserved Instance"), Purchase::kReserved);
  EXPECT_EQ(*ParsePurchase("Savings Plan"), Purchase::kSavingsPlan);
  EXPECT_EQ(*ParsePurchase("committed_use_discount"), Purchase::kCommittedUse);
  EXPECT_EQ(*ParsePurchase("Capacity Block"), Purchase::kCapacityBlock);
  EXPECT_THAT(ParsePurchase("prepaid"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown purchase 'prepaid' (expected \"on_demand\", \"spot\"")));
  EXPECT_THAT(ParseBasis("usage"), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("expected \"allocated\", \"used\" or \"blended\"")));
  EXPECT_THAT(ParseBasis("Used"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'Used'")));  // policy words are exact
}

TEST(Model, CommitmentsAreTheDiscountPurchases) {
  std::vector<std::string_view> commitments;
  for (int i = 0; i < 11; ++i) {
    if (IsCommitment(static_cast<Purchase>(i))) commitments.push_back(ToString(static_cast<Purchase>(i)));
  }
  EXPECT_THAT(commitments, ElementsAre("reserved", "savings_plan", "cud", "commitment"));
}

TEST(Model, ProviderNamesOfFocusExports) {
  EXPECT_EQ(CanonicalProviderName("Amazon Web Services"), "aws");
  EXPECT_EQ(CanonicalProviderName("Microsoft"), "azure");
  EXPECT_EQ(CanonicalProviderName("Google Cloud"), "gcp");
  EXPECT_EQ(CanonicalProviderName("CoreWeave"), "CoreWeave");  // a seller we do not know keeps its name
}

TEST(Model, MigShareIsTheSlicesOfTheWhole) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(const MigProfile* p, Catalog::Embedded().FindMigProfile("A100 80GB", "1g.10gb"));
  EXPECT_DOUBLE_EQ(p->Share(MigBasis::kCompute), 1.0 / 7);
  EXPECT_DOUBLE_EQ(p->Share(MigBasis::kMemory), 1.0 / 8);
  GPUCOST_ASSERT_OK_AND_ASSIGN(double share,
                               Catalog::Embedded().MigShare("NVIDIA A100-SXM4-80GB", "MIG 1g.10gb", MigBasis::kCompute));
  EXPECT_DOUBLE_EQ(share, 1.0 / 7);
}

TEST(Model, MigPartitionMustFitItsGpu) {
  const Catalog& catalog = Catalog::Embedded();
  // 3g + 2g + 1g + 1g = 7 of 7 compute slices: a full A100.
  MigPartition full{"A100 80GB", {{0, 1, "3g.40gb"}, {0, 2, "2g.20gb"}, {0, 3, "1g.10gb"}, {0, 4, "1g.10gb"},
                                  {1, 1, "7g.80gb"}}};
  EXPECT_THAT(CheckMigPartition(full, catalog), IsOk());
  MigPartition over{"A100 80GB", {{0, 1, "4g.40gb"}, {0, 2, "4g.40gb"}}};
  EXPECT_THAT(CheckMigPartition(over, catalog),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("device 0 (A100 80GB): slices 4g.40gb + 4g.40gb need 8/7 compute")));
  MigPartition twice{"A100 80GB", {{0, 5, "1g.10gb"}, {0, 5, "1g.10gb"}}};
  EXPECT_THAT(CheckMigPartition(twice, catalog),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("GPU instance 5 appears twice")));
  MigPartition unknown{"A100 80GB", {{0, 1, "9g.99gb"}}};
  EXPECT_THAT(CheckMigPartition(unknown, catalog), StatusIs(absl::StatusCode::kNotFound, HasSubstr("9g.99gb")));
}

// SEMANTICS 7's first line, from rows: $8 for an hour of one GPU, which one
// job held for half the hour; plus a fee with no resource.
TEST(Model, RowsToColumnsAllocateLikeTables) {
  const int64_t h10 = 10 * kNanosPerHour;
  const CostLine lines[] = {
      {.resource_id = "i-1", .start = h10, .end = h10 + kNanosPerHour, .cost = 8.0, .list_cost = 8.0},
      {.resource_id = "", .start = h10, .end = h10 + kNanosPerHour, .cost = 1.5, .purchase = Purchase::kOther,
       .category = ChargeCategory::kTax, .primary = false},
  };
  std::vector<UsageSample> samples;
  for (int m = 0; m < 60; m += 30) {
    samples.push_back({.timestamp = h10 + m * testing::kMinute, .resource_id = "i-1", .device = 0,
                       .consumer = m == 0 ? "job" : "", .util = 0.5});  // free after 30 min
  }
  const CostTable costs = ToColumns(lines);
  EXPECT_EQ(costs.size(), 2u);
  EXPECT_EQ(costs.resource_id.codes[1], kNullCode);
  EXPECT_FALSE(costs.columns().currency.has_value());
  EXPECT_TRUE(std::isnan(costs.quantity_hours[0]));
  EXPECT_EQ(costs.category[1], ChargeCategory::kTax);
  GPUCOST_ASSERT_OK_AND_ASSIGN(SampleTable usage, ToColumns(samples));
  EXPECT_FALSE(usage.columns().duration.has_value());

  testing::InventoryTable inventory;
  inventory.AddResource("i-1", 1);
  AllocationPolicy policy;
  policy.interval_seconds = 1800;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation result,
                               Allocate(costs.columns(), usage.columns(), inventory.columns(), nullptr, policy));
  const KeyColumn& key = result.keys[0];
  ASSERT_EQ(result.size(), 3u);
  std::vector<std::pair<std::string, double>> rows;
  for (size_t i = 0; i < result.size(); ++i) rows.emplace_back(key.dictionary[key.codes[i]], result.cost[i]);
  EXPECT_THAT(rows, ElementsAre(std::pair<std::string, double>{"__idle__", 4.0},
                                std::pair<std::string, double>{"__unattributed__", 1.5},
                                std::pair<std::string, double>{"job", 4.0}));
}

TEST(Model, SamplesAllOrNoneWithDurations) {
  std::vector<UsageSample> samples(2);
  samples[0].duration = 60 * kNanosPerSecond;  // row 1 has none
  EXPECT_THAT(ToColumns(samples).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("row 1, column 'duration'")));
}

}  // namespace
}  // namespace gpucost
