// A small service built against an installed gpucost: allocates the
// SEMANTICS 7 line (one GPU, one job, $8 for the hour) and prints the result.
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "gpucost/gpucost.h"

int main() {
  if (std::strcmp(GPUCOST_VERSION, EXPECTED_VERSION) != 0) return 2;  // headers vs package
  std::vector<std::string_view> ids = {"i-1"}, who = {"job"};
  gpucost::EncodedStrings res = gpucost::EncodeStrings(std::span<const std::string_view>(ids));
  gpucost::EncodedStrings consumer = gpucost::EncodeStrings(std::span<const std::string_view>(who));
  const int64_t h10 = 10 * gpucost::kNanosPerHour;
  std::vector<int64_t> start = {h10}, end = {h10 + gpucost::kNanosPerHour}, ts = {h10};
  std::vector<int32_t> device = {0};
  std::vector<double> cost = {8.0}, mem = {40.0 * (1 << 30)}, share = {1.0}, util = {0.5}, used = {0.0};
  gpucost::CostColumns costs{.resource_id = res.view(), .start = start, .end = end, .cost = cost};
  gpucost::InventoryColumns inventory{.resource_id = res.view(), .device = device, .mem_capacity = mem};
  gpucost::SampleColumns samples{.timestamp = ts, .resource_id = res.view(), .device = device,
                                 .consumer = consumer.view(), .share = share, .util = util, .mem_used = used};
  gpucost::AllocationPolicy policy;
  policy.interval_seconds = 3600;
  absl::StatusOr<gpucost::Allocation> result = gpucost::Allocate(costs, samples, inventory, nullptr, policy);
  if (!result.ok()) {
    std::fprintf(stderr, "%s\n", result.status().ToString().c_str());
    return 1;
  }
  // Rows: "__idle__" (nothing idle) and "job", which took the whole line.
  const gpucost::KeyColumn& key = result->keys[0];
  for (size_t i = 0; i < result->size(); ++i) {
    std::printf("%s %.2f\n", key.dictionary[key.codes[i]].c_str(), result->cost[i]);
  }
  std::printf("gpucost %s\n", GPUCOST_VERSION);
  return result->size() == 2 && key.dictionary[key.codes[1]] == "job" && result->cost[1] == 8.0 ? 0 : 1;
}
