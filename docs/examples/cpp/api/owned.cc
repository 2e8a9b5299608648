// gpucost/owned.h by example: a node you own as cost lines
// (run by ctest as cpp_example_owned; docs/onprem.md).
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "example_check.h"
#include "gpucost/columns.h"
#include "gpucost/owned.h"
#include "gpucost/time.h"

int main() {
  const int64_t jan_1_2026 = gpucost::DaysFromCivil(2026, 1, 1) * gpucost::kNanosPerDay;
  const int64_t mar_1 = gpucost::DaysFromCivil(2026, 3, 1) * gpucost::kNanosPerDay;

  // [OwnedCostLines]
  // One DGX H100 at $320,000, written off over 4 years by the hour (35,064
  // hours: 2028 is a leap year), with $20,000 of support a year; its GPUs
  // drawing 40 % of their 700 W TDP at 50 % busy on the curve, plus 1.5 kW
  // for the rest of the node; PUE 1.3 at $0.12/kWh, cheaper at night.
  gpucost::OwnedNodeClass dgx;
  dgx.name = "dgx-h100";
  dgx.gpus = 8;
  dgx.price = 320000;
  dgx.in_service = jan_1_2026;
  dgx.life_years = 4;
  dgx.support_per_year = 20000;
  dgx.facility_per_rack_month = 3000;
  dgx.rack_share = 0.25;
  dgx.gpu_tdp_w = 700;
  dgx.base_power_w = 1500;
  dgx.power_curve = {gpucost::PowerCurvePoint{.util = 0, .fraction = 0.1},
                     gpucost::PowerCurvePoint{.util = 0.5, .fraction = 0.4},
                     gpucost::PowerCurvePoint{.util = 1, .fraction = 1}};
  gpucost::OwnedCluster cluster;
  cluster.classes = {dgx};
  cluster.nodes = {gpucost::OwnedNode{.resource_id = "dgx01", .node_class = "dgx-h100"}};
  cluster.pue = 1.3;
  cluster.tariff = gpucost::Tariff{.flat_per_kwh = 0.12};
  cluster.tariff.by_hour.assign(24, 0.12);
  cluster.tariff.by_hour[3] = 0.08;
  cluster.tariff.series = {gpucost::TariffPeriod{.start = mar_1, .end = mar_1 + 24 * gpucost::kNanosPerHour,
                                                 .per_kwh = 0.12}};
  cluster.operations_per_month = 18000;

  // An hour of telemetry: every GPU held by "train" at 50 % busy, no power_w.
  gpucost::SampleTable samples;
  for (int32_t d = 0; d < 8; ++d) {
    samples.timestamp.push_back(mar_1);
    samples.device.push_back(d);
    samples.share.push_back(1);
    samples.util.push_back(0.5);
    samples.mem_used.push_back(0);
    samples.duration.push_back(gpucost::kNanosPerHour);
  }
  samples.resource_id = gpucost::EncodeStrings(std::vector<std::string>(8, "dgx01"));
  samples.consumer = gpucost::EncodeStrings(std::vector<std::string>(8, "train"));
  const gpucost::SampleColumns columns = samples.columns();

  absl::StatusOr<gpucost::OwnedCostTable> day = gpucost::OwnedCostLines(
      cluster, gpucost::OwnedOptions{.start = mar_1, .end = mar_1 + 24 * gpucost::kNanosPerHour}, &columns);
  CHECK(day.ok());
  // 24 hours of capex, power, facility and support for dgx01, and 24 of operations.
  CHECK(day->size() == 5 * 24);
  CHECK(day->component[0] == gpucost::OwnedComponent::kCapex && day->lines.primary[0] == 1);
  CHECK(std::abs(day->lines.cost[0] - 9.12617) < 1e-9);  // 320,000 / 35,064, to the micro-dollar
  // The first power hour: 8 x 0.4 x 700 W + 1.5 kW = 3.74 kWh, x 1.3 x $0.12.
  CHECK(day->component[24] == gpucost::OwnedComponent::kPower && day->energy_estimated[24] == 1);
  CHECK(std::abs(day->energy_kwh[24] - 3.74) < 1e-12);
  CHECK(std::abs(day->lines.cost[24] - 3.74 * 1.3 * 0.12) < 1e-12);
  CHECK(day->lines.driver[24] == static_cast<uint8_t>(gpucost::CostDriver::kEnergy));
  // Daily lines for long ranges: the same money, 24 times fewer lines.
  absl::StatusOr<gpucost::OwnedCostTable> daily = gpucost::OwnedCostLines(
      cluster, gpucost::OwnedOptions{.start = mar_1, .end = mar_1 + 24 * gpucost::kNanosPerHour,
                                     .freq = gpucost::PeriodFreq::kDay});
  CHECK(daily.ok() && daily->size() == 5);
  // day->lines.columns() feeds gpucost::Allocate like a bill.
  // [OwnedCostLines]

  // [ParseOwnedComponent]
  CHECK(gpucost::ToString(gpucost::OwnedComponent::kFacility) == "facility");
  CHECK(*gpucost::ParseOwnedComponent("operations") == gpucost::OwnedComponent::kOperations);
  CHECK(!gpucost::ParseOwnedComponent("depreciation").ok());
  // [ParseOwnedComponent]
  return 0;
}
