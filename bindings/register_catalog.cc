// gpucost._core.Catalog and gpucost._core.build_inventory. Catalog tables are
// small (a hundred rows) and cross as lists; the inventory's inputs are
// dictionary-encoded columns from python/gpucost/frames.py.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpucost/catalog.h"
#include "numpy_views.h"
#include "status_to_python.h"

namespace gpucost::python {
namespace {

// One list per field: ToColumns(rows, {"name", &Row::name}, ...).
template <typename Row, typename T>
py::list ColumnOf(const std::vector<Row>& rows, T Row::*member) {
  py::list column;
  for (const Row& row : rows) column.append(py::cast(row.*member));  // optional -> None
  return column;
}

template <typename Row, typename... T>
py::dict ToColumns(const std::vector<Row>& rows, std::pair<const char*, T Row::*>... fields) {
  py::dict out;
  ((out[fields.first] = ColumnOf(rows, fields.second)), ...);
  return out;
}

py::dict InstanceTypeColumns(const Catalog& catalog) {
  using R = InstanceType;
  return ToColumns<R>(catalog.instance_types(), std::pair{"provider", &R::provider},
                      std::pair{"instance_type", &R::instance_type}, std::pair{"gpu_model", &R::gpu_model},
                      std::pair{"gpus", &R::gpus}, std::pair{"gpu_fraction", &R::gpu_fraction},
                      std::pair{"gpu_memory_gib", &R::gpu_memory_gib}, std::pair{"vcpus", &R::vcpus},
                      std::pair{"memory_gib", &R::memory_gib}, std::pair{"mig_capable", &R::mig_capable},
                      std::pair{"on_demand_hourly", &R::on_demand_hourly},
                      std::pair{"price_region", &R::price_region}, std::pair{"price_date", &R::price_date},
                      std::pair{"price_source", &R::price_source}, std::pair{"gpu_tdp_w", &R::gpu_tdp_w},
                      std::pair{"node_max_power_w", &R::node_max_power_w},
                      std::pair{"spec_source", &R::spec_source});
}

py::dict MigProfileColumns(const Catalog& catalog) {
  using R = MigProfile;
  return ToColumns<R>(catalog.mig_profiles(), std::pair{"gpu_model", &R::gpu_model},
                      std::pair{"profile", &R::profile}, std::pair{"compute_slices", &R::compute_slices},
                      std::pair{"compute_total", &R::compute_total},
                      std::pair{"memory_slices", &R::memory_slices}, std::pair{"memory_total", &R::memory_total},
                      std::pair{"memory_gib", &R::memory_gib});
}

}  // namespace

void RegisterCatalog(py::module_& m) {
  py::class_<Catalog>(m, "Catalog", "Instance types and MIG profiles (gpucost::Catalog).")
      .def_static(
          "embedded", []() { return Catalog::Embedded(); }, "A copy of the catalog compiled into the library.")
      .def_static(
          "from_csv",
          [](const std::string& instance_types_csv, const std::string& mig_profiles_csv,
             const std::string& instance_types_name, const std::string& mig_profiles_name, bool table_rows) {
            CatalogSources sources{instance_types_name, mig_profiles_name, table_rows};
            return ValueOrThrow(Catalog::FromCsv(instance_types_csv, mig_profiles_csv, sources));
          },
          py::arg("instance_types_csv"), py::arg("mig_profiles_csv"), py::arg("instance_types_name"),
          py::arg("mig_profiles_name"), py::arg("table_rows"))
      .def("merged_with", &Catalog::MergedWith, py::arg("overrides"))
      .def("instance_types", &InstanceTypeColumns)
      .def("mig_profiles", &MigProfileColumns)
      .def(
          "mig_share",
          [](const Catalog& c, const std::string& gpu_model, const std::string& profile, const std::string& basis) {
            return ValueOrThrow(c.MigShare(gpu_model, profile, ValueOrThrow(ParseMigBasis(basis))));
          },
          py::arg("gpu_model"), py::arg("profile"), py::arg("basis"));

  m.def("canonical_gpu_model", [](const std::string& name) { return CanonicalGpuModel(name); }, py::arg("name"));

  m.def(
      "build_inventory",
      [](const py::tuple& resource_id, const py::tuple& instance_type, const Catalog& catalog,
         const std::optional<CArray<uint8_t>>& include, const std::string& table, bool skip_missing) {
        StringColumnHolder r = ToStringColumn(resource_id);
        StringColumnHolder t = ToStringColumn(instance_type);
        InventoryOptions options;
        options.table = table;
        options.skip_missing_instance_type = skip_missing;
        std::span<const uint8_t> mask;
        if (include.has_value()) mask = Span(*include);
        absl::StatusOr<Inventory> result;
        {
          py::gil_scoped_release release;
          result = BuildInventory(r.view(), t.view(), catalog, mask, options);
        }
        Inventory inv = ValueOrThrow(std::move(result));
        py::dict out;
        out["resource_id"] = EncodedToPython(std::move(inv.resource_id));
        out["device"] = MoveToNumpy(std::move(inv.device));
        out["mem_capacity"] = MoveToNumpy(std::move(inv.mem_capacity));
        return out;
      },
      py::arg("resource_id"), py::arg("instance_type"), py::arg("catalog"), py::arg("include"), py::arg("table"),
      py::arg("skip_missing"));
}

}  // namespace gpucost::python
