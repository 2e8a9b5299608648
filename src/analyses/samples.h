// Private helpers shared by the analyses passes (idle, profile): the
// inventory indexed by device, usage dictionaries mapped to resources and
// consumers, row validation with the same rules and messages as
// gpucost::Allocate, and samples grouped by device. Not installed.
#ifndef GPUCOST_SRC_ANALYSES_SAMPLES_H_
#define GPUCOST_SRC_ANALYSES_SAMPLES_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpucost/columns.h"
#include "gpucost/time.h"

namespace gpucost::analyses_internal {

inline constexpr std::string_view kUsage = "usage";

// "'value'", for messages.
std::string Quoted(std::string_view s);

// Instants scaled from a column's unit to ns (wrapping, never UB).
inline int64_t ToNanos(int64_t raw, TimeUnit unit) {
  return static_cast<int64_t>(static_cast<uint64_t>(raw) * static_cast<uint64_t>(unit));
}

// The inventory: resources (first-appearance order) and their devices, each
// device numbered globally as first_device[r] + device.
struct DeviceIndex {
  std::vector<std::string> names;
  absl::flat_hash_map<std::string, int32_t> ids;
  std::vector<int32_t> device_count;
  std::vector<int64_t> first_device;
  std::vector<double> mem_capacity;  // bytes, per global device

  [[nodiscard]] int64_t num_devices() const { return static_cast<int64_t>(mem_capacity.size()); }
  // -1 when `name` is not in the inventory.
  [[nodiscard]] int32_t Find(std::string_view name) const;
};

// Validates the inventory as Allocate does (missing id, negative or duplicate
// device, devices not numbered 0..N-1, non-positive memory).
absl::StatusOr<DeviceIndex> IndexDevices(const InventoryColumns& inventory);

// Usage samples with their dictionaries resolved once: resource dictionary
// entry -> inventory resource (-1 unknown), consumer dictionary entry ->
// consumer id (-1 for null and ""), and the consumer names.
class SampleReader {
 public:
  // Checks column lengths, dictionary codes and reserved consumer names.
  static absl::StatusOr<SampleReader> Create(const SampleColumns& samples, const DeviceIndex& index,
                                             double interval_seconds);

  [[nodiscard]] size_t size() const { return samples_->size(); }
  [[nodiscard]] const std::vector<std::string>& consumer_names() const { return consumer_names_; }

  // The inventory resource of row i (-1: not in the inventory) and its
  // global device, after Check(i).
  [[nodiscard]] int32_t resource(int64_t i) const { return resource_map_[samples_->resource_id.codes[i]]; }
  [[nodiscard]] int64_t global_device(int64_t i) const {
    return index_->first_device[resource(i)] + samples_->device[i];
  }
  [[nodiscard]] int32_t consumer(int64_t i) const {
    const int32_t code = samples_->consumer.codes[i];
    return code == kNullCode ? -1 : consumer_map_[code];
  }
  [[nodiscard]] int64_t start(int64_t i) const { return ToNanos(samples_->timestamp[i], samples_->time_unit); }
  [[nodiscard]] int64_t duration(int64_t i) const {
    return samples_->duration.has_value() ? ToNanos((*samples_->duration)[i], samples_->time_unit) : interval_ns_;
  }
  [[nodiscard]] double share(int64_t i) const { return samples_->share[i]; }
  [[nodiscard]] double util(int64_t i) const { return samples_->util[i]; }
  [[nodiscard]] double mem_used(int64_t i) const { return samples_->mem_used[i]; }

  // OK when row i is valid: a known resource code, a device inside its
  // resource's inventory, share in (0, 1], util in [0, 1], mem_used >= 0,
  // a positive duration. Errors name the row and the column.
  [[nodiscard]] absl::Status Check(int64_t i) const {
    if (QuickOk(i)) [[likely]] return absl::OkStatus();
    return Explain(i);
  }

 private:
  SampleReader() = default;
  [[nodiscard]] bool QuickOk(int64_t i) const {
    const SampleColumns& s = *samples_;
    const int32_t rc = s.resource_id.codes[i];
    if (rc < 0 || rc >= static_cast<int32_t>(resource_map_.size())) return false;
    const int32_t r = resource_map_[rc];
    if (r >= 0 && (s.device[i] < 0 || s.device[i] >= index_->device_count[r])) return false;
    const int32_t cc = s.consumer.codes[i];
    const double share = s.share[i], util = s.util[i], mem = s.mem_used[i];
    bool ok = (cc >= kNullCode) & (cc < static_cast<int32_t>(consumer_map_.size())) &
              (s.timestamp[i] != kMissingInstant) & (share > 0.0) & (share <= 1.0) & (util >= 0.0) &
              (util <= 1.0) & (mem >= 0.0) & (mem < std::numeric_limits<double>::infinity());
    if (s.duration.has_value()) ok &= (*s.duration)[i] > 0;
    return ok;
  }
  [[nodiscard]] absl::Status Explain(int64_t i) const;

  const SampleColumns* samples_ = nullptr;
  const DeviceIndex* index_ = nullptr;
  int64_t interval_ns_ = 0;
  std::vector<int32_t> resource_map_;
  std::vector<int32_t> consumer_map_;
  std::vector<std::string> consumer_names_;
};

// Rows of the samples on known resources, grouped by global device (input
// order kept inside a device): rows[offsets[d] .. offsets[d + 1]). Checks
// every row; counts the rows on unknown resources.
struct DeviceRows {
  std::vector<int64_t> offsets;
  std::vector<uint32_t> rows;
  int64_t unknown_resource = 0;
};
absl::StatusOr<DeviceRows> GroupByDevice(const SampleReader& reader, const DeviceIndex& index);

}  // namespace gpucost::analyses_internal

#endif  // GPUCOST_SRC_ANALYSES_SAMPLES_H_
