#include "gpucost/io/billing.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gpucost/allocate.h"
#include "gpucost/io/azure.h"
#include "gpucost/io/cur.h"
#include "gpucost/io/focus.h"
#include "gpucost/io/gcp.h"
#include "gpucost/status.h"
#include "gtest/gtest.h"
#include "testing/billing_lines.h"
#include "testing/status_matchers.h"

namespace gpucost::io {
namespace {

using ::gpucost::testing::At;
using ::gpucost::testing::Sum;
using ::gpucost::testing::BillingFixture;

using ::gpucost::testing::IsOk;
using ::gpucost::testing::StatusIs;
using ::testing::HasSubstr;

// The index of the first line whose resource id contains `part`.
size_t LineOf(const CostLines& lines, const std::string& part) {
  for (size_t i = 0; i < lines.size(); ++i) {
    if (At(lines.resource_id, i).find(part) != std::string::npos) return i;
  }
  ADD_FAILURE() << "no line for " << part;
  return 0;
}

BillingOptions Named(std::string source) {
  BillingOptions options;
  options.source = std::move(source);
  return options;
}

TEST(ReadFocus, Focus12AllRowsBecomeLines) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines lines, ReadFocusCsv(BillingFixture("focus_1_2.csv"), Named("focus_1_2.csv")));
  ASSERT_EQ(lines.size(), 10u);
  // The export's own EffectiveCost total, purchases, unused commitment,
  // tax and credit included.
  const double effective = 32.7726 + 20.3190 + 0 + 4.6810 + 4.9159 + 0.0125 + 0.45 + 1.006 + 3.10 - 5.00;
  EXPECT_NEAR(Sum(lines.cost), effective, 1e-9);
  EXPECT_NEAR(Sum(lines.billed_cost), 32.7726 + 0 + 25 + 0 + 4.9159 + 0.0125 + 0.45 + 1.006 + 3.10 - 5.00, 1e-9);

  const size_t od = LineOf(lines, "i-0aaa");
  EXPECT_EQ(At(lines.pricing, od), "on_demand");
  EXPECT_EQ(At(lines.instance_type, od), "p4d.24xlarge");
  EXPECT_TRUE(lines.gpu[od]);
  EXPECT_EQ(At(lines.provider, od), "aws");
  EXPECT_EQ(At(lines.region, od), "us-west-2");
  EXPECT_EQ(At(lines.tags, od), R"({"team":"llm-train","project-id":"p-llm"})");
  EXPECT_EQ(lines.end[od] - lines.start[od], kNanosPerHour);
  EXPECT_DOUBLE_EQ(lines.list_cost[od], 32.7726);

  const size_t sp = LineOf(lines, "i-0bbb");
  EXPECT_EQ(At(lines.pricing, sp), "savings_plan");
  EXPECT_EQ(At(lines.commitment_status, sp), "Used");
  EXPECT_DOUBLE_EQ(lines.cost[sp], 20.3190);
  EXPECT_DOUBLE_EQ(lines.billed_cost[sp], 0);

  const size_t spot = LineOf(lines, "i-0ccc");
  EXPECT_EQ(At(lines.pricing, spot), "spot");
  EXPECT_EQ(lines.end[spot] - lines.start[spot], kNanosPerHour / 2);  // fractional timestamps

  const size_t g5 = LineOf(lines, "i-0fff");
  EXPECT_EQ(At(lines.instance_type, g5), "g5.xlarge");  // from SkuPriceDetails
  EXPECT_TRUE(lines.gpu[g5]);
  EXPECT_EQ(At(lines.tags, g5), R"({"team":"cv","note":"says \"hi\", twice"})");

  EXPECT_FALSE(lines.gpu[LineOf(lines, "vol-0ddd")]);
  EXPECT_EQ(At(lines.tags, LineOf(lines, "nat-0eee")), "{}");  // literal null
  // Tax and credit: no resource, kept as lines.
  int no_resource = 0;
  for (size_t i = 0; i < lines.size(); ++i) no_resource += lines.resource_id.codes[i] == kNullCode;
  EXPECT_EQ(no_resource, 2);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (At(lines.charge_category, i) == "Tax") {
      EXPECT_EQ(lines.list_cost[i], 0.0);  // ListCost null
    }
  }
}

TEST(ReadFocus, AmountsAndChunking) {
  const std::string csv = BillingFixture("focus_1_2.csv");
  BillingOptions billed = Named("f.csv");
  billed.amount = CostAmount::kBilled;
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines b, ReadFocusCsv(csv, billed));
  EXPECT_NEAR(Sum(b.cost), Sum(b.billed_cost), 1e-12);
  BillingOptions list = Named("f.csv");
  list.amount = CostAmount::kList;
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines l, ReadFocusCsv(csv, list));
  EXPECT_NEAR(Sum(l.cost), 32.7726 * 2 + 25 + 4.681 + 16.3863 + 0.0125 + 0.45 + 1.006 + 0 + 0, 1e-9);

  // Any chunking gives the same lines.
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines whole, ReadFocusCsv(csv));
  for (size_t chunk : {1, 7, 64, 1000}) {
    GPUCOST_ASSERT_OK_AND_ASSIGN(auto reader, BillingReader::Create(BillingFormat::kFocus, {}));
    for (size_t i = 0; i < csv.size(); i += chunk) ASSERT_THAT(reader->FeedCsv(std::string_view(csv).substr(i, chunk)), IsOk());
    GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines lines, reader->Finish());
    EXPECT_EQ(lines.cost, whole.cost) << chunk;
    EXPECT_EQ(lines.start, whole.start) << chunk;
    EXPECT_EQ(lines.tags.values, whole.tags.values) << chunk;
  }
}

TEST(ReadFocus, OtherVersions) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines azure, ReadFocusCsv(BillingFixture("focus_1_0_azure.csv")));
  ASSERT_EQ(azure.size(), 3u);
  EXPECT_EQ(At(azure.provider, 0), "azure");
  EXPECT_EQ(At(azure.instance_type, 0), "Standard_ND96asr_v4");  // x_SkuDetails
  EXPECT_EQ(At(azure.resource_id, 0),
            "/subscriptions/sub-1/resourcegroups/ml/providers/microsoft.compute/virtualmachines/nd-od-1");
  EXPECT_EQ(At(azure.commitment_id, 0), "<null>");                // literal null
  EXPECT_EQ(azure.end[0] - azure.start[0], kNanosPerDay);
  EXPECT_EQ(At(azure.commitment_status, 2), "Unused");
  EXPECT_NEAR(Sum(azure.cost), 652.728 + 374 + 34, 1e-9);

  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines gcp, ReadFocusCsv(BillingFixture("focus_1_3_gcp.csv")));
  ASSERT_EQ(gcp.size(), 2u);
  EXPECT_EQ(At(gcp.provider, 0), "gcp");  // 1.3 ServiceProviderName
  EXPECT_EQ(At(gcp.instance_type, 0), "a2-highgpu-1g");
  EXPECT_EQ(At(gcp.resource_id, 0), "projects/ml-prod/zones/us-central1-a/instances/1111");  // no ResourceName
  EXPECT_EQ(At(gcp.instance_id, 0), "1111");
  EXPECT_TRUE(gcp.gpu[0]);
  EXPECT_EQ(At(gcp.pricing, 1), "spot");
}

TEST(ReadFocus, BadInputNamesFileLineAndColumn) {
  const std::string header = "ChargePeriodStart,ChargePeriodEnd,BilledCost,EffectiveCost,ResourceId\n";
  const std::string good = "2025-03-01T10:00:00Z,2025-03-01T11:00:00Z,1,1,i-1\n";
  EXPECT_THAT(ReadFocusCsv("ChargePeriodStart,ChargePeriodEnd,BilledCost\n" + good, Named("bill.csv")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "bill.csv: line 1, column 'EffectiveCost': missing required column"));
  EXPECT_THAT(ReadFocusCsv(header + good + "2025-03-01T10:00:00Z,2025-03-01T11:00:00Z,1,abc,i-1\n", Named("bill.csv")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "bill.csv: line 3, column 'EffectiveCost': 'abc' is not a number"));
  EXPECT_THAT(ReadFocusCsv(header + "2023-02-01T30:00:00Z,2025-03-01T11:00:00Z,1,1,i-1\n", Named("bill.csv")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "bill.csv: line 2, column 'ChargePeriodStart': '2023-02-01T30:00:00Z' is not an ISO 8601 "
                       "timestamp"));
  EXPECT_THAT(ReadFocusCsv(header + "2025-03-01T12:00:00Z,2025-03-01T11:00:00Z,1,1,i-1\n", Named("bill.csv")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line 2, column 'ChargePeriodEnd': '2025-03-01T11:00:00Z' is before the start")));
  EXPECT_THAT(ReadFocusCsv(header + good + "2025-03-01T10:00:00Z,2025-03-01T11:00:00Z,1,1,\"i-1\n", Named("bill.csv")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bill.csv: line 3, column 'ResourceId': unterminated quote")));
  EXPECT_THAT(ReadFocusCsv(header + "2025-03-01T10:00:00Z,2025-03-01T11:00:00Z,1\n", Named("bill.csv")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "bill.csv: line 2, column 'EffectiveCost': expected 5 fields, found 3"));
  EXPECT_THAT(ReadFocusCsv(header + "2025-03-01T10:00:00Z,2025-03-01T11:00:00Z,1,,i-1\n", Named("bill.csv")),
              StatusIs(absl::StatusCode::kInvalidArgument, "bill.csv: line 2, column 'EffectiveCost': missing amount"));
  EXPECT_THAT(ReadFocusCsv("", Named("bill.csv")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bill.csv: is empty")));
  // Unknown extra columns are ignored.
  EXPECT_THAT(ReadFocusCsv("x_Whatever,ChargePeriodStart,ChargePeriodEnd,EffectiveCost\nz," + good.substr(0, 41) + ",2\n"),
              IsOk());
}

TEST(BillingReader, StreamErrorsAreStickyAndPositioned) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(auto reader, BillingReader::Create(BillingFormat::kFocus, Named("bill.csv.gz")));
  ASSERT_THAT(reader->FeedCsv("ChargePeriodStart,ChargePeriodEnd,EffectiveCost\n2025-03-01T10:00:00Z,2025-03-01T11"),
              IsOk());
  EXPECT_THAT(reader->FailAtInputPosition("truncated gzip stream"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "bill.csv.gz: line 2, column 'ChargePeriodEnd': truncated gzip stream"));
  EXPECT_THAT(reader->Finish(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("truncated gzip")));
}

TEST(ReadCur, LegacyAmortizedAsAwsDefinesIt) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines lines, ReadCurCsv(BillingFixture("cur_legacy.csv"), Named("cur.csv")));
  ASSERT_EQ(lines.size(), 12u);
  // Usage, DiscountedUsage -> RI effective, RIFee -> unused parts, Fee -> 0,
  // SP covered -> SP effective, negation -> 0, SP fee -> unused part, spot,
  // EBS, NAT, tax, credit.
  const double amortized =
      32.7726 + 0.62 + (5.0 + 12.0) + 0 + 20.3190 + 0 + (25.0 - 20.319) + 4.9159 + 0.0110 + 0.45 + 7.50 - 10.00;
  EXPECT_NEAR(Sum(lines.cost), amortized, 1e-9);
  const double unblended = 32.7726 + 0 + 446.40 + 500 + 32.7726 - 32.7726 + 25 + 4.9159 + 0.0110 + 0.45 + 7.5 - 10;
  EXPECT_NEAR(Sum(lines.billed_cost), unblended, 1e-9);

  const size_t od = LineOf(lines, "i-0aaa");
  EXPECT_EQ(At(lines.tags, od), R"({"user:team":"llm-train","user:project-id":"p-llm"})");
  EXPECT_EQ(At(lines.instance_type, od), "p4d.24xlarge");
  EXPECT_EQ(At(lines.pricing, od), "on_demand");
  EXPECT_EQ(At(lines.service, od), "AmazonEC2");
  EXPECT_EQ(At(lines.region, od), "us-east-1");
  EXPECT_EQ(At(lines.pricing, LineOf(lines, "i-0ccc")), "spot");
  const size_t ri = LineOf(lines, "i-0ggg");
  EXPECT_EQ(At(lines.pricing, ri), "reserved");
  EXPECT_EQ(At(lines.commitment_status, ri), "Used");
  EXPECT_THAT(At(lines.commitment_id, ri), HasSubstr("reserved-instances"));
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_GT(lines.end[i], lines.start[i]);  // the zero-length Fee got one second
    if (At(lines.charge_category, i) == "Purchase" && lines.end[i] - lines.start[i] == kNanosPerSecond) {
      EXPECT_EQ(lines.cost[i], 0.0);  // the RI upfront fee is amortized into usage
    }
  }
  EXPECT_FALSE(lines.gpu[LineOf(lines, "vol-0ddd")]);
  EXPECT_TRUE(lines.gpu[LineOf(lines, "i-0ggg")]);
}

TEST(ReadCur, Cur2AndExpandedTags) {
  BillingOptions options = Named("cur2.csv");
  options.expand_tags = {"team", "project_id"};
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines lines, ReadCurCsv(BillingFixture("cur2.csv"), options));
  ASSERT_EQ(lines.size(), 11u);
  const double amortized = 55.04 + 1.1 + 3.3 + 38.5 + 0 + 1.5 + 0 + 0.1123 + 0.30 - 2.25 + 9.99;
  EXPECT_NEAR(Sum(lines.cost), amortized, 1e-9);
  const size_t p5 = LineOf(lines, "i-05aaa");
  EXPECT_EQ(At(lines.instance_type, p5), "p5.48xlarge");
  EXPECT_EQ(At(lines.tags, p5), R"({"user_team":"llm-train","user_project_id":"p-llm"})");
  ASSERT_EQ(lines.tag_keys, (std::vector<std::string>{"team", "project_id"}));
  EXPECT_EQ(At(lines.tag_values[0], p5), "llm-train");  // "team" matches "user_team"
  EXPECT_EQ(At(lines.tag_values[1], p5), "p-llm");
  EXPECT_EQ(At(lines.tag_values[1], LineOf(lines, "ckpt-bucket")), "p-llm");
  EXPECT_EQ(At(lines.tag_values[0], LineOf(lines, "ckpt-bucket")), "<null>");
  EXPECT_EQ(At(lines.pricing, LineOf(lines, "i-05ccc")), "spot");
  EXPECT_EQ(At(lines.instance_type, LineOf(lines, "i-05ccc")), "g6.xlarge");  // from the usage type
  EXPECT_EQ(lines.end[LineOf(lines, "i-05ccc")] - lines.start[LineOf(lines, "i-05ccc")], 20 * 60 * kNanosPerSecond);
}

TEST(ReadCur, MissingCommitmentColumnIsNamed) {
  const std::string csv =
      "lineItem/UsageStartDate,lineItem/UsageEndDate,lineItem/LineItemType,lineItem/UnblendedCost\n"
      "2025-03-01T10:00:00Z,2025-03-01T11:00:00Z,Usage,1.0\n"
      "2025-03-01T10:00:00Z,2025-03-01T11:00:00Z,DiscountedUsage,0.0\n";
  EXPECT_THAT(ReadCurCsv(csv, Named("cur.csv")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "cur.csv: line 3, column 'reservation_effective_cost': missing column, needed for the "
                       "amortized cost of DiscountedUsage lines"));
  BillingOptions billed = Named("cur.csv");
  billed.amount = CostAmount::kBilled;
  EXPECT_THAT(ReadCurCsv(csv, billed), IsOk());  // only the amortized amount needs it
}

TEST(ReadGcp, CsvAndJsonLinesAgree) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines csv, ReadGcpBillingCsv(BillingFixture("gcp_billing.csv"), Named("gcp.csv")));
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines json,
                               ReadGcpBillingJsonLines(BillingFixture("gcp_billing.jsonl"), Named("gcp.jsonl")));
  ASSERT_EQ(csv.size(), 11u);
  ASSERT_EQ(json.size(), csv.size());
  EXPECT_EQ(json.cost, csv.cost);
  EXPECT_EQ(json.start, csv.start);
  EXPECT_EQ(json.end, csv.end);
  EXPECT_EQ(json.gpu, csv.gpu);
  EXPECT_EQ(json.tags.values, csv.tags.values);
  EXPECT_EQ(json.resource_id.values, csv.resource_id.values);
  const double costs = 0.3793 + 0.3601 + 2.9339 + 2.9339 + 0.3793 + 0.88 + 0.35 + 0.2533 + 0.02 + 1.5 + 1.23;
  const double credits = -1.6137 - 0.0758 - 0.005;
  EXPECT_NEAR(Sum(csv.cost), costs + credits, 1e-9);

  const size_t core = LineOf(csv, "instances/trainer-1");
  EXPECT_EQ(At(csv.instance_type, core), "a2-highgpu-1g");
  EXPECT_TRUE(csv.gpu[core]);  // the VM's core line: a GPU resource
  EXPECT_EQ(At(csv.tags, core), R"({"team":"llm-train","project-id":"p-llm"})");
  EXPECT_EQ(At(csv.resource_name, core), "trainer-1");
  EXPECT_EQ(At(csv.resource_id, core), "projects/ml-prod/zones/us-central1-a/instances/trainer-1");
  EXPECT_EQ(At(csv.instance_id, core), "1111");
  const size_t cud = LineOf(csv, "instances/serve-1");
  EXPECT_EQ(At(csv.pricing, cud), "cud");
  // The CUD fee of the hour (1.50, no usage amounts to tell its use) is
  // amortized onto the one line it covered (src/io/amortize.cc).
  EXPECT_NEAR(csv.cost[cud], 2.9339 - 1.6137 + 1.50, 1e-12);
  EXPECT_EQ(At(csv.pricing, LineOf(csv, "instances/batch-1")), "spot");
  // n1 with an attached T4: both lines of the VM are GPU lines.
  const size_t n1 = LineOf(csv, "instances/nb-1");
  EXPECT_TRUE(csv.gpu[n1]);
  EXPECT_TRUE(csv.gpu[n1 + 1]);
  EXPECT_FALSE(csv.gpu[LineOf(csv, "ckpt-bucket")]);
}

TEST(ReadGcp, SeparateCredits) {
  BillingOptions options = Named("gcp.csv");
  options.gcp_credits = GcpCredits::kSeparate;
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines lines, ReadGcpBillingCsv(BillingFixture("gcp_billing.csv"), options));
  ASSERT_EQ(lines.size(), 14u);  // three credits of their own
  int credits = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (At(lines.charge_category, i) == "Credit") {
      ++credits;
      EXPECT_LT(lines.cost[i], 0);
      EXPECT_EQ(lines.resource_id.codes[i], lines.resource_id.codes[i - 1]);  // next to its line
      EXPECT_EQ(lines.tags.codes[i], lines.tags.codes[i - 1]);
    }
  }
  EXPECT_EQ(credits, 3);
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines net, ReadGcpBillingCsv(BillingFixture("gcp_billing.csv")));
  EXPECT_NEAR(Sum(lines.cost), Sum(net.cost), 1e-9);
}

TEST(ReadAzure, AmortizedDataset) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines lines, ReadAzureCostsCsv(BillingFixture("azure_amortized.csv"), Named("az.csv")));
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_NEAR(Sum(lines.cost), 652.728 + 374 + 34 + 29.917 + 12.624 + 60 + 4 + 4.52, 1e-9);
  const size_t od = LineOf(lines, "nd-od-1");  // lower-cased from ND-OD-1
  EXPECT_EQ(At(lines.instance_type, od), "Standard_ND96asr_v4");
  EXPECT_EQ(At(lines.pricing, od), "on_demand");  // "On Demand"
  EXPECT_EQ(lines.end[od] - lines.start[od], kNanosPerDay);
  EXPECT_EQ(lines.start[od], DaysFromCivil(2025, 3, 1) * kNanosPerDay);  // MM/DD/YYYY
  EXPECT_TRUE(std::isnan(lines.billed_cost[od]));
  const size_t t4 = LineOf(lines, "t4-vm-1");
  EXPECT_EQ(At(lines.instance_type, t4), "Standard_NC4as_T4_v3");  // from the meter name
  EXPECT_EQ(At(lines.tags, t4), R"({"team":"cv","env":"dev"})");    // brace-less tags
  EXPECT_EQ(At(lines.pricing, LineOf(lines, "nd-spot-1")), "spot");
  EXPECT_EQ(At(lines.pricing, LineOf(lines, "nc-sp-1")), "savings_plan");
  int unused = 0;
  for (size_t i = 0; i < lines.size(); ++i) unused += At(lines.commitment_status, i) == "Unused";
  EXPECT_EQ(unused, 2);
  BillingOptions billed;
  billed.amount = CostAmount::kBilled;
  EXPECT_THAT(ReadAzureCostsCsv(BillingFixture("azure_amortized.csv"), billed),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("parameter 'amount'")));
}

TEST(ReadAzure, EaActualDataset) {
  BillingOptions options = Named("ea.csv");
  options.azure_dataset = AzureDataset::kActual;
  options.amount = CostAmount::kBilled;
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines lines, ReadAzureCostsCsv(BillingFixture("azure_ea_actual.csv"), options));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NEAR(Sum(lines.cost), 5.26 + 0 + 21000, 1e-9);
  EXPECT_EQ(At(lines.charge_category, 2), "Purchase");
  EXPECT_EQ(At(lines.tags, 0), R"({"team":"cv","cost-center":"cc-1"})");
  EXPECT_EQ(lines.start[0], DaysFromCivil(2025, 3, 2) * kNanosPerDay);
  EXPECT_DOUBLE_EQ(lines.list_cost[1], 3.672 * 24);  // PayGPrice x quantity
}

TEST(CostLines, FeedTheEngineDirectly) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines lines, ReadFocusCsv(BillingFixture("focus_1_2.csv")));
  Inventory inventory;  // no GPUs known: everything is unattributed
  SampleColumns samples;
  AllocationPolicy policy;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation result,
                               Allocate(lines.columns(), samples, inventory.columns(), nullptr, policy));
  EXPECT_NEAR(Sum(result.cost), Sum(lines.cost), 1e-9);
}

// ---- issue 21: canonical ids, primary lines, quantities, duplicates, tz -------

size_t LineWith(const CostLines& lines, const EncodedStrings& column, const std::string& value) {
  for (size_t i = 0; i < lines.size(); ++i) {
    if (At(column, i) == value) return i;
  }
  ADD_FAILURE() << "no line with " << value;
  return 0;
}

TEST(BillingPrimary, GcpVmHourBilledAsThreeSkusHasOnePrimaryLine) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines lines, ReadGcpBillingCsv(BillingFixture("gke_detailed.csv"), Named("gke.csv")));
  ASSERT_EQ(lines.primary.size(), lines.size());
  ASSERT_EQ(lines.quantity_hours.size(), lines.size());
  const std::string a100 = "projects/ml-prod/zones/us-central1-a/instances/gke-ml-a100-pool-1f2e3d4c-abcd";
  int primary = 0, vm_lines = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (At(lines.resource_id, i) != a100) continue;
    ++vm_lines;
    if (lines.primary[i]) {
      ++primary;
      EXPECT_EQ(At(lines.sku, i), "039F-D0DA-4055");  // the GPU SKU
      EXPECT_DOUBLE_EQ(lines.quantity_hours[i], 1.0);
    } else {
      EXPECT_TRUE(std::isnan(lines.quantity_hours[i]));
    }
  }
  EXPECT_EQ(vm_lines, 6);  // two hours, three SKUs: the RAM line of hour 11 named only by its number
  for (const std::string& id : lines.resource_id.values) EXPECT_EQ(id.find("/4711"), std::string::npos) << id;
  EXPECT_EQ(primary, 2);
  const size_t l4 = LineWith(lines, lines.sku, "6B1C-96B1-DA12");
  EXPECT_TRUE(lines.primary[l4]);
  EXPECT_DOUBLE_EQ(lines.quantity_hours[l4], 0.5);  // 1800 GPU-seconds on one GPU
  const size_t cpu = LineWith(lines, lines.sku, "CF4E-A0C7-E3BF");
  EXPECT_TRUE(lines.primary[cpu]);  // no GPU SKU: the core line
  EXPECT_DOUBLE_EQ(lines.quantity_hours[cpu], 1.0);
  EXPECT_EQ(lines.report.gcp_export, "detailed");
  EXPECT_EQ(lines.report.primary_lines, 4);
  EXPECT_EQ(lines.report.currencies, std::vector<std::string>{"USD"});
}

TEST(BillingPrimary, AzureQuantityAndLowerCaseIds) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines lines, ReadAzureCostsCsv(BillingFixture("aks_amortized.csv"), Named("aks.csv")));
  const size_t spot = LineWith(lines, lines.pricing, "spot");
  EXPECT_TRUE(lines.primary[spot]);
  EXPECT_DOUBLE_EQ(lines.quantity_hours[spot], 12.0);
  // The scale set's line names its instance (additionalInfo.VMName), in lower case.
  EXPECT_EQ(At(lines.resource_id, spot),
            "/subscriptions/5f1c0a6e-9d2b-4c3a-8e7f-0a1b2c3d4e5f/resourcegroups/mc_ml_aks-ml_westeurope/providers/"
            "microsoft.compute/virtualmachinescalesets/aks-t4spot-87654321-vmss/virtualmachines/0");
  EXPECT_FALSE(lines.primary[LineWith(lines, lines.service, "Storage")]);
  EXPECT_EQ(lines.report.currencies, std::vector<std::string>{"EUR"});
}

TEST(BillingDuplicates, CurLineItemsReadTwiceAreDroppedAndCounted) {
  const std::string text = BillingFixture("eks_cur2.csv");
  const size_t newline = text.find('\n');
  const std::string twice = text + text.substr(newline + 1);
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines once, ReadCurCsv(text, Named("cur.csv")));
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines lines, ReadCurCsv(twice, Named("cur.csv")));
  EXPECT_EQ(lines.size(), once.size());
  EXPECT_EQ(lines.report.rows_read, static_cast<int64_t>(2 * once.size()));
  EXPECT_EQ(lines.report.duplicates_dropped, static_cast<int64_t>(once.size()));
  EXPECT_NEAR(Sum(lines.cost), Sum(once.cost), 1e-12);
  EXPECT_TRUE(lines.report.hours_beyond_period.empty());
  // A partial hour under per-second billing: 0.25 of the hour.
  std::vector<double> quantities;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines.primary[i]) quantities.push_back(lines.quantity_hours[i]);
  }
  EXPECT_EQ(quantities, (std::vector<double>{1.0, 0.25, 1.0}));
}

// Two parts of one bill sharing BillRows: the rows of the first that the
// second repeats (an overlapping re-delivery) are dropped by the second and
// counted in money; without the shared rows each part keeps them.
TEST(BillingDuplicates, RowsRepeatedAcrossPartsAreDroppedWithTheirMoney) {
  const std::string text = BillingFixture("eks_cur2.csv");
  const size_t newline = text.find('\n');
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines whole, ReadCurCsv(text, Named("part-1.csv")));
  BillingOptions first = Named("part-1.csv"), second = Named("part-2.csv");
  first.seen = second.seen = std::make_shared<BillRows>();
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines one, ReadCurCsv(text, first));
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines two, ReadCurCsv(text, second));
  EXPECT_EQ(one.size(), whole.size());
  EXPECT_EQ(one.report.duplicates_dropped, 0);
  EXPECT_TRUE(one.report.duplicate_cost.empty());
  EXPECT_EQ(two.size(), 0u);
  EXPECT_EQ(two.report.rows_read, static_cast<int64_t>(whole.size()));
  EXPECT_EQ(two.report.duplicates_dropped, static_cast<int64_t>(whole.size()));
  ASSERT_EQ(two.report.duplicate_currencies, (std::vector<std::string>{"USD"}));
  EXPECT_NEAR(two.report.duplicate_cost[0], Sum(whole.cost), 1e-9);
  EXPECT_EQ(first.seen->size(), static_cast<int64_t>(whole.size()));
  // Only the header and the first data row repeated: that row's money.
  const size_t second_row = text.find('\n', newline + 1);
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines row, ReadCurCsv(text.substr(0, second_row + 1), Named("row.csv")));
  BillingOptions third = Named("part-3.csv");
  third.seen = first.seen;
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines three, ReadCurCsv(text.substr(0, second_row + 1), third));
  EXPECT_EQ(three.report.duplicates_dropped, 1);
  EXPECT_NEAR(three.report.duplicate_cost[0], row.cost[0], 1e-12);
  // Not shared: each reader keeps its own rows.
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines apart, ReadCurCsv(text, Named("part-2.csv")));
  EXPECT_EQ(apart.report.duplicates_dropped, 0);
}

// The monthly RIFee line names the reservation's ARN as its resource and its
// usage type the instance type (HeavyUsage:p4d.24xlarge): the commitment, not
// a GPU machine.
TEST(ReadCur, CommitmentFeeLinesAreNeverGpuResources) {
  const std::string text =
      "identity_line_item_id,identity_time_interval,line_item_line_item_type,line_item_resource_id,"
      "line_item_usage_type,line_item_unblended_cost,line_item_usage_amount,line_item_usage_start_date,"
      "line_item_usage_end_date,line_item_currency_code,reservation_reservation_a_r_n,reservation_effective_cost,"
      "reservation_unused_amortized_upfront_fee_for_billing_period,reservation_unused_recurring_fee\n"
      "a,2025-10-01T00:00:00Z/2025-10-01T01:00:00Z,DiscountedUsage,i-0p4d,USE1-BoxUsage:p4d.24xlarge,0,1,"
      "2025-10-01T00:00:00Z,2025-10-01T01:00:00Z,USD,arn:aws:ec2:us-east-1:1:reserved-instances/ri-1,19.22,,\n"
      "b,2025-10-01T00:00:00Z/2025-11-01T00:00:00Z,RIFee,arn:aws:ec2:us-east-1:1:reserved-instances/ri-1,"
      "USE1-HeavyUsage:p4d.24xlarge,14299.68,744,2025-10-01T00:00:00Z,2025-11-01T00:00:00Z,USD,"
      "arn:aws:ec2:us-east-1:1:reserved-instances/ri-1,,0,38.44\n";
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines lines, ReadCurCsv(text, Named("cur.csv")));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(lines.gpu[LineOf(lines, "i-0p4d")]);
  const size_t fee = LineOf(lines, "reserved-instances/ri-1");
  EXPECT_EQ(At(lines.instance_type, fee), "p4d.24xlarge");  // kept to slice by
  EXPECT_FALSE(lines.gpu[fee]);
  EXPECT_FALSE(lines.primary[fee]);
  EXPECT_NEAR(lines.cost[fee], 38.44, 1e-12);  // the unused part, on no machine
}

TEST(BillingTimeZone, NaiveTimesAreLocal) {
  std::string text = BillingFixture("gke_detailed.csv");
  for (size_t at = text.find(" UTC,"); at != std::string::npos; at = text.find(" UTC,", at)) text.erase(at, 4);
  BillingOptions options = Named("naive.csv");
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines utc, ReadGcpBillingCsv(text, options));
  EXPECT_TRUE(utc.report.naive_timestamps);
  options.tz = "Europe/Berlin";
  GPUCOST_ASSERT_OK_AND_ASSIGN(CostLines berlin, ReadGcpBillingCsv(text, options));
  ASSERT_EQ(berlin.size(), utc.size());
  for (size_t i = 0; i < utc.size(); ++i) EXPECT_EQ(utc.start[i] - berlin.start[i], 3600 * kNanosPerSecond);
  options.tz = "Nowhere/Else";
  EXPECT_THAT(ReadGcpBillingCsv(text, options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown time zone")));
}

}  // namespace
}  // namespace gpucost::io
