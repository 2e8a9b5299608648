// gpucost._core.owned_cost_lines: owned hardware as cost lines
// (include/gpucost/owned.h). The node classes arrive as dicts of plain values
// checked by python/gpucost/owned.py, the samples as the allocator's dict of
// numpy arrays; the lines leave as numpy arrays. Registration only.
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpucost/owned.h"
#include "numpy_views.h"
#include "status_to_python.h"
#include "tables.h"

namespace gpucost::python {
namespace {

template <typename T>
T Get(const py::dict& d, const char* key, T fallback) {
  return d.contains(key) && !d[key].is_none() ? d[key].cast<T>() : fallback;
}

OwnedNodeClass ToClass(const py::dict& d) {
  OwnedNodeClass c;
  c.name = d["name"].cast<std::string>();
  c.gpus = Get<int>(d, "gpus", 0);
  c.price = Get<double>(d, "price", 0);
  c.in_service = Get<int64_t>(d, "in_service", kMissingInstant);
  c.life_years = Get<int>(d, "life_years", 0);
  c.residual = Get<double>(d, "residual", 0);
  c.depreciation_schedule = Get<std::vector<double>>(d, "depreciation_schedule", {});
  c.support_per_year = Get<double>(d, "support_per_year", 0);
  c.facility_per_kw_month = Get<double>(d, "facility_per_kw_month", 0);
  c.facility_kw = Get<double>(d, "facility_kw", 0);
  c.facility_per_rack_month = Get<double>(d, "facility_per_rack_month", 0);
  c.rack_share = Get<double>(d, "rack_share", 1);
  c.max_power_w = Get<double>(d, "max_power_w", 0);
  c.fixed_power_w = Get<double>(d, "fixed_power_w", std::numeric_limits<double>::quiet_NaN());
  c.gpu_tdp_w = Get<double>(d, "gpu_tdp_w", 0);
  c.base_power_w = Get<double>(d, "base_power_w", 0);
  for (const auto& [util, fraction] : Get<std::vector<std::pair<double, double>>>(d, "power_curve", {})) {
    c.power_curve.push_back({util, fraction});
  }
  return c;
}

}  // namespace

void RegisterOwned(py::module_& m) {
  m.def(
      "owned_cost_lines",
      [](const py::list& classes, const std::vector<std::string>& node_ids, const std::vector<std::string>& node_classes,
         const std::vector<int64_t>& node_in_service, double pue, double flat_per_kwh,
         const std::vector<double>& by_hour, const std::vector<int64_t>& series_start,
         const std::vector<int64_t>& series_end, const std::vector<double>& series_per_kwh,
         double operations_per_month, const std::string& currency, int64_t start_ns, int64_t end_ns, bool daily,
         std::optional<double> interval, const std::optional<py::dict>& usage) {
        OwnedCluster cluster;
        for (const py::handle c : classes) cluster.classes.push_back(ToClass(c.cast<py::dict>()));
        for (size_t i = 0; i < node_ids.size(); ++i) {
          cluster.nodes.push_back({node_ids[i], node_classes[i], node_in_service[i]});
        }
        cluster.pue = pue;
        cluster.tariff.flat_per_kwh = flat_per_kwh;
        cluster.tariff.by_hour = by_hour;
        for (size_t i = 0; i < series_start.size(); ++i) {
          cluster.tariff.series.push_back({series_start[i], series_end[i], series_per_kwh[i]});
        }
        cluster.operations_per_month = operations_per_month;
        cluster.currency = currency;
        const OwnedOptions options{.start = start_ns, .end = end_ns, .freq = daily ? PeriodFreq::kDay : PeriodFreq::kHour,
                                   .interval_seconds = interval};
        std::optional<SampleHolder> samples;
        if (usage) samples.emplace(*usage);
        absl::StatusOr<OwnedCostTable> result;
        {
          py::gil_scoped_release release;
          const std::optional<SampleColumns> view = samples ? std::optional(samples->view()) : std::nullopt;
          result = OwnedCostLines(cluster, options, view ? &*view : nullptr);
        }
        OwnedCostTable t = ValueOrThrow(std::move(result));
        std::vector<uint8_t> component(t.component.size());
        for (size_t i = 0; i < component.size(); ++i) component[i] = static_cast<uint8_t>(t.component[i]);
        py::list component_names;
        for (const OwnedComponent c : {OwnedComponent::kCapex, OwnedComponent::kPower, OwnedComponent::kFacility,
                                       OwnedComponent::kSupport, OwnedComponent::kOperations}) {
          component_names.append(py::str(std::string(ToString(c))));
        }
        py::dict out;
        out["resource_id"] = EncodedToPython(std::move(t.lines.resource_id));
        out["start"] = MoveToNumpy(std::move(t.lines.start));
        out["end"] = MoveToNumpy(std::move(t.lines.end));
        out["cost"] = MoveToNumpy(std::move(t.lines.cost));
        out["primary"] = MoveToNumpy(std::move(t.lines.primary));
        out["driver"] = MoveToNumpy(std::move(t.lines.driver));
        out["component"] = MoveToNumpy(std::move(component));
        out["component_names"] = component_names;
        out["energy_kwh"] = MoveToNumpy(std::move(t.energy_kwh));
        out["energy_estimated"] = MoveToNumpy(std::move(t.energy_estimated));
        return out;
      },
      py::arg("classes"), py::arg("node_ids"), py::arg("node_classes"), py::arg("node_in_service"), py::arg("pue"),
      py::arg("flat_per_kwh"), py::arg("by_hour"), py::arg("series_start"), py::arg("series_end"),
      py::arg("series_per_kwh"), py::arg("operations_per_month"), py::arg("currency"), py::arg("start_ns"),
      py::arg("end_ns"), py::arg("daily"), py::arg("interval"), py::arg("usage"),
      R"pbdoc(Cost lines of owned nodes: capex, power, facility, support, operations.)pbdoc");
}

}  // namespace gpucost::python
