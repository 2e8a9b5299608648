// Owned hardware as cost lines (include/gpucost/owned.h, docs/onprem.md).
// Every expected number is worked out by hand in the comments.
#include "gpucost/owned.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gpucost/allocate.h"
#include "gpucost/catalog.h"
#include "gpucost/columns.h"
#include "gpucost/model.h"
#include "gpucost/status.h"
#include "gpucost/time.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace gpucost {
namespace {

using ::gpucost::testing::IsOk;
using ::gpucost::testing::StatusIs;
using ::testing::HasSubstr;

int64_t Day(int64_t y, unsigned m, unsigned d) { return DaysFromCivil(y, m, d) * kNanosPerDay; }

OwnedOptions Range(int64_t start, int64_t end, PeriodFreq freq = PeriodFreq::kHour) {
  return OwnedOptions{.start = start, .end = end, .freq = freq};
}

int64_t Micros(double cost) { return std::llround(cost * 1e6); }

// Sum of the lines of `component` (and `resource`, "" for any) in whole micro-dollars.
int64_t TotalMicros(const OwnedCostTable& t, OwnedComponent component, const std::string& resource = "") {
  int64_t total = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    const int32_t code = t.lines.resource_id.codes[i];
    const std::string id = code < 0 ? "" : t.lines.resource_id.values[static_cast<size_t>(code)];
    if (t.component[i] == component && (resource.empty() || id == resource)) total += Micros(t.lines.cost[i]);
  }
  return total;
}

double Total(const OwnedCostTable& t, OwnedComponent component, const std::string& resource = "") {
  return static_cast<double>(TotalMicros(t, component, resource)) / 1e6;
}

// The issue's cluster (issue 31): 4 DGX H100 at $320,000, in service
// 2026-01-01, 4-year straight line, $20,000 support a year, facility $150 a
// kW-month of their 10.2 kW; 2 A100 nodes at $150,000 (residual $15,000), in
// service 2024-07-01, 4 years, $12,000 support, half a $2,000 rack-month
// each, drawing a fixed 4.5 kW; PUE 1.3 at $0.12/kWh; $18,000 a month of
// operations.
OwnedCluster IssueCluster() {
  OwnedCluster cluster;
  cluster.classes.push_back({.name = "dgx-h100", .gpus = 8, .price = 320000, .in_service = Day(2026, 1, 1),
                             .life_years = 4, .support_per_year = 20000, .facility_per_kw_month = 150,
                             .max_power_w = 10200, .gpu_tdp_w = 700, .base_power_w = 1500});
  cluster.classes.push_back({.name = "a100", .gpus = 8, .price = 150000, .in_service = Day(2024, 7, 1),
                             .life_years = 4, .residual = 15000, .support_per_year = 12000,
                             .facility_per_rack_month = 2000, .rack_share = 0.5, .fixed_power_w = 4500});
  for (const char* name : {"dgx01", "dgx02", "dgx03", "dgx04"}) cluster.nodes.push_back({name, "dgx-h100"});
  for (const char* name : {"a100-01", "a100-02"}) cluster.nodes.push_back({name, "a100"});
  cluster.pue = 1.3;
  cluster.tariff.flat_per_kwh = 0.12;
  cluster.operations_per_month = 18000;
  return cluster;
}

// Every GPU of the DGX nodes measured at 400 W, one sample an hour per device
// (two consumers time-slicing device 0 of dgx01: its draw is on both rows
// and counts once).
SampleTable IssueSamples(int64_t start, int hours) {
  std::vector<UsageSample> rows;
  for (const char* node : {"dgx01", "dgx02", "dgx03", "dgx04"}) {
    for (int h = 0; h < hours; ++h) {
      for (int32_t d = 0; d < 8; ++d) {
        const int64_t t = start + h * kNanosPerHour;
        const bool sliced = std::string(node) == "dgx01" && d == 0;
        rows.push_back({.timestamp = t, .resource_id = node, .device = d, .consumer = "train", .share = sliced ? 0.5 : 1,
                        .util = 0.5, .duration = kNanosPerHour, .power_w = 400});
        if (sliced) {
          rows.push_back({.timestamp = t, .resource_id = node, .device = d, .consumer = "infer", .share = 0.5,
                          .util = 0.5, .duration = kNanosPerHour, .power_w = 400});
        }
      }
    }
  }
  absl::StatusOr<SampleTable> table = ToColumns(rows);
  EXPECT_THAT(table.status(), IsOk());
  return *std::move(table);
}

TEST(OwnedCostLines, IssueMonthToTheCent) {
  const int64_t march = Day(2026, 3, 1), april = Day(2026, 4, 1);  // 744 hours
  const SampleTable samples = IssueSamples(march, 744);
  const SampleColumns columns = samples.columns();
  GPUCOST_ASSERT_OK_AND_ASSIGN(OwnedCostTable t,
                               OwnedCostLines(IssueCluster(), Range(march, april), &columns));
  // One line per node, component and hour, and the operations line an hour.
  EXPECT_EQ(t.size(), 6u * 4 * 744 + 744);

  // Capex: 2026-01-01 .. 2030-01-01 is 1,461 days = 35,064 hours (2028 is a
  // leap year): $320,000 x 744 / 35,064 = $6,789.869952 in March.
  EXPECT_EQ(TotalMicros(t, OwnedComponent::kCapex, "dgx01"), 6'789'869'952);
  // A100: ($150,000 - $15,000) x 744 / 35,064 (2024-07-01 .. 2028-07-01).
  EXPECT_EQ(TotalMicros(t, OwnedComponent::kCapex, "a100-01"), 2'864'476'386);
  // Power, measured: (8 x 400 W + 1,500 W base) x 744 h = 3,496.8 kWh, x 1.3
  // x $0.12 = $545.5008. A100: 4.5 kW fixed x 744 h = 3,348 kWh -> $522.288.
  EXPECT_NEAR(Total(t, OwnedComponent::kPower, "dgx01"), 545.5008, 1e-6);
  EXPECT_NEAR(Total(t, OwnedComponent::kPower, "a100-02"), 522.288, 1e-6);
  // Facility: $150 x 10.2 kW = $1,530; A100: $2,000 x 0.5 = $1,000.
  EXPECT_EQ(TotalMicros(t, OwnedComponent::kFacility, "dgx03"), 1'530'000'000);
  EXPECT_EQ(TotalMicros(t, OwnedComponent::kFacility, "a100-01"), 1'000'000'000);
  // Support: $20,000 x 744 / 8,760 (service year 2026) = $1,698.630137;
  // A100: $12,000 x 744 / 8,760 (2025-07-01 .. 2026-07-01) = $1,019.178082.
  EXPECT_EQ(TotalMicros(t, OwnedComponent::kSupport, "dgx04"), 1'698'630'137);
  EXPECT_EQ(TotalMicros(t, OwnedComponent::kSupport, "a100-02"), 1'019'178'082);
  EXPECT_EQ(TotalMicros(t, OwnedComponent::kOperations), 18'000'000'000);
  // The month: 4 x $10,564.000889 + 2 x $5,405.942468 + $18,000.
  double total = 0;
  for (const double c : t.lines.cost) total += c;
  EXPECT_NEAR(total, 71067.888492, 1e-5);

  // The lines' shape: purchase owned; capex primary; power driven by energy
  // with its kWh; operations without a resource.
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t.lines.purchase[i], Purchase::kOwned);
    EXPECT_EQ(t.lines.primary[i] != 0, t.component[i] == OwnedComponent::kCapex);
    EXPECT_EQ(t.lines.driver[i] == static_cast<uint8_t>(CostDriver::kEnergy), t.component[i] == OwnedComponent::kPower);
    EXPECT_EQ(t.lines.end[i] - t.lines.start[i], kNanosPerHour);
    EXPECT_EQ(t.lines.resource_id.codes[i] == kNullCode, t.component[i] == OwnedComponent::kOperations);
  }
  // dgx01's first power line: 4.7 kWh measured, none estimated; the A100's estimated.
  EXPECT_NEAR(t.energy_kwh[744], 4.7, 1e-12);
  EXPECT_EQ(t.energy_estimated[744], 0);
  EXPECT_EQ(t.component[744], OwnedComponent::kPower);
}

TEST(OwnedCostLines, CapexOverTheLifeAddsUpExactly) {
  // In service mid-hour, a life over the 2028 leap day, the range cut
  // mid-hour on both sides: the capex lines add up to price - residual to the
  // micro-dollar, none before in service or after the end of life.
  OwnedCluster cluster;
  const int64_t since = Day(2027, 6, 15) + 10 * kNanosPerHour + 30 * 60 * kNanosPerSecond;
  const int64_t end_of_life = Day(2031, 6, 15) + 10 * kNanosPerHour + 30 * 60 * kNanosPerSecond;
  cluster.classes.push_back({.name = "hgx", .gpus = 8, .price = 287654.33, .in_service = since, .life_years = 4,
                             .residual = 12345.67, .fixed_power_w = 0});
  cluster.nodes.push_back({"n1", "hgx"});
  const int64_t start = since - 3 * kNanosPerDay - 17 * 60 * kNanosPerSecond;
  const int64_t end = end_of_life + 2 * kNanosPerDay + 11 * 60 * kNanosPerSecond;
  for (const PeriodFreq freq : {PeriodFreq::kHour, PeriodFreq::kDay}) {
    GPUCOST_ASSERT_OK_AND_ASSIGN(OwnedCostTable t, OwnedCostLines(cluster, Range(start, end, freq)));
    EXPECT_EQ(TotalMicros(t, OwnedComponent::kCapex), 275'308'660'000);  // 287,654.33 - 12,345.67
    int64_t first = end, last = start;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t.component[i] != OwnedComponent::kCapex) continue;
      first = std::min(first, t.lines.start[i]);
      last = std::max(last, t.lines.end[i]);
      EXPECT_GE(t.lines.cost[i], 0);
    }
    EXPECT_EQ(first, since);
    EXPECT_EQ(last, end_of_life);
  }
  // A cut in the middle of the life: the two halves add up to the whole.
  const int64_t cut = Day(2029, 2, 28) + 7 * kNanosPerHour + 123 * kNanosPerSecond;
  GPUCOST_ASSERT_OK_AND_ASSIGN(OwnedCostTable before, OwnedCostLines(cluster, Range(start, cut)));
  GPUCOST_ASSERT_OK_AND_ASSIGN(OwnedCostTable after, OwnedCostLines(cluster, Range(cut, end)));
  EXPECT_EQ(TotalMicros(before, OwnedComponent::kCapex) + TotalMicros(after, OwnedComponent::kCapex), 275'308'660'000);
}

TEST(OwnedCostLines, ScheduleByServiceYear) {
  // 40/30/20/10 % of $100,000 over 4 service years from 2028-02-29 (the
  // anniversaries fall on 28 February in common years).
  OwnedCluster cluster;
  cluster.classes.push_back({.name = "b200", .gpus = 8, .price = 100000, .in_service = Day(2028, 2, 29),
                             .life_years = 4, .depreciation_schedule = {0.4, 0.3, 0.2, 0.1}, .fixed_power_w = 0});
  cluster.nodes.push_back({"n1", "b200"});
  const int64_t years[] = {Day(2028, 2, 29), Day(2029, 2, 28), Day(2030, 2, 28), Day(2031, 2, 28), Day(2032, 2, 29)};
  const int64_t expected[] = {40'000'000'000, 30'000'000'000, 20'000'000'000, 10'000'000'000};
  for (int k = 0; k < 4; ++k) {
    GPUCOST_ASSERT_OK_AND_ASSIGN(OwnedCostTable t,
                                 OwnedCostLines(cluster, Range(years[k], years[k + 1], PeriodFreq::kDay)));
    EXPECT_EQ(TotalMicros(t, OwnedComponent::kCapex), expected[k]) << "service year " << k;
  }
}

TEST(OwnedCostLines, AfterTheEndOfLifePowerBillsTheTime) {
  OwnedCluster cluster;
  cluster.classes.push_back({.name = "old", .gpus = 4, .price = 1000, .in_service = Day(2020, 1, 1), .life_years = 1,
                             .fixed_power_w = 1000});
  cluster.nodes.push_back({"n1", "old"});
  cluster.tariff.flat_per_kwh = 0.1;
  GPUCOST_ASSERT_OK_AND_ASSIGN(
      OwnedCostTable t,
      OwnedCostLines(cluster, Range(Day(2020, 12, 31) + 22 * kNanosPerHour, Day(2021, 1, 1) + 2 * kNanosPerHour)));
  // 2 capex hours, then 4 power hours: the last 2 primary ($0.10 each: 1 kWh).
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t.component[1], OwnedComponent::kCapex);
  for (size_t i = 2; i < 6; ++i) {
    EXPECT_EQ(t.component[i], OwnedComponent::kPower);
    EXPECT_EQ(t.lines.primary[i], i >= 4 ? 1 : 0);
    EXPECT_NEAR(t.lines.cost[i], 0.1, 1e-12);
    EXPECT_EQ(t.energy_estimated[i], 1);
  }
}

TEST(OwnedCostLines, CurveAndTariffs) {
  // Not measured: 2 GPUs of 700 W TDP at 50 % busy on a curve from 10 % (idle)
  // to 100 % of TDP: 0.55 x 700 W each = 770 W, + 230 W base = 1 kW. The hour
  // 13:00 costs $0.30/kWh by hour of day, the others $0.10.
  OwnedCluster cluster;
  cluster.classes.push_back({.name = "c", .gpus = 2, .price = 1000, .in_service = Day(2026, 1, 1), .life_years = 1,
                             .gpu_tdp_w = 700, .base_power_w = 230, .power_curve = {{0, 0.1}, {1, 1}}});
  cluster.nodes.push_back({"n1", "c"});
  cluster.tariff.by_hour.assign(24, 0.1);
  cluster.tariff.by_hour[13] = 0.3;
  const int64_t noon = Day(2026, 2, 1) + 12 * kNanosPerHour;
  std::vector<UsageSample> rows;
  for (int32_t d = 0; d < 2; ++d) {
    for (int h = 0; h < 2; ++h) {
      rows.push_back({.timestamp = noon + h * kNanosPerHour, .resource_id = "n1", .device = d, .consumer = "job",
                      .util = 0.5, .duration = kNanosPerHour});
    }
  }
  GPUCOST_ASSERT_OK_AND_ASSIGN(SampleTable samples, ToColumns(rows));
  const SampleColumns columns = samples.columns();
  GPUCOST_ASSERT_OK_AND_ASSIGN(OwnedCostTable t,
                               OwnedCostLines(cluster, Range(noon, noon + 2 * kNanosPerHour), &columns));
  ASSERT_EQ(t.size(), 4u);  // capex x 2, power x 2
  EXPECT_NEAR(t.energy_kwh[2], 1.0, 1e-12);
  EXPECT_NEAR(t.lines.cost[2], 0.1, 1e-12);
  EXPECT_NEAR(t.lines.cost[3], 0.3, 1e-12);

  // A series: $0.20 for the first hour only; the second hour has no price.
  cluster.tariff.series = {{noon, noon + kNanosPerHour, 0.2}};
  EXPECT_THAT(OwnedCostLines(cluster, Range(noon, noon + 2 * kNanosPerHour), &columns).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tariff")));
  GPUCOST_ASSERT_OK_AND_ASSIGN(t, OwnedCostLines(cluster, Range(noon, noon + kNanosPerHour), &columns));
  EXPECT_NEAR(t.lines.cost[1], 0.2, 1e-12);
}

TEST(OwnedCostLines, AllocatesLikeABill) {
  // An hour of dgx01 held whole by "train": its capex ($9.12617) and its
  // energy-driven power line go to train; the operations line is unattributed.
  const int64_t march = Day(2026, 3, 1);
  const SampleTable samples = IssueSamples(march, 1);
  const SampleColumns columns = samples.columns();
  OwnedCluster cluster = IssueCluster();
  cluster.nodes.resize(1);
  GPUCOST_ASSERT_OK_AND_ASSIGN(OwnedCostTable t,
                               OwnedCostLines(cluster, Range(march, march + kNanosPerHour), &columns));
  Inventory inventory;
  for (int32_t d = 0; d < 8; ++d) {
    inventory.device.push_back(d);
    inventory.mem_capacity.push_back(80.0 * (1 << 30));
  }
  inventory.resource_id = EncodeStrings(std::vector<std::string>(8, "dgx01"));
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation result,
                               Allocate(t.lines.columns(), columns, inventory.columns(), nullptr, AllocationPolicy{}));
  // train holds 7.5 of 8 GPUs and draws 3,000 of the 3,200 W measured, infer
  // 0.5 and 200 W: each node line splits 15/16 : 1/16; operations
  // ($18,000 / 744 h) stay unattributed.
  double node_lines = 0, operations = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    (t.component[i] == OwnedComponent::kOperations ? operations : node_lines) += t.lines.cost[i];
  }
  auto cost_of = [&](const std::string& consumer) {
    const KeyColumn& key = result.keys[0];
    for (size_t r = 0; r < result.size(); ++r) {
      if (key.dictionary[static_cast<size_t>(key.codes[r])] == consumer) return result.cost[r];
    }
    return -1.0;
  };
  EXPECT_NEAR(cost_of("infer"), node_lines / 16, 1e-9);
  EXPECT_NEAR(cost_of("train"), node_lines * 15 / 16, 1e-9);
  EXPECT_NEAR(cost_of(std::string(kUnattributed)), operations, 1e-9);
  EXPECT_NEAR(operations, 18000.0 / 744, 1e-6);
}

TEST(OwnedCostLines, BadInputNamesTheClassOrNodeAndField) {
  const OwnedOptions range{.start = Day(2026, 3, 1), .end = Day(2026, 4, 1)};
  auto fails = [&](OwnedCluster c, const std::string& text) {
    EXPECT_THAT(OwnedCostLines(c, range).status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(text)));
  };
  OwnedCluster c = IssueCluster();
  c.classes[0].price = -5;
  fails(c, "owned: node class 'dgx-h100': field 'price'");
  c = IssueCluster();
  c.classes[1].life_years = 0;
  fails(c, "node class 'a100': field 'life_years'");
  c = IssueCluster();
  c.classes[1].residual = 200000;
  fails(c, "field 'residual'");
  c = IssueCluster();
  c.classes[0].depreciation_schedule = {0.5, 0.5};
  fails(c, "field 'depreciation_schedule': 2 fractions for a life of 4 years");
  c = IssueCluster();
  c.nodes[2].node_class = "dgx-h200";
  fails(c, "owned: node 'dgx03': field 'class': no node class 'dgx-h200'");
  c = IssueCluster();
  c.nodes.push_back({"dgx01", "dgx-h100"});
  fails(c, "node 'dgx01': field 'resource_id': listed twice");
  c = IssueCluster();
  c.pue = 0.9;
  fails(c, "owned: field 'pue'");
  c = IssueCluster();
  c.classes[0].in_service = kMissingInstant;
  fails(c, "node 'dgx01': field 'in_service'");
  c = IssueCluster();
  c.classes[0].gpu_tdp_w = 0;
  c.classes[0].base_power_w = 0;
  fails(c, "node 'dgx01': field 'power': no power measured");
  c = IssueCluster();
  c.tariff.by_hour = {0.1, 0.2};
  fails(c, "owned: field 'tariff': 2 rates by hour of day");
  EXPECT_THAT(OwnedCostLines(IssueCluster(), Range(range.end, range.start)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("parameter 'end'")));
  // A device the class does not have.
  std::vector<UsageSample> rows = {{.timestamp = range.start, .resource_id = "dgx01", .device = 8, .consumer = "x",
                                    .duration = kNanosPerHour, .power_w = 100}};
  GPUCOST_ASSERT_OK_AND_ASSIGN(SampleTable samples, ToColumns(rows));
  const SampleColumns columns = samples.columns();
  EXPECT_THAT(OwnedCostLines(IssueCluster(), range, &columns).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("usage: row 0, column 'device'")));
}

TEST(OwnedComponent, Spellings) {
  for (const OwnedComponent c : {OwnedComponent::kCapex, OwnedComponent::kPower, OwnedComponent::kFacility,
                                 OwnedComponent::kSupport, OwnedComponent::kOperations}) {
    GPUCOST_ASSERT_OK_AND_ASSIGN(OwnedComponent back, ParseOwnedComponent(ToString(c)));
    EXPECT_EQ(back, c);
  }
  EXPECT_THAT(ParseOwnedComponent("depreciation").status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("capex")));
}

}  // namespace
}  // namespace gpucost
