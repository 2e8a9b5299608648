// Throughput of the billing readers on CSV held in memory (no file system,
// no Python): bytes per second into cost lines.
#include <cstdio>
#include <string>

#include "benchmark/benchmark.h"
#include "gpucost/io/billing.h"

namespace gpucost::io {
namespace {

// A CUR 2.0-shaped export: `rows` hourly lines over 500 instances, a mix of
// line item types, tags as a JSON map.
std::string CurCsv(int rows) {
  std::string csv =
      "identity_line_item_id,line_item_line_item_type,line_item_usage_start_date,line_item_usage_end_date,"
      "line_item_usage_account_id,line_item_product_code,line_item_usage_type,line_item_operation,"
      "line_item_resource_id,line_item_usage_amount,line_item_unblended_rate,line_item_unblended_cost,"
      "line_item_currency_code,line_item_line_item_description,pricing_public_on_demand_cost,pricing_term,"
      "product_instance_type,product_region_code,product_sku,reservation_effective_cost,"
      "reservation_reservation_a_r_n,savings_plan_savings_plan_a_r_n,savings_plan_savings_plan_effective_cost,"
      "resource_tags\n";
  static const char* kTypes[] = {"Usage", "Usage", "Usage", "DiscountedUsage", "SavingsPlanCoveredUsage"};
  static const char* kInstances[] = {"p4d.24xlarge", "g5.xlarge", "m5.large", "g6e.12xlarge", "r6i.2xlarge"};
  char line[1024];
  for (int i = 0; i < rows; ++i) {
    const int r = i % 500;
    const int hour = (i / 500) % 24;
    const char* type = kTypes[i % 5];
    const char* instance = kInstances[r % 5];
    std::snprintf(line, sizeof(line),
                  "li-%d,%s,2025-03-01T%02d:00:00Z,2025-03-01T%02d:00:00Z,111122223333,AmazonEC2,"
                  "USE1-BoxUsage:%s,RunInstances,i-%08d,1.0,1.234,%.4f,USD,\"$1.234 per On Demand Linux %s "
                  "Instance Hour\",1.234,OnDemand,%s,us-east-1,SKU%05d,%s,%s,%s,%s,\"{\"\"user_team\"\":"
                  "\"\"team-%d\"\",\"\"user_project\"\":\"\"p-%d\"\"}\"\n",
                  i, type, hour, hour + 1, instance, r, 1.234 + r * 0.001, instance, instance, r % 97,
                  type[0] == 'D' ? "0.8" : "", type[0] == 'D' ? "arn:aws:ec2:ri-1" : "",
                  type[0] == 'S' ? "arn:aws:savingsplans::sp-1" : "", type[0] == 'S' ? "0.9" : "", r % 13, r % 29);
    csv += line;
  }
  return csv;
}

void BM_ReadCurCsv(benchmark::State& state) {
  const std::string csv = CurCsv(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    absl::StatusOr<CostLines> lines = ReadBilling(BillingFormat::kCur, csv, {});
    if (!lines.ok()) state.SkipWithError(std::string(lines.status().message()).c_str());
    benchmark::DoNotOptimize(lines);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(csv.size()));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ReadCurCsv)->Arg(100'000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gpucost::io
