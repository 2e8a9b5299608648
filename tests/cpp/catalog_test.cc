#include "gpucost/catalog.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"
#include "testing/tables.h"

namespace gpucost {
namespace {

using ::gpucost::testing::IsOk;
using ::gpucost::testing::kGiB;
using ::gpucost::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Catalog, EmbeddedInstanceTypesFromTheIssue) {
  const Catalog& catalog = Catalog::Embedded();
  GPUCOST_ASSERT_OK_AND_ASSIGN(const InstanceType* p4d, catalog.FindInstanceType("p4d.24xlarge"));
  EXPECT_EQ(p4d->provider, "aws");
  EXPECT_EQ(p4d->gpu_model, "A100 40GB");
  EXPECT_EQ(p4d->gpus, 8);
  EXPECT_EQ(p4d->gpu_memory_gib, 40);
  EXPECT_EQ(p4d->vcpus, 96);
  EXPECT_TRUE(p4d->mig_capable);
  ASSERT_TRUE(p4d->on_demand_hourly.has_value());
  EXPECT_DOUBLE_EQ(*p4d->on_demand_hourly, 32.77);
  EXPECT_EQ(p4d->price_region, "us-east-1");
  EXPECT_FALSE(p4d->price_source.empty());

  GPUCOST_ASSERT_OK_AND_ASSIGN(const InstanceType* g5, catalog.FindInstanceType("g5.xlarge"));
  EXPECT_EQ(g5->gpu_model, "A10G 24GB");
  EXPECT_DOUBLE_EQ(*g5->on_demand_hourly, 1.006);
  GPUCOST_ASSERT_OK_AND_ASSIGN(const InstanceType* g2, catalog.FindInstanceType("g2-standard-4"));
  EXPECT_EQ(g2->gpu_model, "L4 24GB");
  EXPECT_EQ(g2->gpus, 1);
  GPUCOST_ASSERT_OK_AND_ASSIGN(const InstanceType* t4, catalog.FindInstanceType("Standard_NC4as_T4_v3"));
  EXPECT_EQ(t4->gpu_model, "T4 16GB");
  EXPECT_DOUBLE_EQ(*t4->on_demand_hourly, 0.526);
  EXPECT_EQ(t4->price_region, "eastus");

  // Every family the issue lists is present.
  for (const char* name : {"p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p4de.24xlarge", "g6.xlarge",
                           "g6e.xlarge", "g4dn.xlarge", "p3.2xlarge", "a3-highgpu-8g", "a2-highgpu-1g",
                           "a2-ultragpu-1g", "n1+nvidia-tesla-t4x1", "Standard_ND96isr_H100_v5",
                           "Standard_ND96asr_v4", "Standard_ND96amsr_A100_v4", "Standard_NC24ads_A100_v4",
                           "Standard_NV36ads_A10_v5"}) {
    EXPECT_THAT(catalog.FindInstanceType(name), IsOk()) << name;
  }
  // Prices only where a source is recorded.
  for (const InstanceType& row : catalog.instance_types()) {
    if (row.on_demand_hourly.has_value()) {
      EXPECT_FALSE(row.price_source.empty()) << row.instance_type;
      EXPECT_FALSE(row.price_region.empty()) << row.instance_type;
      EXPECT_FALSE(row.price_date.empty()) << row.instance_type;
    }
  }
}

TEST(Catalog, LookupsAreForgivingAboutSpelling) {
  const Catalog& catalog = Catalog::Embedded();
  GPUCOST_ASSERT_OK_AND_ASSIGN(const InstanceType* nd, catalog.FindInstanceType("standard_nd96asr_v4"));
  EXPECT_EQ(nd->instance_type, "Standard_ND96asr_v4");
  GPUCOST_ASSERT_OK_AND_ASSIGN(const InstanceType* n1,
                               catalog.FindInstanceType("n1-standard-8+nvidia-tesla-t4x2"));
  EXPECT_EQ(n1->gpus, 2);
  EXPECT_THAT(catalog.FindInstanceType("p9.huge"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("unknown instance type 'p9.huge'")));
}

TEST(Catalog, MigSharesFromAnchors) {
  const Catalog& catalog = Catalog::Embedded();
  GPUCOST_ASSERT_OK_AND_ASSIGN(double compute, catalog.MigShare("A100 80GB", "1g.10gb", MigBasis::kCompute));
  EXPECT_DOUBLE_EQ(compute, 1.0 / 7);
  GPUCOST_ASSERT_OK_AND_ASSIGN(double memory, catalog.MigShare("A100 80GB", "1g.10gb", MigBasis::kMemory));
  EXPECT_DOUBLE_EQ(memory, 1.0 / 8);
  GPUCOST_ASSERT_OK_AND_ASSIGN(double three, catalog.MigShare("NVIDIA A100-SXM4-40GB", "MIG 3g.20gb",
                                                              MigBasis::kMemory));
  EXPECT_DOUBLE_EQ(three, 4.0 / 8);
  GPUCOST_ASSERT_OK_AND_ASSIGN(const MigProfile* a30, catalog.FindMigProfile("NVIDIA A30", "1g.6gb"));
  EXPECT_EQ(a30->compute_total, 4);
  EXPECT_EQ(a30->memory_total, 4);
  GPUCOST_ASSERT_OK_AND_ASSIGN(const MigProfile* h100, catalog.FindMigProfile("NVIDIA H100 80GB HBM3", "7g.80gb"));
  EXPECT_EQ(h100->compute_slices, 7);
  GPUCOST_ASSERT_OK_AND_ASSIGN(const MigProfile* h200, catalog.FindMigProfile("NVIDIA H200", "3g.71gb"));
  EXPECT_EQ(h200->memory_slices, 4);
  EXPECT_THAT(catalog.FindMigProfile("A100 80GB", "1g.5gb"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("unknown MIG profile '1g.5gb'")));
  EXPECT_THAT(ParseMigBasis("sm"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'basis'")));
}

TEST(CanonicalGpuModel, DriverSpellings) {
  EXPECT_EQ(CanonicalGpuModel("NVIDIA A100-SXM4-80GB"), "A100 80GB");
  EXPECT_EQ(CanonicalGpuModel("NVIDIA A100-PCIE-40GB"), "A100 40GB");
  EXPECT_EQ(CanonicalGpuModel("NVIDIA H100 80GB HBM3"), "H100 80GB");
  EXPECT_EQ(CanonicalGpuModel("Tesla T4"), "T4 16GB");
  EXPECT_EQ(CanonicalGpuModel("NVIDIA A10G"), "A10G 24GB");
  EXPECT_EQ(CanonicalGpuModel("nvidia-l4"), "L4 24GB");
  EXPECT_EQ(CanonicalGpuModel("Tesla V100-SXM2-32GB"), "V100 32GB");
  EXPECT_EQ(CanonicalGpuModel("NVIDIA L40S"), "L40S 48GB");
  EXPECT_EQ(CanonicalGpuModel("A100"), "A100");  // ambiguous: left as is
  EXPECT_EQ(CanonicalGpuModel("  Gaudi 2 "), "Gaudi 2");
}

TEST(Catalog, UserRowsOverrideAndExtend) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(
      Catalog own, Catalog::FromCsv("provider,instance_type,gpu_model,gpus,gpu_memory_gib,on_demand_hourly,extra\n"
                                    "aws,p4d.24xlarge,A100 40GB,8,40,21.96,x\n"
                                    "onprem,dgx-a100,NVIDIA A100-SXM4-80GB,8,80,,y\n",
                                    "gpu_model,profile,compute_slices,compute_total,memory_slices,"
                                    "memory_total,memory_gib\n"
                                    "L40S,4g.24gb,4,4,2,4,24\n"));
  Catalog merged = Catalog::Embedded().MergedWith(own);
  GPUCOST_ASSERT_OK_AND_ASSIGN(const InstanceType* p4d, merged.FindInstanceType("p4d.24xlarge"));
  EXPECT_DOUBLE_EQ(*p4d->on_demand_hourly, 21.96);
  GPUCOST_ASSERT_OK_AND_ASSIGN(const InstanceType* dgx, merged.FindInstanceType("dgx-a100"));
  EXPECT_EQ(dgx->gpu_model, "A100 80GB");
  EXPECT_FALSE(dgx->on_demand_hourly.has_value());
  EXPECT_EQ(merged.instance_types().size(), Catalog::Embedded().instance_types().size() + 1);
  EXPECT_THAT(merged.MigShare("L40S 48GB", "4g.24gb", MigBasis::kMemory), IsOk());
  // The embedded catalog itself is untouched.
  EXPECT_DOUBLE_EQ(*Catalog::Embedded().FindInstanceType("p4d.24xlarge").value()->on_demand_hourly, 32.77);
}

TEST(Catalog, BadRowsNameLineAndColumn) {
  EXPECT_THAT(Catalog::FromCsv("provider,instance_type,gpu_model,gpus,gpu_memory_gib\n"
                               "aws,x1,A100 40GB,eight,40\n", ""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "instance_types.csv: line 2, column 'gpus': 'eight' is not a number"));
  EXPECT_THAT(Catalog::FromCsv("provider,instance_type,gpu_model,gpus\naws,x1,A100,1\n", ""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("missing required column 'gpu_memory_gib'")));
  EXPECT_THAT(Catalog::FromCsv("provider,instance_type,gpu_model,gpus,gpu_memory_gib\n"
                               "aws,x1,A100 40GB,2,0\n", "", {"own", "own_mig", true}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "own: row 0, column 'gpu_memory_gib': 0 is not a positive size"));
  EXPECT_THAT(Catalog::FromCsv("", "gpu_model,profile,compute_slices,compute_total,memory_slices,memory_total,"
                                   "memory_gib\nA30,9g.1gb,9,4,1,4,6\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "mig_profiles.csv: line 2, column 'compute_slices': 9 is outside 1..4"));
}

TEST(BuildInventory, OneRowPerDeviceFromHourlyLines) {
  const std::vector<std::string> ids = {"i-1", "i-1", "vol-1", "i-2", "i-1"};
  const std::vector<std::string> types = {"p4d.24xlarge", "p4d.24xlarge", "", "g5.xlarge", "p4d.24xlarge"};
  EncodedStrings r = EncodeStrings(ids);
  EncodedStrings t = EncodeStrings(types);
  InventoryOptions options;
  options.skip_missing_instance_type = true;
  GPUCOST_ASSERT_OK_AND_ASSIGN(Inventory inv, BuildInventory(r.view(), t.view(), Catalog::Embedded(), {}, options));
  ASSERT_EQ(inv.size(), 9u);
  EXPECT_EQ(inv.resource_id.values[inv.resource_id.codes[0]], "i-1");
  EXPECT_EQ(inv.device[7], 7);
  EXPECT_EQ(inv.mem_capacity[0], 40 * kGiB);
  EXPECT_EQ(inv.resource_id.values[inv.resource_id.codes[8]], "i-2");
  EXPECT_EQ(inv.mem_capacity[8], 24 * kGiB);

  // Without skipping, the missing instance type is an error.
  EXPECT_THAT(BuildInventory(r.view(), t.view(), Catalog::Embedded()),
              StatusIs(absl::StatusCode::kInvalidArgument, "inventory: row 2, column 'instance_type': is missing"));
  // `include` selects rows.
  const std::vector<uint8_t> include = {1, 1, 0, 0, 1};
  GPUCOST_ASSERT_OK_AND_ASSIGN(Inventory only_i1, BuildInventory(r.view(), t.view(), Catalog::Embedded(), include));
  EXPECT_EQ(only_i1.size(), 8u);
}

TEST(BuildInventory, UnknownAndConflictingTypes) {
  EncodedStrings r = EncodeStrings(std::vector<std::string>{"i-1", "i-2"});
  EncodedStrings t = EncodeStrings(std::vector<std::string>{"g5.xlarge", "p9.huge"});
  EXPECT_THAT(BuildInventory(r.view(), t.view(), Catalog::Embedded()),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("inventory: row 1, column 'instance_type': unknown instance type 'p9.huge'")));
  EncodedStrings same = EncodeStrings(std::vector<std::string>{"i-1", "i-1"});
  EncodedStrings two = EncodeStrings(std::vector<std::string>{"g5.xlarge", "g6.xlarge"});
  EXPECT_THAT(BuildInventory(same.view(), two.view(), Catalog::Embedded()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("row 1, column 'instance_type': resource 'i-1' is 'g6.xlarge' here but "
                                 "'g5.xlarge' on row 0")));
}

}  // namespace
}  // namespace gpucost
