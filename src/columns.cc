#include "gpucost/columns.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gpucost/status.h"

namespace gpucost {

int32_t StringEncoder::Add(std::string_view value) {
  // Look up without building a std::string: only new values are copied.
  auto it = index_.find(absl::string_view(value.data(), value.size()));
  if (it == index_.end()) {
    it = index_.emplace(std::string(value), static_cast<int32_t>(encoded_.values.size())).first;
    encoded_.values.emplace_back(value);
  }
  encoded_.codes.push_back(it->second);
  return it->second;
}

EncodedStrings StringEncoder::Finish() {
  EncodedStrings out = std::move(encoded_);
  encoded_ = EncodedStrings();
  index_.clear();
  out.value_views.assign(out.values.begin(), out.values.end());
  return out;
}

EncodedStrings EncodeStrings(std::span<const std::string_view> values) {
  StringEncoder encoder;
  for (std::string_view v : values) encoder.Add(v);
  return encoder.Finish();
}

EncodedStrings EncodeStrings(std::span<const std::string> values) {
  StringEncoder encoder;
  for (const std::string& v : values) encoder.Add(v);
  return encoder.Finish();
}

std::optional<StringColumn> ViewIfAny(const EncodedStrings& strings) {
  for (int32_t code : strings.codes) {
    if (code != kNullCode) return strings.view();
  }
  return std::nullopt;
}

CostColumns CostTable::columns() const {
  CostColumns out{.resource_id = resource_id.view(), .start = start, .end = end, .cost = cost,
                  .list_cost = list_cost, .primary = primary, .quantity_hours = quantity_hours};
  out.currency = ViewIfAny(currency);
  const auto energy = static_cast<uint8_t>(CostDriver::kEnergy);
  if (std::find(driver.begin(), driver.end(), energy) != driver.end()) out.driver = std::span<const uint8_t>(driver);
  return out;
}

SampleColumns SampleTable::columns() const {
  SampleColumns out{.timestamp = timestamp, .resource_id = resource_id.view(), .device = device,
                    .consumer = consumer.view(), .share = share, .util = util, .mem_used = mem_used};
  if (!duration.empty()) out.duration = std::span<const int64_t>(duration);
  if (!power_w.empty()) out.power_w = std::span<const double>(power_w);
  return out;
}

CostTable ToColumns(std::span<const CostLine> lines) {
  CostTable out;
  StringEncoder resource, currency;
  for (const CostLine& line : lines) {
    resource.AddOrNull(line.resource_id);
    currency.AddOrNull(line.currency);
    out.start.push_back(line.start);
    out.end.push_back(line.end);
    out.cost.push_back(line.cost);
    out.list_cost.push_back(line.list_cost);
    out.quantity_hours.push_back(line.quantity_hours);
    out.primary.push_back(line.primary ? 1 : 0);
    out.purchase.push_back(line.purchase);
    out.category.push_back(line.category);
    out.driver.push_back(static_cast<uint8_t>(line.driver));
  }
  out.resource_id = resource.Finish();
  out.currency = currency.Finish();
  return out;
}

absl::StatusOr<SampleTable> ToColumns(std::span<const UsageSample> samples) {
  SampleTable out;
  StringEncoder resource, consumer;
  const bool durations = !samples.empty() && samples.front().duration.has_value();
  // A power column when any sample measured power (NaN on the others).
  const bool power = std::any_of(samples.begin(), samples.end(), [](const UsageSample& s) { return !std::isnan(s.power_w); });
  for (size_t i = 0; i < samples.size(); ++i) {
    const UsageSample& s = samples[i];
    if (s.duration.has_value() != durations) {
      return RowError("samples", static_cast<long long>(i), "duration",
                      durations ? "missing, while the first sample has one" : "given, while the first sample has none");
    }
    out.timestamp.push_back(s.timestamp);
    resource.Add(s.resource_id);
    out.device.push_back(s.device);
    consumer.AddOrNull(s.consumer);
    out.share.push_back(s.share);
    out.util.push_back(s.util);
    out.mem_used.push_back(s.mem_used);
    if (durations) out.duration.push_back(*s.duration);
    if (power) out.power_w.push_back(s.power_w);
  }
  out.resource_id = resource.Finish();
  out.consumer = consumer.Finish();
  return out;
}

}  // namespace gpucost
