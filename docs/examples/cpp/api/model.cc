// gpucost/model.h by example: the domain types, the enums and their
// spellings (docs/examples/cpp/api/, run by ctest as cpp_example_model).
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

#include "example_check.h"
#include "gpucost/model.h"

int main() {
  // [CanonicalProviderName]
  // FOCUS ProviderName spellings become the canonical provider names; other
  // sellers keep their own.
  CHECK(gpucost::CanonicalProviderName("Amazon Web Services") == "aws");
  CHECK(gpucost::CanonicalProviderName("Microsoft") == "azure");
  CHECK(gpucost::CanonicalProviderName("Lambda") == "Lambda");
  // [CanonicalProviderName]

  // [InstanceType]
  // One catalog row (catalog.h reads them): a GpuModel, an InstanceType and a
  // Node of that type, the resource a bill names.
  gpucost::InstanceType p4d{.provider = "aws", .instance_type = "p4d.24xlarge", .gpu_model = "A100 40GB",
                            .gpus = 8, .gpu_memory_gib = 40, .vcpus = 96, .mig_capable = true};
  const gpucost::GpuModel gpu = p4d.gpu();
  CHECK((gpu == gpucost::GpuModel{.name = "A100 40GB", .memory_gib = 40, .mig_capable = true}));
  gpucost::Node node{.resource_id = "i-0abc", .name = "ip-10-0-1-17", .instance_type = p4d.instance_type,
                     .provider = gpucost::Provider::kAws, .gpus = p4d.gpus};
  CHECK(node.gpus == 8);
  // [InstanceType]

  // [MigProfile]
  // A MIG slice as a fraction of its GPU: 1g.10gb on an A100 80GB is 1/7 of
  // its compute and 1/8 of its memory. A MigPartition lists the MigSlices of
  // one GPU (CheckMigPartition in catalog.h checks that they fit).
  gpucost::MigProfile small{.gpu_model = "A100 80GB", .profile = "1g.10gb", .compute_slices = 1,
                            .compute_total = 7, .memory_slices = 1, .memory_total = 8, .memory_gib = 10};
  CHECK_NEAR(small.Share(gpucost::MigBasis::kCompute), 1.0 / 7);
  CHECK_NEAR(small.Share(gpucost::MigBasis::kMemory), 1.0 / 8);
  gpucost::MigPartition partition{.gpu_model = "A100 80GB",
                                  .slices = {gpucost::MigSlice{.device = 0, .instance = 1, .profile = "1g.10gb"},
                                             gpucost::MigSlice{.device = 0, .instance = 2, .profile = "3g.40gb"}}};
  CHECK(partition.slices.size() == 2);
  // [MigProfile]

  // [PurchaseTerms]
  // How time was bought: IsCommitment tells the commitment discounts, and
  // PurchaseTerms carries the price (commitment.h amortises it).
  CHECK(gpucost::IsCommitment(gpucost::Purchase::kSavingsPlan));
  CHECK(!gpucost::IsCommitment(gpucost::Purchase::kSpot));
  gpucost::PurchaseTerms ri{.purchase = gpucost::Purchase::kReserved, .term_years = 1,
                            .payment = gpucost::Payment::kAllUpfront, .hourly = 0, .upfront = 8760};
  CHECK(ri.payment == gpucost::Payment::kAllUpfront);
  // [PurchaseTerms]

  // [CostLine]
  // One bill line and one telemetry sample, as rows (columns.h's ToColumns
  // turns them into the engine's columns).
  const int64_t h10 = 10 * gpucost::kNanosPerHour;
  gpucost::CostLine line{.resource_id = "i-0abc", .start = h10, .end = h10 + gpucost::kNanosPerHour,
                         .cost = 32.77, .purchase = gpucost::Purchase::kSpot,
                         .category = gpucost::ChargeCategory::kUsage};
  gpucost::UsageSample sample{.timestamp = h10, .resource_id = "i-0abc", .device = 0,
                              .consumer = "train-7", .util = 0.9};
  CHECK(line.primary && std::isnan(line.quantity_hours));
  CHECK(sample.share == 1.0 && !sample.duration.has_value());
  // [CostLine]

  // [AllocationPolicy]
  // The policy: what a consumer pays for (Basis), where idle cost goes
  // (IdleMode), how results are grouped. kIdle and the other reserved names
  // are the consumers the engine writes itself.
  gpucost::AllocationPolicy policy;
  policy.basis = gpucost::Basis::kBlended;
  policy.idle = gpucost::IdleMode::kShare;
  policy.by = {"consumer", "period"};
  policy.freq = gpucost::PeriodFreq::kDay;
  CHECK(policy.alpha == 0.5 && gpucost::kIdle == "__idle__" && gpucost::kDown == "__down__");
  // [AllocationPolicy]

  // [ToString]
  // Every enum has one spelling: ToString writes it, Parse<Enum> reads it
  // (and the aliases), and names the expected values when it cannot.
  CHECK(gpucost::ToString(gpucost::Provider::kOnPrem) == "onprem");
  CHECK(gpucost::ToString(gpucost::MigBasis::kMemory) == "memory");
  CHECK(gpucost::ToString(gpucost::Purchase::kCommittedUse) == "cud");
  CHECK(gpucost::ToString(gpucost::Payment::kPartialUpfront) == "partial_upfront");
  CHECK(gpucost::ToString(gpucost::ChargeCategory::kTax) == "Tax");
  CHECK(gpucost::ToString(gpucost::Basis::kUsed) == "used");
  CHECK(gpucost::ToString(gpucost::IdleMode::kKeep) == "keep");
  CHECK(gpucost::ToString(gpucost::CostDriver::kEnergy) == "energy");
  // [ToString]

  // [ParsePurchase]
  CHECK(*gpucost::ParseProvider("Google Cloud") == gpucost::Provider::kGcp);
  CHECK(*gpucost::ParseMigBasis("compute") == gpucost::MigBasis::kCompute);
  CHECK(*gpucost::ParsePurchase("RI") == gpucost::Purchase::kReserved);
  CHECK(*gpucost::ParsePayment("all_upfront") == gpucost::Payment::kAllUpfront);
  CHECK(*gpucost::ParseChargeCategory("credit") == gpucost::ChargeCategory::kCredit);
  CHECK(*gpucost::ParseBasis("blended") == gpucost::Basis::kBlended);
  CHECK(*gpucost::ParseIdleMode("share") == gpucost::IdleMode::kShare);
  CHECK(*gpucost::ParseCostDriver("gpu_time") == gpucost::CostDriver::kGpuTime);
  absl::StatusOr<gpucost::Basis> bad = gpucost::ParseBasis("busy");
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  std::printf("%s\n", std::string(bad.status().message()).c_str());  // names "allocated", "used" or "blended"
  // [ParsePurchase]

  // [ModelEnumSpellings]
  // Every enum's spellings by name: what the Python enums are checked against.
  bool saw_purchase = false;
  for (const gpucost::EnumSpellings& e : gpucost::ModelEnumSpellings()) {
    if (e.name == "Purchase") saw_purchase = e.values.front() == "on_demand";
  }
  CHECK(saw_purchase);
  // [ModelEnumSpellings]
  return 0;
}
