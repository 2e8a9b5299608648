// FOCUS 1.0-1.3 (FinOps Open Cost and Usage Specification) -> cost lines.
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "billing_internal.h"

namespace gpucost::io::internal {
namespace {

enum Field {
  kStart, kEnd, kBilled, kEffective, kList, kResourceId, kResourceName, kProvider, kAccount, kRegion,
  kService, kSku, kChargeCategory, kPricingCategory, kCommitmentId, kCommitmentType, kCommitmentStatus, kCurrency, kTags,
  kSkuPriceDetails, kUsageType, kSkuDetails, kConsumedQuantity, kConsumedUnit, kPricingCurrency,
  kChargeDescription, kSkuMeter, kSkuDescription, kSystemLabels, kMeterName, kMeterCategory, kAllocatedMethod, kCount,
};

constexpr ColumnSpec kColumns[] = {
    {kStart, {"ChargePeriodStart"}},
    {kEnd, {"ChargePeriodEnd"}},
    {kBilled, {"BilledCost"}},
    {kEffective, {"EffectiveCost"}},
    {kList, {"ListCost"}},
    {kResourceId, {"ResourceId"}},
    {kResourceName, {"ResourceName"}},
    // 1.3 splits ProviderName into ServiceProviderName and HostProviderName.
    {kProvider, {"ProviderName", "ServiceProviderName", "HostProviderName", "PublisherName"}},
    {kAccount, {"SubAccountId", "BillingAccountId"}},
    {kRegion, {"RegionId", "RegionName", "Region"}},
    {kService, {"ServiceName"}},
    {kSku, {"SkuId", "SkuPriceId"}},
    {kChargeCategory, {"ChargeCategory"}},
    {kPricingCategory, {"PricingCategory"}},
    {kCommitmentId, {"CommitmentDiscountId"}},
    {kCommitmentType, {"CommitmentDiscountType"}},
    {kCommitmentStatus, {"CommitmentDiscountStatus"}},
    {kCurrency, {"BillingCurrency"}},
    {kTags, {"Tags"}},
    {kSkuPriceDetails, {"SkuPriceDetails"}},
    // Provider columns: AWS's usage type, Azure's SKU details.
    {kUsageType, {"x_UsageType", "x_usage_type"}},
    {kSkuDetails, {"x_SkuDetails"}},
    {kConsumedQuantity, {"ConsumedQuantity", "UsageQuantity"}},
    {kConsumedUnit, {"ConsumedUnit", "UsageUnit"}},
    {kPricingCurrency, {"PricingCurrency"}},
    // What GCP's FOCUS view says of a line: the SKU description ("Nvidia
    // Tesla A100 GPU running in Americas") and the VM's system labels.
    {kChargeDescription, {"ChargeDescription"}},
    {kSkuMeter, {"SkuMeter"}},
    {kSkuDescription, {"x_SkuDescription"}},
    {kSystemLabels, {"x_SystemLabels", "x_system_labels"}},
    {kMeterName, {"x_SkuMeterName"}},  // Azure; FOCUS's own SkuMeter is kSkuMeter
    {kMeterCategory, {"x_SkuMeterCategory"}},
    // FOCUS 1.3 split cost allocation: set on allocated charges only.
    {kAllocatedMethod, {"AllocatedMethodId"}},
};

// The commitment a FOCUS line uses or buys: CommitmentDiscountType as the
// providers write it ("Reserved Instance", "Savings Plan", "Reservation",
// "Committed Use Discount"), else what its id names (an AWS RI or savings
// plan ARN, an Azure reservation order), else an untyped commitment.
Purchase CommitmentKind(std::string_view type, std::string_view id) {
  if (ContainsIgnoreCase(type, "savings")) return Purchase::kSavingsPlan;
  if (ContainsIgnoreCase(type, "reserv")) return Purchase::kReserved;
  if (ContainsIgnoreCase(type, "committed") || ContainsIgnoreCase(type, "commitment")) {
    return Purchase::kCommittedUse;
  }
  if (ContainsIgnoreCase(id, "savingsplan")) return Purchase::kSavingsPlan;  // AWS ARN, Azure order
  if (absl::StrContains(ToAbsl(id), ":reserved-instances/") || ContainsIgnoreCase(id, "/reservationorders/")) {
    return Purchase::kReserved;
  }
  if (ContainsIgnoreCase(id, "/commitments/")) return Purchase::kCommittedUse;
  return Purchase::kCommitment;
}

int AmountField(CostAmount amount) {
  switch (amount) {
    case CostAmount::kBilled: return kBilled;
    case CostAmount::kList: return kList;
    case CostAmount::kEffective: break;
  }
  return kEffective;
}

}  // namespace

std::span<const ColumnSpec> FocusFormat::Columns() { return kColumns; }
int FocusFormat::FieldCount() { return kCount; }
std::vector<int> FocusFormat::Required(const BillingOptions& options) {
  return {kStart, kEnd, AmountField(options.amount)};
}
std::optional<std::string> FocusFormat::TagColumnKey(std::string_view) { return std::nullopt; }
absl::Status FocusFormat::CheckOptions(const BillingOptions&) { return absl::OkStatus(); }
std::vector<int> FocusFormat::IdentityFields() { return {}; }

template <typename Row>
absl::Status FocusFormat::Normalise(const Row& row, LineBuilder& out) {
  const Layout& layout = row.layout();
  const CostAmount amount = out.options().amount;
  Line line;
  GPUCOST_RETURN_IF_ERROR(ReadPeriod(row, kStart, kEnd, &line.start, &line.end, out));
  GPUCOST_RETURN_IF_ERROR(ReadAmount(row, kBilled, amount == CostAmount::kBilled, kNaN, &line.billed));
  GPUCOST_RETURN_IF_ERROR(ReadAmount(row, kEffective, amount == CostAmount::kEffective, kNaN, &line.effective));
  GPUCOST_RETURN_IF_ERROR(ReadAmount(row, kList, false, kNaN, &line.list));
  line.resource_id = row.Text(layout.col(kResourceId));
  line.resource_name = row.Text(layout.col(kResourceName));
  line.provider = CanonicalProviderName(row.Text(layout.col(kProvider)));
  line.account = row.Text(layout.col(kAccount));
  line.region = row.Text(layout.col(kRegion));
  line.service = row.Text(layout.col(kService));
  line.sku = row.Text(layout.col(kSku));
  line.charge_category = row.Text(layout.col(kChargeCategory));
  line.commitment_id = row.Text(layout.col(kCommitmentId));
  line.commitment_status = row.Text(layout.col(kCommitmentStatus));
  line.currency = row.Text(layout.col(kCurrency));
  line.pricing_currency = row.Text(layout.col(kPricingCurrency));
  // Azure's ARM ids are case-insensitive: lower case, as the cost-details
  // reader and read_nodes write them.
  line.lowercase_resource = line.provider == ToString(Provider::kAzure) || absl::StartsWithIgnoreCase(ToAbsl(line.resource_id), "/subscriptions/");
  // Azure's FOCUS export bills a scale set's VMs on the scale set; its
  // x_SkuDetails (cost details' AdditionalInfo) names the instance.
  if (line.lowercase_resource) {
    GPUCOST_RETURN_IF_ERROR(AzureScaleSetInstance(row, layout.col(kSkuDetails), out, &line.resource_id));
  }
  // AWS names an instance by ARN; the CUR, nodes and DCGM by its id.
  if (const std::string_view id = Ec2InstanceId(line.resource_id); !id.empty()) line.resource_id = id;
  // GCP names a VM by its global name (the numeric id) and ResourceName.
  std::string canonical;
  if (GcpInstance(line.resource_id, line.resource_name, &canonical, &line.instance_id)) {
    line.resource_by_instance_id = line.resource_name.empty() && !line.instance_id.empty();
    line.resource_id = out.Stable(canonical);
  }

  // Purchases of a commitment, its covered usage and its unused rows all
  // carry the commitment's id; Dynamic pricing is spot / low priority.
  const std::string_view category = row.Text(layout.col(kPricingCategory));
  Purchase purchase = Purchase::kOther;
  if (!line.commitment_id.empty() || absl::EqualsIgnoreCase(ToAbsl(category), "Committed")) {
    purchase = CommitmentKind(row.Text(layout.col(kCommitmentType)), line.commitment_id);
  } else if (absl::EqualsIgnoreCase(ToAbsl(category), "Dynamic")) {
    purchase = Purchase::kSpot;
  } else if (absl::EqualsIgnoreCase(ToAbsl(category), "Standard")) {
    purchase = Purchase::kOnDemand;
  }
  line.pricing = ToString(purchase);

  // Instance type: FOCUS 1.2 SkuPriceDetails.InstanceType, else the
  // provider's own columns (AWS usage type, Azure SKU details).
  std::string_view instance;
  GPUCOST_RETURN_IF_ERROR(CellKeyValue(row, layout.col(kSkuPriceDetails), "InstanceType", out, &instance));
  if (instance.empty()) {
    GPUCOST_RETURN_IF_ERROR(CellKeyValue(row, layout.col(kSkuPriceDetails), "x_InstanceType", out, &instance));
  }
  if (instance.empty()) instance = InstanceTypeFromUsageType(row.Text(layout.col(kUsageType)));
  if (instance.empty()) {
    GPUCOST_RETURN_IF_ERROR(CellKeyValue(row, layout.col(kSkuDetails), "ServiceType", out, &instance));
  }
  if (instance.empty()) {  // GCP: the VM's machine type ("a2-highgpu-1g")
    GPUCOST_RETURN_IF_ERROR(
        CellKeyValue(row, layout.col(kSystemLabels), "compute.googleapis.com/machine_spec", out, &instance));
  }
  // Azure without SKU details: the VM meter name as a size, as the
  // cost-details reader does, when the catalog knows it.
  std::string meter_size;
  const int meter = row.IsNull(layout.col(kMeterName)) ? layout.col(kSkuMeter) : layout.col(kMeterName);
  if (instance.empty() && line.provider == ToString(Provider::kAzure) && !row.IsNull(meter) &&
      (absl::EqualsIgnoreCase(ToAbsl(row.Text(layout.col(kMeterCategory))), "Virtual Machines") ||
       absl::EqualsIgnoreCase(ToAbsl(line.service), "Virtual Machines"))) {
    meter_size = AzureVmSizeFromMeter(row.Text(meter));
    if (out.KnownInstanceType(meter_size)) instance = meter_size;
  }
  line.instance_type = out.CatalogInstanceType(instance);
  std::string_view gpu_count;
  GPUCOST_RETURN_IF_ERROR(CellKeyValue(row, layout.col(kSkuPriceDetails), "GpuCount", out, &gpu_count));
  double gpus = 0;
  line.gpu_sku = !gpu_count.empty() && ParseDouble(gpu_count, &gpus) && gpus > 0;
  // GCP bills a VM's GPUs as their own SKU: the description says so.
  bool core_sku = false;
  for (int field : {kSkuDescription, kChargeDescription, kSkuMeter}) {
    const std::string_view text = row.Text(layout.col(field));
    if (text.empty()) continue;
    const std::string lower = absl::AsciiStrToLower(ToAbsl(text));
    if (!absl::StartsWith(lower, "commitment") && absl::StrContains(lower, " gpu")) line.gpu_sku = true;
    if (absl::StrContains(lower, "instance core") || absl::StrContains(lower, "core running")) core_sku = true;
    break;
  }

  // The resource's time: a usage line consumed in hours (an instance-hour;
  // for GCP's GPU SKU, GPU-hours per GPU of the machine type), not the
  // unused part of a commitment (its ResourceId is the commitment).
  const bool usage = absl::EqualsIgnoreCase(ToAbsl(line.charge_category), ToAbsl(ToString(ChargeCategory::kUsage))) &&
                     !absl::EqualsIgnoreCase(ToAbsl(line.commitment_status), "Unused") && !line.resource_id.empty();
  if (usage) {
    double consumed = kNaN;
    GPUCOST_RETURN_IF_ERROR(ReadAmount(row, kConsumedQuantity, false, kNaN, &consumed));
    const double hours = UsageHours(consumed, row.Text(layout.col(kConsumedUnit)));
    if (line.provider == ToString(Provider::kGcp)) {
      if (line.gpu_sku || core_sku) {
        line.primary_rank = line.gpu_sku ? 2 : 1;
        // GPU-seconds per GPU of the machine type; core-seconds per core.
        double per_instance = line.gpu_sku ? out.InstanceGpus(line.instance_type) : 0;
        if (!line.gpu_sku) {
          std::string_view cores;
          GPUCOST_RETURN_IF_ERROR(
              CellKeyValue(row, layout.col(kSystemLabels), "compute.googleapis.com/cores", out, &cores));
          if (cores.empty() || !ParseDouble(cores, &per_instance)) per_instance = 0;
        }
        line.quantity_hours = per_instance > 0 ? hours / per_instance : kNaN;
      }
    } else if (!std::isnan(hours)) {
      line.primary_rank = 2;
      line.quantity_hours = hours;
    }
  }

  // An allocated charge (FOCUS 1.3) is read as a line like any other, so a
  // split export reads back whole; the report says it is one, for allocate
  // to refuse splitting it again.
  if (!row.IsNull(layout.col(kAllocatedMethod))) {
    BillingReport& report = out.report();
    if (report.allocated_charges++ == 0) {
      report.first_allocated_charge = std::string(
          row.Error(layout.name(kAllocatedMethod),
                    absl::StrCat("'", ToAbsl(row.Text(layout.col(kAllocatedMethod))),
                                 "': already an allocated charge of a split cost allocation"))
              .message());
    }
  }
  GPUCOST_RETURN_IF_ERROR(out.TagsFromCell(row, layout.col(kTags)));
  return out.Commit(line, [&](std::string_view what) { return row.Error(layout.name(AmountField(amount)), what); });
}

template absl::Status FocusFormat::Normalise<CsvRow>(const CsvRow&, LineBuilder&);
template absl::Status FocusFormat::Normalise<ArrowRow>(const ArrowRow&, LineBuilder&);
template absl::Status FocusFormat::Normalise<JsonRow>(const JsonRow&, LineBuilder&);

}  // namespace gpucost::io::internal
