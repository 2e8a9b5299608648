// File: columns.h
//
// Columnar views the engine reads. Nothing here owns memory: each view points
// at caller-owned arrays (numpy buffers from Python, vectors in C++), which
// must outlive the call that reads them.
//
// Strings are dictionary-encoded: a StringColumn is an int32 code per row and
// a dictionary of distinct values. Tables may use different dictionaries; the
// engine joins them on the dictionary values, never on codes.
//
// Example:
//   gpucost::EncodedStrings ids = gpucost::EncodeStrings({"i-1", "i-1"});
//   gpucost::CostColumns costs{.resource_id = ids.view(), ...};
#ifndef GPUCOST_COLUMNS_H_
#define GPUCOST_COLUMNS_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "gpucost/model.h"
#include "gpucost/time.h"

namespace gpucost {

// Code of a missing (null) string. In a consumer column it means "no
// workload"; elsewhere it is an error.
inline constexpr int32_t kNullCode = -1;

struct StringColumn {
  std::span<const int32_t> codes;
  std::span<const std::string_view> dictionary;

  [[nodiscard]] size_t size() const { return codes.size(); }
};

// Owning dictionary encoding of a string column, for C++ callers and parsers.
struct EncodedStrings {
  std::vector<int32_t> codes;
  std::vector<std::string> values;
  std::vector<std::string_view> value_views;  // views of `values`

  [[nodiscard]] StringColumn view() const { return {codes, value_views}; }
};

// Encodes `values` in order of first appearance.
[[nodiscard]] EncodedStrings EncodeStrings(
    std::span<const std::string_view> values);
[[nodiscard]] EncodedStrings EncodeStrings(
    std::span<const std::string> values);

// The column's view when some row has a value; nullopt when every row is
// null (an optional column the engine then treats as absent).
[[nodiscard]] std::optional<StringColumn> ViewIfAny(const EncodedStrings& strings);

// Incremental dictionary encoder for parsers that see values one at a time.
class StringEncoder {
 public:
  int32_t Add(std::string_view value);
  void AddNull() { encoded_.codes.push_back(kNullCode); }
  // "" as null: a charge with no resource, a free device, a job without a user.
  void AddOrNull(std::string_view value) {
    if (value.empty()) {
      AddNull();
    } else {
      Add(value);
    }
  }
  [[nodiscard]] size_t size() const { return encoded_.codes.size(); }
  // Finishes the encoding; the encoder is empty afterwards.
  [[nodiscard]] EncodedStrings Finish();

 private:
  EncodedStrings encoded_;
  absl::flat_hash_map<std::string, int32_t> index_;
};

// SEMANTICS 1.1: cost lines. `list_cost`, `currency`, `primary` and
// `quantity_hours` are optional.
struct CostColumns {
  StringColumn resource_id;
  std::span<const int64_t> start;  // instant, in `time_unit`
  std::span<const int64_t> end;    // instant, exclusive
  std::span<const double> cost;
  std::optional<std::span<const double>> list_cost;
  TimeUnit time_unit = TimeUnit::kNanosecond;
  // ISO 4217 code of cost and list_cost; present: results are keyed by it.
  std::optional<StringColumn> currency;
  // Nonzero: the line bills the resource's time (its GPU-hours count).
  // Absent: every line is primary.
  std::optional<std::span<const uint8_t>> primary;
  // Instance-hours billed within the period; NaN or absent: all of it.
  std::optional<std::span<const double>> quantity_hours;
  // SEMANTICS 9: a CostDriver per line, as its uint8_t value; absent: every
  // line is kGpuTime.
  std::optional<std::span<const uint8_t>> driver;
  // SEMANTICS 9: the resource's region (null: not stated), matched to a
  // carbon intensity table's `region`. A resource's lines name one region.
  std::optional<StringColumn> region;
};

// SEMANTICS 1.2: one row per GPU device.
struct InventoryColumns {
  StringColumn resource_id;
  std::span<const int32_t> device;
  std::span<const double> mem_capacity;  // bytes
  // Embodied (scope 3) kg CO2e per GPU-hour of the device's node (>= 0; one
  // value per resource). Absent: no embodied_co2e_kg in the result.
  std::optional<std::span<const double>> embodied_kg_per_gpu_hour;
};

// SEMANTICS 1.3: usage samples. `duration` is optional (absent: every sample
// stands for the policy's interval).
struct SampleColumns {
  std::span<const int64_t> timestamp;  // instant, in `time_unit`
  StringColumn resource_id;
  std::span<const int32_t> device;
  StringColumn consumer;  // kNullCode or "" = no workload
  std::span<const double> share;
  std::span<const double> util;
  std::span<const double> mem_used;  // bytes
  std::optional<std::span<const int64_t>> duration;  // in `time_unit`
  TimeUnit time_unit = TimeUnit::kNanosecond;
  // SEMANTICS 9: the whole device's draw (W, >= 0; NaN: not measured).
  // Absent: no energy columns in the result.
  std::optional<std::span<const double>> power_w;

  [[nodiscard]] size_t size() const { return timestamp.size(); }

  // Rows [begin, begin + count), each column clipped at its own end (a
  // column of the wrong length stays wrong, for AddSamples to refuse): a
  // chunk to feed an Allocator. The dictionaries are shared.
  [[nodiscard]] SampleColumns Slice(size_t begin, size_t count) const {
    auto cut = [&](auto column) {
      const size_t from = std::min(begin, column.size());
      return column.subspan(from, std::min(count, column.size() - from));
    };
    SampleColumns out = *this;
    out.timestamp = cut(timestamp);
    out.resource_id.codes = cut(resource_id.codes);
    out.device = cut(device);
    out.consumer.codes = cut(consumer.codes);
    out.share = cut(share);
    out.util = cut(util);
    out.mem_used = cut(mem_used);
    if (duration) out.duration = cut(*duration);
    if (power_w) out.power_w = cut(*power_w);
    return out;
  }
};

// The owning columnar forms of the row types. The views they hand out point
// into them: keep the table alive while the engine reads it.
struct CostTable {
  EncodedStrings resource_id, currency;
  std::vector<int64_t> start, end;
  std::vector<double> cost, list_cost, quantity_hours;
  std::vector<uint8_t> primary;
  std::vector<Purchase> purchase;
  std::vector<ChargeCategory> category;
  std::vector<uint8_t> driver;  // CostDriver values

  [[nodiscard]] size_t size() const { return start.size(); }
  // The engine's view; `currency` is set only when some line names one,
  // `driver` only when some line is driven by energy.
  [[nodiscard]] CostColumns columns() const;
};

struct SampleTable {
  EncodedStrings resource_id, consumer;
  std::vector<int64_t> timestamp, duration;  // duration: empty when no sample has one
  std::vector<int32_t> device;
  std::vector<double> share, util, mem_used;
  std::vector<double> power_w;  // empty when no sample has power

  [[nodiscard]] size_t size() const { return timestamp.size(); }
  [[nodiscard]] SampleColumns columns() const;
};

[[nodiscard]] CostTable ToColumns(std::span<const CostLine> lines);
// Samples either all have a duration or none has: kInvalidArgument names the
// first sample that differs.
[[nodiscard]] absl::StatusOr<SampleTable> ToColumns(std::span<const UsageSample> samples);

// SEMANTICS 10: windows [start, end) in which a resource could not be used.
// Windows may overlap (their union counts) and may name resources the bill
// does not.
struct DowntimeColumns {
  StringColumn resource_id;
  std::span<const int64_t> start;  // instant, in `time_unit`
  std::span<const int64_t> end;    // exclusive
  TimeUnit time_unit = TimeUnit::kNanosecond;

  [[nodiscard]] size_t size() const { return start.size(); }
};

// SEMANTICS 9: grid carbon intensity (gCO2e/kWh) over windows [start, end);
// a sample is matched by its instant and, when the table has `region`, by
// its resource's region (CostColumns::region); rows without a region hold for
// resources whose region has no rows. A region's windows must not overlap;
// an instant no window covers has no intensity (the sample's CO2e is
// counted missing).
struct CarbonIntensityColumns {
  std::span<const int64_t> start;  // instant, in `time_unit`
  std::span<const int64_t> end;    // exclusive
  std::span<const double> g_per_kwh;
  TimeUnit time_unit = TimeUnit::kNanosecond;
  std::optional<StringColumn> region;

  [[nodiscard]] size_t size() const { return start.size(); }
};

// SEMANTICS 1.4: one row per consumer with any number of label columns.
struct LabelColumn {
  std::string_view name;
  StringColumn values;  // kNullCode = no value (reported as "__unlabelled__")
};
struct WorkloadColumns {
  StringColumn consumer;
  std::vector<LabelColumn> labels;
};

}  // namespace gpucost

#endif  // GPUCOST_COLUMNS_H_
