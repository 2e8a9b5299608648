// Engine column views over the dicts of numpy arrays that
// python/gpucost/frames.py builds: each holder keeps the arrays alive and
// hands out the views, without copying arrays of the engine's dtypes.
#ifndef GPUCOST_BINDINGS_TABLES_H_
#define GPUCOST_BINDINGS_TABLES_H_

#include <optional>
#include <string>

#include "gpucost/columns.h"
#include "gpucost/time.h"
#include "numpy_views.h"
#include "status_to_python.h"

namespace gpucost::python {

inline TimeUnit UnitOf(const py::dict& table) {
  if (!table.contains("time_unit")) return TimeUnit::kNanosecond;
  return ValueOrThrow(ParseTimeUnit(table["time_unit"].cast<std::string>()));
}

struct CostHolder {
  StringColumnHolder resource_id;
  CArray<int64_t> start, end;
  CArray<double> cost;
  std::optional<CArray<double>> list_cost;
  TimeUnit unit;
  std::optional<StringColumnHolder> currency;
  std::optional<CArray<uint8_t>> primary;
  std::optional<CArray<double>> quantity_hours;
  std::optional<CArray<uint8_t>> driver;  // CostDriver values
  std::optional<StringColumnHolder> region;

  explicit CostHolder(const py::dict& t)
      : resource_id(ToStringColumn(t["resource_id"])),
        start(RequiredArray<int64_t>(t, "start")),
        end(RequiredArray<int64_t>(t, "end")),
        cost(RequiredArray<double>(t, "cost")),
        list_cost(OptionalArray<double>(t, "list_cost")),
        unit(UnitOf(t)),
        primary(OptionalArray<uint8_t>(t, "primary")),
        quantity_hours(OptionalArray<double>(t, "quantity_hours")),
        driver(OptionalArray<uint8_t>(t, "driver")) {
    if (t.contains("currency") && !t["currency"].is_none()) currency = ToStringColumn(t["currency"]);
    if (t.contains("region") && !t["region"].is_none()) region = ToStringColumn(t["region"]);
  }
  [[nodiscard]] CostColumns view() const {
    CostColumns out{resource_id.view(), Span(start), Span(end), Span(cost), OptionalSpan(list_cost), unit};
    if (currency) out.currency = currency->view();
    out.primary = OptionalSpan(primary);
    out.quantity_hours = OptionalSpan(quantity_hours);
    out.driver = OptionalSpan(driver);
    if (region) out.region = region->view();
    return out;
  }
};

struct InventoryHolder {
  StringColumnHolder resource_id;
  CArray<int32_t> device;
  CArray<double> mem_capacity;
  std::optional<CArray<double>> embodied_kg_per_gpu_hour;

  explicit InventoryHolder(const py::dict& t)
      : resource_id(ToStringColumn(t["resource_id"])),
        device(RequiredArray<int32_t>(t, "device")),
        mem_capacity(RequiredArray<double>(t, "mem_capacity")),
        embodied_kg_per_gpu_hour(OptionalArray<double>(t, "embodied_kg_per_gpu_hour")) {}
  [[nodiscard]] InventoryColumns view() const {
    InventoryColumns out{resource_id.view(), Span(device), Span(mem_capacity)};
    out.embodied_kg_per_gpu_hour = OptionalSpan(embodied_kg_per_gpu_hour);
    return out;
  }
};

// SEMANTICS 10: resource_id, start, end.
struct DowntimeHolder {
  StringColumnHolder resource_id;
  CArray<int64_t> start, end;
  TimeUnit unit;

  explicit DowntimeHolder(const py::dict& t)
      : resource_id(ToStringColumn(t["resource_id"])),
        start(RequiredArray<int64_t>(t, "start")),
        end(RequiredArray<int64_t>(t, "end")),
        unit(UnitOf(t)) {}
  [[nodiscard]] DowntimeColumns view() const { return {resource_id.view(), Span(start), Span(end), unit}; }
};

struct CarbonHolder {
  CArray<int64_t> start, end;
  CArray<double> g_per_kwh;
  TimeUnit unit;
  std::optional<StringColumnHolder> region;

  explicit CarbonHolder(const py::dict& t)
      : start(RequiredArray<int64_t>(t, "start")),
        end(RequiredArray<int64_t>(t, "end")),
        g_per_kwh(RequiredArray<double>(t, "g_per_kwh")),
        unit(UnitOf(t)) {
    if (t.contains("region") && !t["region"].is_none()) region = ToStringColumn(t["region"]);
  }
  [[nodiscard]] CarbonIntensityColumns view() const {
    CarbonIntensityColumns out{Span(start), Span(end), Span(g_per_kwh), unit};
    if (region) out.region = region->view();
    return out;
  }
};

struct SampleHolder {
  CArray<int64_t> timestamp;
  StringColumnHolder resource_id;
  CArray<int32_t> device;
  StringColumnHolder consumer;
  CArray<double> share, util, mem_used;
  std::optional<CArray<int64_t>> duration;
  TimeUnit unit;
  std::optional<CArray<double>> power_w;

  explicit SampleHolder(const py::dict& t)
      : timestamp(RequiredArray<int64_t>(t, "timestamp")),
        resource_id(ToStringColumn(t["resource_id"])),
        device(RequiredArray<int32_t>(t, "device")),
        consumer(ToStringColumn(t["consumer"])),
        share(RequiredArray<double>(t, "share")),
        util(RequiredArray<double>(t, "util")),
        mem_used(RequiredArray<double>(t, "mem_used")),
        duration(OptionalArray<int64_t>(t, "duration")),
        unit(UnitOf(t)),
        power_w(OptionalArray<double>(t, "power_w")) {}
  [[nodiscard]] SampleColumns view() const {
    return {Span(timestamp), resource_id.view(), Span(device), consumer.view(), Span(share),
            Span(util),      Span(mem_used),     OptionalSpan(duration), unit, OptionalSpan(power_w)};
  }
};

}  // namespace gpucost::python

#endif  // GPUCOST_BINDINGS_TABLES_H_
