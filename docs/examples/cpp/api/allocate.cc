// gpucost/allocate.h by example: one cost line prorated over two jobs, in
// one call and streamed, by consumer and by period (run by ctest as
// cpp_example_allocate). SEMANTICS 7's numbers: $8 for an hour of one GPU.
#include <cstdio>
#include <string_view>
#include <vector>

#include "example_check.h"
#include "gpucost/allocate.h"

int main() {
  // The tables: i-1 billed $8 for 10:00-11:00, one GPU; "a" holds it for the
  // first 30 minutes, "b" for the next 15, nobody for the last 15 (samples
  // every 15 minutes).
  const int64_t h10 = 10 * gpucost::kNanosPerHour, q = gpucost::kNanosPerHour / 4;
  const std::vector<std::string_view> one = {"i-1"}, res = {"i-1", "i-1", "i-1"}, who = {"a", "a", "b"};
  const gpucost::EncodedStrings resource = gpucost::EncodeStrings(std::span<const std::string_view>(one));
  const gpucost::EncodedStrings sample_resource = gpucost::EncodeStrings(std::span<const std::string_view>(res));
  const gpucost::EncodedStrings consumer = gpucost::EncodeStrings(std::span<const std::string_view>(who));
  const std::vector<int64_t> start = {h10}, end = {h10 + 4 * q}, ts = {h10, h10 + q, h10 + 2 * q};
  const std::vector<double> cost = {8.0}, mem = {24.0 * (1 << 30)};
  const std::vector<int32_t> device = {0}, devices = {0, 0, 0};
  const std::vector<double> share = {1, 1, 1}, util = {0.9, 0.5, 0.2}, used = {0, 0, 0};
  const gpucost::CostColumns costs{.resource_id = resource.view(), .start = start, .end = end, .cost = cost};
  const gpucost::InventoryColumns inventory{.resource_id = resource.view(), .device = device, .mem_capacity = mem};
  const gpucost::SampleColumns samples{.timestamp = ts, .resource_id = sample_resource.view(), .device = devices,
                                       .consumer = consumer.view(), .share = share, .util = util, .mem_used = used};

  // [SeriesSpacings]
  // The interval samples stand for when they have no duration: the median
  // spacing of their series (900 s here; 60 s when there is none).
  const std::vector<double> spacings = gpucost::SeriesSpacings(samples);
  CHECK(spacings.size() == 1 && spacings[0] == 900);  // series "a" (b has one sample)
  CHECK(gpucost::InferInterval(spacings) == 900);
  CHECK(gpucost::InferInterval({}) == 60);
  // [SeriesSpacings]

  // [Allocate]
  // One call: allocated basis, idle kept on "__idle__", by consumer.
  gpucost::AllocationPolicy policy;
  policy.interval_seconds = 900;
  absl::StatusOr<gpucost::Allocation> result = gpucost::Allocate(costs, samples, inventory, nullptr, policy);
  CHECK_OK(result);
  const gpucost::KeyColumn& key = result->keys[0];  // sorted: "__idle__", "a", "b"
  CHECK(result->size() == 3 && key.name == "consumer" && !key.is_period());
  for (size_t i = 0; i < result->size(); ++i)
    std::printf("%-8s %5.2f %4.2f GPU-h\n", key.dictionary[key.codes[i]].c_str(), result->cost[i], result->gpu_hours[i]);
  CHECK(key.dictionary[key.codes[0]] == gpucost::kIdle);
  CHECK_NEAR(result->cost[0], 2.0);  // the last 15 minutes
  CHECK_NEAR(result->cost[1], 4.0);  // a: 30 minutes
  CHECK_NEAR(result->cost[2], 2.0);  // b: 15 minutes
  CHECK_NEAR(result->idle_cost[0], 2.0);
  // Diagnostics (SEMANTICS 5) and the join of bill and telemetry per resource.
  const gpucost::Diagnostics& diagnostics = result->diagnostics;
  CHECK(diagnostics.lines_total == 1 && diagnostics.samples_used == 3 && diagnostics.samples_total == 3);
  const gpucost::JoinTable& join = result->join;
  CHECK(join.size() == 1 && join.resource_id[0] == "i-1" && join.samples[0] == 3);
  CHECK_NEAR(join.billed_gpu_hours[0], 1.0);
  // By cost line: one row per line (its row in `costs`) and holder, what a
  // FOCUS split cost allocation writes for each origin charge.
  gpucost::AllocationPolicy per_line = policy;
  per_line.by = {"cost_line", "consumer"};
  absl::StatusOr<gpucost::Allocation> lines = gpucost::Allocate(costs, samples, inventory, nullptr, per_line);
  CHECK_OK(lines);
  CHECK(lines->size() == 3 && lines->keys[0].is_cost_line() && lines->keys[0].cost_line[2] == 0);
  // [Allocate]

  // [Allocator]
  // Streaming: samples in chunks of any order, the same result; an error in
  // AddSamples is sticky. Here by period (hours) with idle shared, and i-1
  // down for its last 15 minutes (a DowntimeColumns table): that part of the
  // line is "__down__", not idle.
  policy.by = {"period", "consumer"};
  policy.freq = gpucost::PeriodFreq::kHour;
  policy.idle = gpucost::IdleMode::kShare;
  const std::vector<int64_t> down_start = {h10 + 3 * q}, down_end = {h10 + 4 * q};
  const gpucost::DowntimeColumns downtime{.resource_id = resource.view(), .start = down_start, .end = down_end};
  absl::StatusOr<std::unique_ptr<gpucost::Allocator>> allocator =
      gpucost::Allocator::Create(costs, inventory, nullptr, policy, &downtime);
  CHECK_OK(allocator);
  CHECK_OK((*allocator)->AddSamples(samples.Slice(2, 1)));
  CHECK_OK((*allocator)->AddSamples(samples.Slice(0, 2)));
  absl::StatusOr<gpucost::Allocation> streamed = (*allocator)->Finish();
  CHECK_OK(streamed);
  CHECK(streamed->keys[0].is_period() && streamed->keys[0].period[0] == h10);
  double total = 0;
  for (double c : streamed->cost) total += c;
  CHECK_NEAR(total, 8.0);  // money in equals money out
  CHECK(streamed->diagnostics.lines_down == 1);

  // Chunks promised in time order (a day at a time): no history of earlier
  // chunks' rows is kept; a chunk going back in time is refused, naming its row.
  gpucost::AllocationPolicy in_order = policy;
  in_order.ordered_chunks = true;
  absl::StatusOr<std::unique_ptr<gpucost::Allocator>> ordered =
      gpucost::Allocator::Create(costs, inventory, nullptr, in_order, &downtime);
  CHECK_OK(ordered);
  CHECK_OK((*ordered)->AddSamples(samples.Slice(0, 2)));
  CHECK_OK((*ordered)->AddSamples(samples.Slice(2, 1)));
  const absl::Status back = (*ordered)->AddSamples(samples.Slice(1, 1));
  CHECK(back.message().find("row 3, column 'timestamp'") != std::string_view::npos);
  // Refused for that alone: a caller that can read the chunks again starts
  // over without the promise and gets the same result as unordered.
  CHECK((*ordered)->WentBackInTime());
  // [Allocator]

  // [Energy]
  // SEMANTICS 9: with the GPU's draw in watts (power_w), energy per
  // workload; with a pue and a carbon intensity (a number, or a
  // CarbonIntensityColumns table by instant), facility energy and CO2e.
  // "a" drew 600 W for 30 minutes, "b" 400 W for 15; free at 100 W.
  const std::vector<double> watts = {600, 600, 400};
  gpucost::SampleColumns with_power = samples;
  with_power.power_w = watts;
  gpucost::AllocationPolicy energy_policy;
  energy_policy.interval_seconds = 900;
  energy_policy.pue = 1.25;
  const std::vector<int64_t> ci_start = {h10}, ci_end = {h10 + 4 * q};
  const std::vector<double> g_per_kwh = {400};
  const gpucost::CarbonIntensityColumns carbon{.start = ci_start, .end = ci_end, .g_per_kwh = g_per_kwh};
  absl::StatusOr<gpucost::Allocation> energy =
      gpucost::Allocate(costs, with_power, inventory, nullptr, energy_policy, nullptr, &carbon);
  CHECK_OK(energy);
  CHECK(energy->energy_kwh && energy->facility_energy_kwh && energy->co2e_kg);
  CHECK_NEAR((*energy->energy_kwh)[1], 0.3);          // a: 600 W x 0.5 h
  CHECK_NEAR((*energy->facility_energy_kwh)[1], 0.375);  // x 1.25
  CHECK_NEAR((*energy->co2e_kg)[1], 0.15);             // 0.375 kWh x 400 g/kWh
  // [Energy]
  return 0;
}
