// gpucost/analyses/profile.h by example: per-workload usage statistics
// with an extra DCGM field (run by ctest as cpp_example_profile).
#include <cmath>
#include <string_view>
#include <vector>

#include "example_check.h"
#include "gpucost/analyses/profile.h"
#include "gpucost/columns.h"

int main() {
  // [ProfileUsage]
  // "train" holds GPU 0 of i-1 (40 GB) for two minutes, 80 % then 40 % busy,
  // near the memory's limit in the second; a free reading of GPU 1 is counted,
  // not profiled. The tensor-pipe field is NaN where not reported.
  const std::vector<std::string_view> res = {"i-1", "i-1", "i-1"}, who = {"train", "train", ""};
  const std::vector<std::string_view> inv = {"i-1", "i-1"};
  const gpucost::EncodedStrings resource = gpucost::EncodeStrings(std::span<const std::string_view>(res));
  const gpucost::EncodedStrings consumer = gpucost::EncodeStrings(std::span<const std::string_view>(who));
  const gpucost::EncodedStrings inv_resource = gpucost::EncodeStrings(std::span<const std::string_view>(inv));
  const int64_t m = 60 * gpucost::kNanosPerSecond;
  const std::vector<int64_t> ts = {0, m, 0};
  const std::vector<int32_t> device = {0, 0, 1}, devices = {0, 1};
  const std::vector<double> share = {1, 1, 1}, util = {0.8, 0.4, 0}, mem_used = {10e9, 38e9, 0}, capacity = {40e9, 40e9};
  const gpucost::SampleColumns samples{.timestamp = ts, .resource_id = resource.view(), .device = device,
                                       .consumer = consumer.view(), .share = share, .util = util, .mem_used = mem_used};
  const gpucost::InventoryColumns inventory{.resource_id = inv_resource.view(), .device = devices,
                                            .mem_capacity = capacity};
  const std::vector<double> tensor = {0.5, NAN, 0};
  const std::vector<gpucost::ProfileField> fields = {{.name = "tensor_active", .values = tensor}};
  gpucost::ProfileOptions options;
  options.freq = gpucost::PeriodFreq::kDay;
  options.interval_seconds = 60;
  absl::StatusOr<gpucost::UsageProfile> profile = gpucost::ProfileUsage(samples, inventory, fields, options);
  CHECK_OK(profile);
  CHECK(profile->size() == 1 && profile->consumer_names[profile->consumer[0]] == "train");
  CHECK(profile->samples[0] == 2 && profile->samples_total == 3 && profile->samples_no_consumer == 1);
  CHECK_NEAR(profile->held_ns[0], 2.0 * m);
  CHECK_NEAR(profile->used_ns[0], 1.2 * m);  // 0.8 + 0.4 minutes busy
  CHECK(profile->mem_peak[0] == 38e9 && profile->mem_capacity[0] == 40e9);
  CHECK_NEAR(profile->mem_pressure_ns[0], 1.0 * m);  // 38 of 40 GB >= 85 %
  CHECK(profile->field_names[0] == "tensor_active");
  CHECK_NEAR(profile->field_sum[0][0] / profile->field_weight[0][0], 0.5);  // the NaN left out
  CHECK(profile->field_max[0][0] == 0.5 && profile->period[0] == 0 && profile->last[0] == 2 * m);
  // [ProfileUsage]
  return 0;
}
