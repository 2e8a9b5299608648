// gpucost/catalog.h by example: instance types, MIG profiles, own rows and
// the inventory (run by ctest as cpp_example_catalog).
#include <cstdio>
#include <string_view>
#include <vector>

#include "example_check.h"
#include "gpucost/catalog.h"

int main() {
  // [CanonicalGpuModel]
  // Driver and exporter spellings -> the catalog's.
  CHECK(gpucost::CanonicalGpuModel("NVIDIA A100-SXM4-80GB") == "A100 80GB");
  CHECK(gpucost::CanonicalGpuModel("Tesla T4") == "T4 16GB");
  // [CanonicalGpuModel]

  // [FindInstanceType]
  // The embedded catalog: exact name first, then any case.
  const gpucost::Catalog& catalog = gpucost::Catalog::Embedded();
  absl::StatusOr<const gpucost::InstanceType*> p4d = catalog.FindInstanceType("p4d.24xlarge");
  CHECK_OK(p4d);
  CHECK((*p4d)->gpus == 8 && (*p4d)->gpu_model == "A100 40GB");
  CHECK(catalog.FindInstanceType("no-such-type").status().code() == absl::StatusCode::kNotFound);
  CHECK(!catalog.instance_types().empty() && !catalog.mig_profiles().empty());
  // [FindInstanceType]

  // [MigShare]
  // MIG profiles by any model spelling, with or without the "MIG " prefix.
  absl::StatusOr<const gpucost::MigProfile*> profile = catalog.FindMigProfile("NVIDIA A100-SXM4-80GB", "MIG 3g.40gb");
  CHECK_OK(profile);
  CHECK((*profile)->compute_slices == 3);
  CHECK_NEAR(*catalog.MigShare("A100 80GB", "1g.10gb", gpucost::MigBasis::kCompute), 1.0 / 7);
  CHECK_NEAR(*catalog.MigShare("A100 80GB", "1g.10gb", gpucost::MigBasis::kMemory), 1.0 / 8);
  // [MigShare]

  // [FromCsv]
  // Own rows (on-prem hosts, negotiated prices) override embedded ones.
  gpucost::CatalogSources sources;
  sources.instance_types = "own_types.csv";  // named in errors
  absl::StatusOr<gpucost::Catalog> own = gpucost::Catalog::FromCsv(
      "provider,instance_type,gpu_model,gpus,gpu_memory_gib,on_demand_hourly\n"
      "onprem,dgx-a100,A100 80GB,8,80,\n"
      "aws,p4d.24xlarge,A100 40GB,8,40,21.96\n",
      "", sources);
  CHECK_OK(own);
  gpucost::Catalog merged = catalog.MergedWith(*own);
  CHECK((*merged.FindInstanceType("dgx-a100"))->gpus == 8);
  CHECK(*(*merged.FindInstanceType("p4d.24xlarge"))->on_demand_hourly == 21.96);
  absl::StatusOr<gpucost::Catalog> bad = gpucost::Catalog::FromCsv("provider,instance_type\naws,x\n", "", sources);
  CHECK(!bad.ok());
  std::printf("%s\n", std::string(bad.status().message()).c_str());  // names own_types.csv
  // [FromCsv]

  // [AddInstanceType]
  // One checked row at a time.
  CHECK_OK(merged.AddInstanceType({.provider = "other", .instance_type = "gpu-1x-h100", .gpu_model = "H100 80GB",
                                   .gpus = 1, .gpu_memory_gib = 80}));
  CHECK(!merged.AddInstanceType({.instance_type = "broken", .gpu_model = "H100 80GB", .gpus = 1}).ok());  // no memory
  CHECK_OK(merged.AddMigProfile({.gpu_model = "H100 80GB", .profile = "2g.20gb", .compute_slices = 2,
                                 .compute_total = 7, .memory_slices = 2, .memory_total = 8, .memory_gib = 20}));
  // [AddInstanceType]

  // [CheckMigPartition]
  // Slices must fit their GPU: 3g + 3g fit an A100, 3g + 3g + 3g do not.
  gpucost::MigPartition partition{.gpu_model = "A100 80GB",
                                  .slices = {{.device = 0, .instance = 1, .profile = "3g.40gb"},
                                             {.device = 0, .instance = 2, .profile = "3g.40gb"}}};
  CHECK_OK(gpucost::CheckMigPartition(partition, catalog));
  partition.slices.push_back({.device = 0, .instance = 3, .profile = "3g.40gb"});
  CHECK(!gpucost::CheckMigPartition(partition, catalog).ok());
  // [CheckMigPartition]

  // [BuildInventory]
  // One row per GPU of every resource, from the bill's resource and instance
  // type columns (repeats allowed); rows without a type skipped when asked.
  const std::vector<std::string_view> ids = {"i-1", "i-1", "vol-1"}, types = {"g5.12xlarge", "g5.12xlarge", ""};
  const gpucost::EncodedStrings resource = gpucost::EncodeStrings(std::span<const std::string_view>(ids));
  const gpucost::EncodedStrings type = gpucost::EncodeStrings(std::span<const std::string_view>(types));
  gpucost::InventoryOptions options;
  options.table = "bill";
  options.skip_missing_instance_type = true;
  absl::StatusOr<gpucost::Inventory> inventory =
      gpucost::BuildInventory(resource.view(), type.view(), catalog, {}, options);
  CHECK_OK(inventory);
  CHECK(inventory->size() == 4 && inventory->columns().device[3] == 3);  // g5.12xlarge: 4 x A10G
  const std::vector<uint8_t> include = {0, 0, 1};
  CHECK(gpucost::BuildInventory(resource.view(), type.view(), catalog, include, options)->size() == 0);
  // [BuildInventory]
  return 0;
}
