// gpucost/columns.h by example: dictionary-encoded strings, the engine's
// columnar views and the owning tables built from rows (run by ctest as
// cpp_example_columns).
#include <string>
#include <string_view>
#include <vector>

#include "example_check.h"
#include "gpucost/columns.h"

int main() {
  // [EncodeStrings]
  // Strings are encoded once: a code per row and the distinct values in
  // order of first appearance; view() is the StringColumn the engine reads.
  const std::vector<std::string_view> ids = {"i-1", "i-2", "i-1"};
  const gpucost::EncodedStrings encoded = gpucost::EncodeStrings(std::span<const std::string_view>(ids));
  CHECK((encoded.codes == std::vector<int32_t>{0, 1, 0}) && encoded.values.size() == 2);
  const gpucost::StringColumn column = encoded.view();
  CHECK(column.size() == 3 && column.dictionary[column.codes[1]] == "i-2");
  const std::vector<std::string> owned = {"a", "a"};
  CHECK(gpucost::EncodeStrings(std::span<const std::string>(owned)).values.size() == 1);
  // [EncodeStrings]

  // [StringEncoder]
  // For parsers that see values one at a time; AddNull writes kNullCode.
  gpucost::StringEncoder encoder;
  CHECK(encoder.Add("ml/train") == 0);
  encoder.AddNull();
  CHECK(encoder.Add("ml/train") == 0 && encoder.size() == 3);
  const gpucost::EncodedStrings consumers = encoder.Finish();
  CHECK(consumers.codes[1] == gpucost::kNullCode && encoder.size() == 0);
  // AddOrNull: "" as null (a free device, a job without a user).
  encoder.AddOrNull("");
  encoder.AddOrNull("ml/eval");
  const gpucost::EncodedStrings held = encoder.Finish();
  CHECK(held.codes[0] == gpucost::kNullCode && held.values[held.codes[1]] == "ml/eval");
  // [StringEncoder]

  // [ViewIfAny]
  // An optional column whose rows are all null is absent to the engine.
  gpucost::StringEncoder nulls;
  nulls.AddNull();
  CHECK(!gpucost::ViewIfAny(nulls.Finish()).has_value());
  CHECK(gpucost::ViewIfAny(consumers).has_value());
  // [ViewIfAny]

  // [CostColumns]
  // The engine's views over caller-owned arrays: an hour of i-1 ($8), its one
  // GPU of 40 GiB, two samples of "job", and i-1 down for its last 15 minutes.
  const int64_t h10 = 10 * gpucost::kNanosPerHour, q = gpucost::kNanosPerHour / 4;
  const std::vector<std::string_view> one = {"i-1"}, two = {"i-1", "i-1"}, who = {"job", "job"};
  const gpucost::EncodedStrings res = gpucost::EncodeStrings(std::span<const std::string_view>(one));
  const gpucost::EncodedStrings res2 = gpucost::EncodeStrings(std::span<const std::string_view>(two));
  const gpucost::EncodedStrings job = gpucost::EncodeStrings(std::span<const std::string_view>(who));
  const std::vector<int64_t> start = {h10}, end = {h10 + 4 * q}, ts = {h10, h10 + q};
  const std::vector<double> cost = {8.0}, mem = {40.0 * (1 << 30)};
  const std::vector<int32_t> device = {0}, devices = {0, 0};
  const std::vector<double> share = {1, 1}, util = {0.5, 0.7}, used = {1e9, 2e9};
  gpucost::CostColumns costs{.resource_id = res.view(), .start = start, .end = end, .cost = cost};
  gpucost::InventoryColumns inventory{.resource_id = res.view(), .device = device, .mem_capacity = mem};
  gpucost::SampleColumns samples{.timestamp = ts, .resource_id = res2.view(), .device = devices,
                                 .consumer = job.view(), .share = share, .util = util, .mem_used = used};
  const std::vector<int64_t> down_start = {h10 + 3 * q}, down_end = {h10 + 4 * q};
  gpucost::DowntimeColumns downtime{.resource_id = res.view(), .start = down_start, .end = down_end};
  CHECK(costs.time_unit == gpucost::TimeUnit::kNanosecond && !costs.currency.has_value());
  CHECK(inventory.device.size() == 1 && downtime.size() == 1 && samples.size() == 2);
  // [CostColumns]

  // [Slice]
  // A chunk of samples for a streaming Allocator: rows [1, 2).
  const gpucost::SampleColumns chunk = samples.Slice(1, 5);
  CHECK(chunk.size() == 1 && chunk.timestamp[0] == h10 + q && chunk.consumer.codes.size() == 1);
  // [Slice]

  // [WorkloadColumns]
  // Label columns per consumer; the engine groups by them (policy.by).
  const std::vector<std::string_view> team = {"vision"};
  const std::vector<std::string_view> job_only = {"job"};
  const gpucost::EncodedStrings w_consumer = gpucost::EncodeStrings(std::span<const std::string_view>(job_only));
  const gpucost::EncodedStrings w_team = gpucost::EncodeStrings(std::span<const std::string_view>(team));
  gpucost::WorkloadColumns workloads{.consumer = w_consumer.view(),
                                     .labels = {gpucost::LabelColumn{.name = "team", .values = w_team.view()}}};
  CHECK(workloads.labels[0].values.size() == 1);
  // [WorkloadColumns]

  // [ToColumns]
  // Rows (model.h) to owning columns; columns() is the engine's view.
  const std::vector<gpucost::CostLine> lines = {
      {.resource_id = "i-1", .start = h10, .end = h10 + 4 * q, .cost = 8.0, .currency = "USD"}};
  const gpucost::CostTable cost_table = gpucost::ToColumns(std::span<const gpucost::CostLine>(lines));
  CHECK(cost_table.size() == 1 && cost_table.columns().currency.has_value());
  const std::vector<gpucost::UsageSample> rows = {
      {.timestamp = h10, .resource_id = "i-1", .consumer = "job", .util = 0.5},
      {.timestamp = h10 + q, .resource_id = "i-1", .consumer = "job", .util = 0.7}};
  const absl::StatusOr<gpucost::SampleTable> sample_table =
      gpucost::ToColumns(std::span<const gpucost::UsageSample>(rows));
  CHECK_OK(sample_table);
  CHECK(sample_table->size() == 2 && !sample_table->columns().duration.has_value());
  std::vector<gpucost::UsageSample> mixed = rows;
  mixed[1].duration = q;  // one sample with a duration, one without: an error
  CHECK(!gpucost::ToColumns(std::span<const gpucost::UsageSample>(mixed)).ok());
  // [ToColumns]
  return 0;
}
