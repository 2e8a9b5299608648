// SEMANTICS 9: energy, facility energy, CO2e and energy-driven lines, by hand.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gpucost/allocate.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"
#include "testing/tables.h"
#include "engine/series_scan.h"

namespace gpucost {
namespace {

using ::gpucost::testing::At;
using ::gpucost::testing::CostTable;
using ::gpucost::testing::InventoryTable;
using ::gpucost::testing::kMinute;
using ::gpucost::testing::RowOf;
using ::gpucost::testing::SampleTable;
using ::gpucost::testing::StatusIs;
using ::testing::HasSubstr;

constexpr uint8_t kGpuTime = static_cast<uint8_t>(CostDriver::kGpuTime);
constexpr uint8_t kEnergy = static_cast<uint8_t>(CostDriver::kEnergy);

double Value(const Allocation& a, const std::vector<double>& column, const std::string& consumer) {
  const int row = RowOf(a, consumer);
  return row < 0 ? 0.0 : column[row];
}
double Sum(const std::vector<double>& v) {
  double total = 0;
  for (double x : v) total += x;
  return total;
}

class Energy : public ::testing::Test {
 protected:
  void SetUp() override {
    inventory.AddResource("n1", 1);
    policy.interval_seconds = 60;
  }
  // Samples every minute over [from, to) at `watts`.
  void Series(int64_t from, int64_t to, const std::string& consumer, double share, double watts, int device = 0) {
    for (int64_t t = from; t < to; t += kMinute) {
      samples.Add(t, "n1", device, consumer, share, 0.5, 0.0);
      samples.power_w->push_back(watts);
    }
  }
  absl::StatusOr<Allocation> Run(const CarbonIntensityColumns* carbon = nullptr) {
    const CostColumns c = costs.columns();
    const SampleColumns s = samples.columns();
    return Allocate(c, s, inventory.columns(), nullptr, policy, nullptr, carbon);
  }
  CostTable costs;
  SampleTable samples{.power_w = std::vector<double>()};
  InventoryTable inventory;
  AllocationPolicy policy;
};

// $8 for 2 hours of one GPU. A holds it the first hour at 600 W; it is free
// the second at 100 W: A 0.6 kWh, idle 0.1 kWh. PUE 1.5: 0.9 and 0.15 kWh;
// 500 g/kWh of the facility energy: 0.45 and 0.075 kg.
TEST_F(Energy, HoldersGetTheirEnergyAndFreeDevicesTheIdleRows) {
  costs.Add("n1", At(0), At(2), 8.0);
  Series(At(0), At(1), "A", 1.0, 600);
  Series(At(1), At(2), "", 1.0, 100);
  policy.pue = 1.5;
  policy.carbon_intensity = 500;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Run());
  ASSERT_TRUE(a.energy_kwh && a.facility_energy_kwh && a.co2e_kg);
  EXPECT_NEAR(Value(a, *a.energy_kwh, "A"), 0.6, 1e-12);
  EXPECT_NEAR(Value(a, *a.energy_kwh, "__idle__"), 0.1, 1e-12);
  EXPECT_NEAR(Value(a, *a.facility_energy_kwh, "A"), 0.9, 1e-12);
  EXPECT_NEAR(Value(a, *a.co2e_kg, "A"), 0.45, 1e-12);
  EXPECT_NEAR(Value(a, *a.co2e_kg, "__idle__"), 0.075, 1e-12);
  EXPECT_NEAR(Value(a, a.cost, "A"), 4.0, 1e-12);  // money is still by GPU time
  EXPECT_EQ(a.diagnostics.samples_without_power, 0);
}

// A power line ($1.40, driver energy, not primary) beside the $8 capex line:
// prorated by energy, A 0.6/0.7 of it ($1.20), idle $0.20; energy counted
// once, over the primary line only.
TEST_F(Energy, EnergyDrivenLineIsProratedByEnergy) {
  costs.Add("n1", At(0), At(2), 8.0);
  costs.Add("n1", At(0), At(2), 1.4);
  costs.primary = {1, 0};
  costs.driver = {kGpuTime, kEnergy};
  Series(At(0), At(1), "A", 1.0, 600);
  Series(At(1), At(2), "", 1.0, 100);
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Run());
  EXPECT_NEAR(Value(a, a.cost, "A"), 4.0 + 1.2, 1e-12);
  EXPECT_NEAR(Value(a, a.cost, "__idle__"), 4.0 + 0.2, 1e-12);
  EXPECT_NEAR(Value(a, a.idle_cost, "__idle__"), 4.2, 1e-12);
  EXPECT_NEAR(Value(a, *a.energy_kwh, "A"), 0.6, 1e-12);
  EXPECT_NEAR(Sum(*a.energy_kwh), 0.7, 1e-12);
  EXPECT_NEAR(Sum(a.cost), 9.4, 1e-12);
  EXPECT_FALSE(a.facility_energy_kwh.has_value());
  EXPECT_FALSE(a.co2e_kg.has_value());
}

// Two MIG halves at 400 W: each holder stands for half the device's draw.
// B's samples say 300 W for the same device (a different reading) but B
// holds a quarter: its energy is 0.25 x 300 W x 1 h.
TEST_F(Energy, SharesSplitTheDevicesDraw) {
  costs.Add("n1", At(0), At(1), 2.0);
  costs.driver = {kEnergy};
  Series(At(0), At(1), "A", 0.5, 400);
  Series(At(0), At(1), "B", 0.25, 300);
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Run());
  EXPECT_NEAR(Value(a, *a.energy_kwh, "A"), 0.2, 1e-12);
  EXPECT_NEAR(Value(a, *a.energy_kwh, "B"), 0.075, 1e-12);
  EXPECT_NEAR(Value(a, a.cost, "A"), 2.0 * 0.2 / 0.275, 1e-12);
  EXPECT_NEAR(Value(a, a.cost, "B"), 2.0 * 0.075 / 0.275, 1e-12);
  EXPECT_NEAR(Value(a, a.cost, "__idle__"), 0.0, 1e-12);
}

// idle="share": the free hour's energy goes to the holders with the idle
// cost's weights; the total is still the measured energy.
TEST_F(Energy, SharedIdleSpreadsTheFreeEnergy) {
  inventory = InventoryTable();
  inventory.AddResource("n1", 2);
  costs.Add("n1", At(0), At(1), 4.0);
  Series(At(0), At(1), "A", 1.0, 500, 0);
  Series(At(0), At(1), "", 1.0, 100, 1);
  policy.idle = IdleMode::kShare;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Run());
  EXPECT_EQ(RowOf(a, "__idle__"), -1);
  EXPECT_NEAR(Value(a, *a.energy_kwh, "A"), 0.6, 1e-12);
  EXPECT_NEAR(Value(a, a.cost, "A"), 4.0, 1e-12);
}

// An energy-driven line with no energy (no power column) falls back to the
// basis and is counted; a NaN draw is counted and adds nothing.
TEST_F(Energy, NoEnergyFallsBackAndNanIsCounted) {
  costs.Add("n1", At(0), At(1), 3.0);
  costs.driver = {kEnergy};
  Series(At(0), At(1), "A", 1.0, 0.0);
  samples.power_w->back() = std::numeric_limits<double>::quiet_NaN();
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Run());
  EXPECT_EQ(a.diagnostics.lines_energy_fallback, 1);
  EXPECT_EQ(a.diagnostics.samples_without_power, 1);
  EXPECT_NEAR(Value(a, a.cost, "A"), 3.0, 1e-12);
  samples.power_w.reset();
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation b, Run());
  EXPECT_FALSE(b.energy_kwh.has_value());
  EXPECT_EQ(b.diagnostics.lines_energy_fallback, 1);
  EXPECT_EQ(a.cost, b.cost);
}

// A table of intensities: a sample's instant picks its window, the whole
// sample at that intensity (one straddling 01:00 counts at the first hour's);
// an instant no window covers adds no CO2e and is counted.
TEST_F(Energy, CarbonTableMatchesEachSamplesInstant) {
  costs.Add("n1", At(0), At(3), 3.0);
  samples.duration = std::vector<int64_t>();
  auto add = [&](int64_t t, int64_t seconds, double watts) {
    samples.Add(t, "n1", 0, "A", 1.0, 1.0, 0.0);
    samples.duration->push_back(seconds * kNanosPerSecond);
    samples.power_w->push_back(watts);
  };
  add(At(0), 3570, 1000);          // 0.991666 kWh at 100 g
  add(At(0, 59) + 30 * kNanosPerSecond, 60, 1000);  // straddles: 1/60 kWh at 100 g
  add(At(1, 0) + 30 * kNanosPerSecond, 3570, 1000);  // at 300 g
  add(At(2), 600, 1000);           // no window: counted
  const std::vector<int64_t> start = {At(1), At(0)}, end = {At(2), At(1)};
  const std::vector<double> g = {300, 100};
  const CarbonIntensityColumns table{.start = start, .end = end, .g_per_kwh = g};
  policy.carbon_intensity = 9999;  // the table overrides it
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Run(&table));
  const double first_hour_kwh = (3570.0 + 60.0) * 1000 / 3.6e6;
  const double second_hour_kwh = 3570.0 * 1000 / 3.6e6;
  EXPECT_NEAR(Value(a, *a.co2e_kg, "A"), (first_hour_kwh * 100 + second_hour_kwh * 300) / 1000, 1e-12);
  EXPECT_NEAR(Value(a, *a.energy_kwh, "A"), first_hour_kwh + second_hour_kwh + 600.0 * 1000 / 3.6e6, 1e-12);
  EXPECT_EQ(a.diagnostics.samples_without_intensity, 1);
}

// A table by region: each resource takes its region's windows (its cost
// lines' region); rows without a region hold for the others.
TEST_F(Energy, CarbonTableByRegion) {
  inventory.AddResource("n2", 1);
  inventory.AddResource("n3", 1);
  costs.Add("n1", At(0), At(1), 1.0);
  costs.Add("n2", At(0), At(1), 1.0);
  costs.Add("n3", At(0), At(1), 1.0);
  costs.currency = std::nullopt;
  const std::vector<std::string> line_regions = {"eu-north", "us-east", ""};
  const EncodedStrings regions = EncodeStrings(line_regions);
  for (const std::string node : {"n1", "n2", "n3"}) {
    for (int64_t t = At(0); t < At(1); t += kMinute) {
      samples.Add(t, node, 0, "A", 1.0, 1.0, 0.0);
      samples.power_w->push_back(1000);  // 1 kWh in the hour
    }
  }
  const std::vector<int64_t> start = {At(0), At(0), At(0)}, end = {At(1), At(1), At(1)};
  const std::vector<double> g = {20, 400, 250};
  const std::vector<std::string> table_regions = {"eu-north", "us-east", ""};
  const EncodedStrings ci_regions = EncodeStrings(table_regions);
  CarbonIntensityColumns table{.start = start, .end = end, .g_per_kwh = g};
  table.region = ci_regions.view();
  CostColumns c = costs.columns();
  c.region = regions.view();
  const SampleColumns s = samples.columns();
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation a, Allocate(c, s, inventory.columns(), nullptr, policy, nullptr, &table));
  EXPECT_NEAR(Value(a, *a.co2e_kg, "A"), (20 + 400 + 250) / 1000.0, 1e-12);
  policy.by = {"resource_id"};
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation per, Allocate(c, s, inventory.columns(), nullptr, policy, nullptr, &table));
  EXPECT_NEAR(Value(per, *per.co2e_kg, "n1"), 0.020, 1e-12);
  EXPECT_NEAR(Value(per, *per.co2e_kg, "n2"), 0.400, 1e-12);
  EXPECT_NEAR(Value(per, *per.co2e_kg, "n3"), 0.250, 1e-12);  // no region: the rows without one
  // One resource in two regions is bad input naming the line.
  const std::vector<std::string> clash = {"eu-north", "us-east", "eu-north"};
  costs.resource_id[2] = "n1";
  c = costs.columns();
  const EncodedStrings clashing = EncodeStrings(clash);
  c.region = clashing.view();
  const std::vector<std::string> two = {"eu-north", "us-east", "us-east"};
  const EncodedStrings two_regions = EncodeStrings(two);
  c.region = two_regions.view();
  EXPECT_THAT(Allocate(c, s, inventory.columns(), nullptr, policy, nullptr, &table).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("row 2"), HasSubstr("region"), HasSubstr("earlier line"))));
}

TEST_F(Energy, BadInputIsRefusedByRowAndParameter) {
  costs.Add("n1", At(0), At(1), 1.0);
  Series(At(0), At(1), "A", 1.0, 300);
  (*samples.power_w)[7] = -5;
  EXPECT_THAT(Run().status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                       ::testing::AllOf(HasSubstr("row 7"), HasSubstr("power_w"))));
  (*samples.power_w)[7] = std::numeric_limits<double>::infinity();
  EXPECT_THAT(Run().status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("power_w")));
  (*samples.power_w)[7] = 300;
  policy.pue = 0.9;
  EXPECT_THAT(Run().status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pue")));
  policy.pue.reset();
  costs.driver = {7};
  EXPECT_THAT(Run().status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("driver")));
  costs.driver.reset();
  const std::vector<int64_t> start = {At(0), At(0, 30)}, end = {At(1), At(2)};
  const std::vector<double> g = {100, 200};
  const CarbonIntensityColumns overlapping{.start = start, .end = end, .g_per_kwh = g};
  EXPECT_THAT(Run(&overlapping).status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                                   ::testing::AllOf(HasSubstr("carbon_intensity"), HasSubstr("overlaps"))));
}

// Without a power column nothing changes: no energy columns, the same money.
TEST_F(Energy, WithoutPowerNothingChanges) {
  costs.Add("n1", At(0), At(2), 8.0);
  Series(At(0), At(1), "A", 1.0, 600);
  Series(At(1), At(2), "", 1.0, 100);
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation with_power, Run());
  samples.power_w.reset();
  policy.pue = 1.2;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation without, Run());
  EXPECT_FALSE(without.energy_kwh || without.facility_energy_kwh || without.co2e_kg);
  EXPECT_EQ(with_power.cost, without.cost);
  EXPECT_EQ(with_power.gpu_hours, without.gpu_hours);
}

// Streamed in chunks, shuffled, split over threads: the same to the bit,
// and the energy of every group adds up to the measured total.
TEST_F(Energy, SameResultForEveryThreadCountChunkingAndOrder) {
  double measured_kwh = 0;
  for (int r = 0; r < 6; ++r) {
    const std::string name = absl::StrCat("m", r);
    inventory.AddResource(name, 2);
    costs.Add(name, At(0), At(4), 10.0 + r);
    costs.Add(name, At(0), At(4), 1.0 + r);
    for (int64_t t = At(0); t < At(4); t += kMinute) {
      const double watts = 100.0 + 10 * r + static_cast<double>((t / kMinute) % 7);
      samples.Add(t, name, 0, absl::StrCat("job", r % 3), 1.0, 0.5, 0.0);
      samples.power_w->push_back(watts);
      samples.Add(t, name, 1, r % 2 ? "" : "x", 1.0, 0.5, 0.0);
      samples.power_w->push_back(watts / 2);
      measured_kwh += 1.5 * watts * 60 / 3.6e6;
    }
  }
  costs.primary = std::vector<uint8_t>(costs.start.size());
  costs.driver = std::vector<uint8_t>(costs.start.size());
  for (size_t k = 0; k < costs.start.size(); ++k) {
    (*costs.primary)[k] = k % 2 == 0;
    (*costs.driver)[k] = k % 2 == 0 ? kGpuTime : kEnergy;
  }
  const CostColumns c = costs.columns();
  const SampleColumns s = samples.columns();
  // The same rows backwards: every series out of time order.
  SampleTable reversed{.power_w = std::vector<double>()};
  for (size_t i = samples.timestamp.size(); i-- > 0;) {
    reversed.Add(samples.timestamp[i], samples.resource_id[i], samples.device[i], samples.consumer[i], 1.0, 0.5, 0.0);
    reversed.power_w->push_back((*samples.power_w)[i]);
  }
  const SampleColumns rs = reversed.columns();
  const int64_t saved = internal::MinSamplesPerWorker();
  internal::SetMinSamplesPerWorkerForTesting(1);
  policy.threads = 1;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation one, Allocate(c, s, inventory.columns(), nullptr, policy));
  policy.threads = 3;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation three, Allocate(c, s, inventory.columns(), nullptr, policy));
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation backwards, Allocate(c, rs, inventory.columns(), nullptr, policy));
  GPUCOST_ASSERT_OK_AND_ASSIGN(auto streamed, Allocator::Create(c, inventory.columns(), nullptr, policy));
  for (size_t begin = 0; begin < s.size(); begin += 700) ASSERT_TRUE(streamed->AddSamples(s.Slice(begin, 700)).ok());
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation chunked, streamed->Finish());
  internal::SetMinSamplesPerWorkerForTesting(saved);
  EXPECT_EQ(one.cost, three.cost);
  EXPECT_EQ(*one.energy_kwh, *three.energy_kwh);
  EXPECT_EQ(*one.energy_kwh, *chunked.energy_kwh);
  EXPECT_EQ(one.cost, chunked.cost);
  EXPECT_NEAR(Sum(*one.energy_kwh), measured_kwh, 1e-9);
  EXPECT_NEAR(Sum(*backwards.energy_kwh), measured_kwh, 1e-9);
  for (size_t k = 0; k < one.size(); ++k) EXPECT_NEAR(one.cost[k], backwards.cost[k], 1e-9);
  EXPECT_NEAR(Sum(one.cost), Sum(costs.cost), 1e-9);
}

// Embodied carbon follows GPU-hours: n1 (2 GPUs, 0.5 kg per GPU-hour) for
// 2 hours, A holding one GPU the first hour: A 0.5 kg, idle capacity 1.5 kg;
// under idle "share" A takes the idle capacity's too (2.0 kg). Without the
// column there is no embodied_co2e_kg.
TEST_F(Energy, EmbodiedCarbonFollowsGpuHoursHeldAndIdle) {
  inventory = InventoryTable();
  inventory.AddResource("n1", 2);
  costs.Add("n1", At(0), At(2), 8.0);
  Series(At(0), At(1), "A", 1.0, 300);
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation bare, Run());
  EXPECT_FALSE(bare.embodied_co2e_kg.has_value());
  const std::vector<double> kg = {0.5, 0.5};
  InventoryColumns inv = inventory.columns();
  inv.embodied_kg_per_gpu_hour = kg;
  const CostColumns c = costs.columns();
  const SampleColumns s = samples.columns();
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation keep, Allocate(c, s, inv, nullptr, policy));
  ASSERT_TRUE(keep.embodied_co2e_kg.has_value());
  EXPECT_NEAR(Value(keep, *keep.embodied_co2e_kg, "A"), 0.5, 1e-12);
  EXPECT_NEAR(Value(keep, *keep.embodied_co2e_kg, "__idle__"), 1.5, 1e-12);
  policy.idle = IdleMode::kShare;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Allocation share, Allocate(c, s, inv, nullptr, policy));
  EXPECT_NEAR(Value(share, *share.embodied_co2e_kg, "A"), 2.0, 1e-12);
  EXPECT_NEAR(Sum(*share.embodied_co2e_kg), 2.0, 1e-12);
  const std::vector<double> two = {0.5, 0.4};
  inv.embodied_kg_per_gpu_hour = two;
  EXPECT_THAT(Allocate(c, s, inv, nullptr, policy).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("one value per node")));
}

}  // namespace
}  // namespace gpucost
