// File: owned.h
//
// Hardware you own as a purchase model (Purchase::kOwned, docs/onprem.md):
// what a node costs per hour once its price is written off over its service
// life, with the power it draws, the room it stands in, its support contract
// and the cluster's operations. OwnedCostLines writes these as cost lines in
// the shape every bill reader gives, so Allocate, check, reports, budgets and
// forecasts take them unchanged.
//
// One line per node, component and hour (or day), for [start, end):
//   capex       (price - residual) spread evenly over every hour of the
//               service life [in_service, in_service + life_years), or per
//               service year by `depreciation_schedule`; primary (it bills
//               the node's GPU time). Nothing before in service or after the
//               end of life.
//   power       energy x PUE x tariff, driver CostDriver::kEnergy (the engine
//               prorates it by each holder's measured energy). Energy: the
//               node's measured GPU draw (samples' power_w) + base_power_w
//               where measured, else fixed_power_w, else gpus x gpu_tdp_w x
//               power_curve(utilisation) + base_power_w.
//   facility    facility_per_kw_month x kW, or facility_per_rack_month x
//               rack_share, spread evenly over each calendar month's hours.
//   support     support_per_year spread evenly over each service year's hours
//               (anniversaries of in_service), during the service life.
//   operations  the cluster's operations_per_month spread evenly over each
//               calendar month's hours: one line per hour with no resource
//               (it lands on __unattributed__ and is shared by share_costs).
// Power and facility run from in_service on, past the end of life.
//
// Money: every spread amount is whole micro-dollars (currency units / 1e6),
// rounded on the running total of its period, so the lines of a period
// (a month, a service year, the whole life) add up to its amount exactly.
//
// Example:
//   gpucost::OwnedCluster cluster;
//   cluster.classes.push_back({.name = "dgx-h100", .gpus = 8, .price = 320000,
//                              .in_service = jan_1_2026, .life_years = 4,
//                              .fixed_power_w = 10200});
//   cluster.nodes.push_back({.resource_id = "dgx01", .node_class = "dgx-h100"});
//   cluster.tariff.flat_per_kwh = 0.12;
//   absl::StatusOr<gpucost::OwnedCostTable> lines = gpucost::OwnedCostLines(
//       cluster, {.start = mar_1, .end = apr_1});
//   // lines->lines.columns() feeds gpucost::Allocate like a bill.
#ifndef GPUCOST_OWNED_H_
#define GPUCOST_OWNED_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gpucost/columns.h"
#include "gpucost/model.h"
#include "gpucost/time.h"

namespace gpucost {

// The parts of an owned node's cost: "capex", "power", "facility", "support",
// "operations".
enum class OwnedComponent : uint8_t { kCapex, kPower, kFacility, kSupport, kOperations };

[[nodiscard]] std::string_view ToString(OwnedComponent value);
[[nodiscard]] absl::StatusOr<OwnedComponent> ParseOwnedComponent(std::string_view text);

// At GPU utilisation `util` (0..1) a GPU draws `fraction` of its TDP; a
// curve is linear between its points and flat beyond them.
struct PowerCurvePoint {
  double util = 0;
  double fraction = 1;
};

// An electricity price for [start, end): both on whole hours.
struct TariffPeriod {
  int64_t start = 0;  // ns since the epoch, UTC
  int64_t end = 0;    // exclusive
  double per_kwh = 0;
};

// What a kWh costs: a series where given (it must cover every hour
// priced), else 24 rates by hour of day (UTC) where given, else the flat rate.
struct Tariff {
  double flat_per_kwh = 0;
  std::vector<double> by_hour;       // 24 rates, [0] for 00:00-01:00 UTC
  std::vector<TariffPeriod> series;  // not overlapping
};

// A node or class of identical nodes you own.
struct OwnedNodeClass {
  std::string name;  // names the class in errors and nodes
  int gpus = 0;      // GPU devices of one node
  // ---- capex: a straight line over the life, or a schedule by service year
  double price = 0;                      // per node, > 0
  int64_t in_service = kMissingInstant;  // UTC; a node may override it
  int life_years = 0;                    // service life, 1..30 calendar years
  double residual = 0;                   // value at the end of life, in [0, price]
  // Fractions of (price - residual) per service year, one per year of the
  // life, adding up to 1; each spread evenly over its year's hours. Empty:
  // straight line over the whole life's hours.
  std::vector<double> depreciation_schedule;
  double support_per_year = 0;
  // ---- facility: per kW-month of the node's power, or per rack-month
  double facility_per_kw_month = 0;
  double facility_kw = 0;  // kW billed; 0: max_power_w / 1000
  double facility_per_rack_month = 0;
  double rack_share = 1;   // racks one node takes (0.25: four nodes a rack)
  // ---- power
  double max_power_w = 0;  // the node's nameplate maximum (catalog)
  // The node's constant draw in W when not measured; NaN: use the curve.
  double fixed_power_w = std::numeric_limits<double>::quiet_NaN();
  double gpu_tdp_w = 0;     // nameplate GPU TDP, for the curve
  double base_power_w = 0;  // the rest of the node (CPUs, fans, network), added to GPU power
  // Fraction of TDP by GPU utilisation; empty: TDP at any load (an upper bound).
  std::vector<PowerCurvePoint> power_curve;
};

// One owned machine: `resource_id` as telemetry and the inventory name it.
struct OwnedNode {
  std::string resource_id;
  std::string node_class;                // an OwnedNodeClass name
  int64_t in_service = kMissingInstant;  // missing: the class's
};

struct OwnedCluster {
  std::vector<OwnedNodeClass> classes;
  std::vector<OwnedNode> nodes;
  double pue = 1.0;  // facility energy / IT energy, >= 1
  Tariff tariff;
  double operations_per_month = 0;  // staff, software, ...: the whole cluster's
  std::string currency;             // ISO 4217; "" = the bill's one currency
};

struct OwnedOptions {
  int64_t start = kMissingInstant;  // UTC, ns; lines cover [start, end)
  int64_t end = kMissingInstant;
  // PeriodFreq::kHour (default) or kDay (for long ranges: 24x fewer lines,
  // the same totals); lines never cross a UTC hour (day) boundary.
  PeriodFreq freq = PeriodFreq::kHour;
  // Seconds a sample stands for when the samples have no duration column.
  std::optional<double> interval_seconds;
};

// The lines with what each is: `component`, and for power lines the IT
// energy (kWh, before PUE) and whether any of it was estimated (no power
// measured for the node in some hour).
struct OwnedCostTable {
  CostTable lines;
  std::vector<OwnedComponent> component;
  std::vector<double> energy_kwh;          // 0 on other lines
  std::vector<uint8_t> energy_estimated;   // 0 on other lines

  [[nodiscard]] size_t size() const { return component.size(); }
};

// The cost lines of `cluster` for [options.start, options.end), sorted by
// node (in `nodes` order, operations last), component, start. `samples`
// (optional) give measured power: each (resource, device, timestamp) with a
// power_w counts once, for the sample's duration; their util drives the
// curve. Samples of other resources are ignored. Bad input is
// kInvalidArgument naming the class or node and the field.
[[nodiscard]] absl::StatusOr<OwnedCostTable> OwnedCostLines(const OwnedCluster& cluster,
                                                           const OwnedOptions& options,
                                                           const SampleColumns* samples = nullptr);

}  // namespace gpucost

#endif  // GPUCOST_OWNED_H_
