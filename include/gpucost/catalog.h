// File: catalog.h
//
// What capacity each cloud instance type has: the GPU model, how many GPU
// devices and how much memory each, and the MIG profiles of MIG-capable GPUs.
// The embedded catalog is compiled from data/catalog/*.csv (no file is read at
// run time); users merge their own rows over it (negotiated prices, on-prem
// hosts, instance types gpucost does not know yet).
//
// Example:
//   const gpucost::Catalog& catalog = gpucost::Catalog::Embedded();
//   absl::StatusOr<const gpucost::InstanceType*> p4d =
//       catalog.FindInstanceType("p4d.24xlarge");   // 8 x A100 40GB
//   absl::StatusOr<double> share =
//       catalog.MigShare("A100 80GB", "1g.10gb", gpucost::MigBasis::kCompute);  // 1/7
//
//   // Own rows override embedded ones with the same instance type:
//   absl::StatusOr<gpucost::Catalog> own = gpucost::Catalog::FromCsv(
//       "provider,instance_type,gpu_model,gpus,gpu_memory_gib\n"
//       "onprem,dgx-a100,A100 80GB,8,80\n", "");
//   gpucost::Catalog merged = catalog.MergedWith(*own);
#ifndef GPUCOST_CATALOG_H_
#define GPUCOST_CATALOG_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpucost/columns.h"
#include "gpucost/model.h"

namespace gpucost {

// The catalog's spelling of a GPU model name as drivers and exporters report
// it: "NVIDIA A100-SXM4-80GB" -> "A100 80GB", "NVIDIA H100 80GB HBM3" ->
// "H100 80GB", "Tesla T4" -> "T4 16GB", "NVIDIA H200" -> "H200 141GB".
// Names it cannot place come back trimmed but otherwise unchanged.
[[nodiscard]] std::string CanonicalGpuModel(std::string_view name);

// Names used in errors while parsing catalog CSV text.
struct CatalogSources {
  std::string instance_types = "instance_types.csv";
  std::string mig_profiles = "mig_profiles.csv";
  // Report errors as "row N" of a table (0-based data rows, as pandas counts)
  // instead of "line N" of a file: for tables serialized to CSV on the way in.
  bool table_rows = false;
};

class Catalog {
 public:
  // The catalog compiled into the library (data/catalog/*.csv).
  [[nodiscard]] static const Catalog& Embedded();

  // Parses catalog CSV text (either may be empty). Instance types need the
  // columns provider, instance_type, gpu_model, gpus and gpu_memory_gib;
  // gpu_fraction, vcpus, memory_gib, mig_capable, on_demand_hourly,
  // price_region, price_date and price_source are optional. MIG profiles need
  // every column of data/catalog/mig_profiles.csv. Other columns are ignored.
  // A later row replaces an earlier one with the same key.
  [[nodiscard]] static absl::StatusOr<Catalog> FromCsv(std::string_view instance_types_csv,
                                                       std::string_view mig_profiles_csv,
                                                       const CatalogSources& sources = {});

  // This catalog with `overrides`' rows replacing rows of the same key
  // (instance type; GPU model and profile) and the others added.
  [[nodiscard]] Catalog MergedWith(const Catalog& overrides) const;

  // Adds or replaces one row after checking it (gpus >= 0, memory > 0 when
  // there are GPUs, slices within their totals, ...).
  [[nodiscard]] absl::Status AddInstanceType(InstanceType row);
  [[nodiscard]] absl::Status AddMigProfile(MigProfile row);

  // Exact name first, then case-insensitively (Azure ids come in any case);
  // a GCP "n1-<shape>+<accelerator>x<count>" finds the "n1+..." row.
  // kNotFound names the instance type.
  [[nodiscard]] absl::StatusOr<const InstanceType*> FindInstanceType(
      std::string_view instance_type) const;

  // `gpu_model` may be any spelling CanonicalGpuModel understands; the
  // profile may carry the "MIG " prefix. kNotFound names both.
  [[nodiscard]] absl::StatusOr<const MigProfile*> FindMigProfile(std::string_view gpu_model,
                                                                  std::string_view profile) const;

  // compute_slices / compute_total or memory_slices / memory_total.
  [[nodiscard]] absl::StatusOr<double> MigShare(std::string_view gpu_model,
                                                std::string_view profile, MigBasis basis) const;

  [[nodiscard]] const std::vector<InstanceType>& instance_types() const { return instance_types_; }
  [[nodiscard]] const std::vector<MigProfile>& mig_profiles() const { return mig_profiles_; }

 private:
  void Reindex();

  std::vector<InstanceType> instance_types_;
  std::vector<MigProfile> mig_profiles_;
  absl::flat_hash_map<std::string, size_t> by_name_;        // exact
  absl::flat_hash_map<std::string, size_t> by_lower_name_;  // lower-cased
  absl::flat_hash_map<std::string, size_t> mig_by_key_;     // model + '\0' + profile
};

// Checks that the slices fit their GPU: each profile is known for the model,
// instance ids are distinct per device, and per device the compute and memory
// slices add up to no more than the GPU has. kInvalidArgument names the
// device and the slices.
[[nodiscard]] absl::Status CheckMigPartition(const MigPartition& partition, const Catalog& catalog);


// SEMANTICS 1.2: the inventory as owning columns.
struct Inventory {
  EncodedStrings resource_id;
  std::vector<int32_t> device;
  std::vector<double> mem_capacity;  // bytes

  [[nodiscard]] InventoryColumns columns() const {
    return {resource_id.view(), device, mem_capacity};
  }
  [[nodiscard]] size_t size() const { return device.size(); }
};

struct InventoryOptions {
  std::string table = "inventory";  // names the input in errors
  // Rows whose instance type is null (or "") are skipped instead of
  // rejected: cost lines of storage, networking, taxes carry none.
  bool skip_missing_instance_type = false;
  // Rows whose instance type has no GPUs yield no devices (and no error).
  // Unknown instance types are always an error.
};

// One inventory row per GPU device of every resource: `resource_id` and
// `instance_type` are parallel columns (repeats allowed, e.g. hourly cost
// lines). `include`, when not empty, selects the rows to use (non-zero =
// use). A resource seen with two different instance types, or an instance
// type the catalog does not know, is an error naming the row and the value.
[[nodiscard]] absl::StatusOr<Inventory> BuildInventory(const StringColumn& resource_id,
                                                       const StringColumn& instance_type,
                                                       const Catalog& catalog,
                                                       std::span<const uint8_t> include = {},
                                                       const InventoryOptions& options = {});

}  // namespace gpucost

#endif  // GPUCOST_CATALOG_H_
