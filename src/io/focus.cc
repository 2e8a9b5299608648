// FOCUS 1.0-1.3 (FinOps Open Cost and Usage Specification) -> cost lines.
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/match.h"
#include "billing_internal.h"

namespace gpucost::io::internal {
namespace {

enum Field {
  kStart, kEnd, kBilled, kEffective, kList, kResourceId, kResourceName, kProvider, kAccount, kRegion,
  kService, kSku, kChargeCategory, kPricingCategory, kCommitmentId, kCommitmentStatus, kCurrency, kTags,
  kSkuPriceDetails, kUsageType, kSkuDetails, kMeterName, kMeterCategory, kCount,
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
    {kCommitmentStatus, {"CommitmentDiscountStatus"}},
    {kCurrency, {"BillingCurrency"}},
    {kTags, {"Tags"}},
    {kSkuPriceDetails, {"SkuPriceDetails"}},
    // Provider columns: AWS's usage type, Azure's SKU details.
    {kUsageType, {"x_UsageType", "x_usage_type"}},
    {kSkuDetails, {"x_SkuDetails"}},
    {kMeterName, {"x_SkuMeterName", "SkuMeter"}},
    {kMeterCategory, {"x_SkuMeterCategory"}},
};

std::string_view NormaliseProvider(std::string_view name) {
  if (absl::EqualsIgnoreCase(ToAbsl(name), "AWS") || absl::EqualsIgnoreCase(ToAbsl(name), "Amazon Web Services")) {
    return "aws";
  }
  if (absl::EqualsIgnoreCase(ToAbsl(name), "Microsoft") || absl::EqualsIgnoreCase(ToAbsl(name), "Azure") ||
      absl::EqualsIgnoreCase(ToAbsl(name), "Microsoft Azure")) {
    return "azure";
  }
  if (absl::EqualsIgnoreCase(ToAbsl(name), "Google Cloud") || absl::EqualsIgnoreCase(ToAbsl(name), "Google") ||
      absl::EqualsIgnoreCase(ToAbsl(name), "GCP") || absl::EqualsIgnoreCase(ToAbsl(name), "Google Cloud Platform")) {
    return "gcp";
  }
  return name;
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

template <typename Row>
absl::Status FocusFormat::Normalise(const Row& row, LineBuilder& out) {
  const Layout& layout = row.layout();
  const CostAmount amount = out.options().amount;
  Line line;
  GPUCOST_RETURN_IF_ERROR(ReadPeriod(row, kStart, kEnd, &line.start, &line.end));
  GPUCOST_RETURN_IF_ERROR(ReadAmount(row, kBilled, amount == CostAmount::kBilled, kNaN, &line.billed));
  GPUCOST_RETURN_IF_ERROR(ReadAmount(row, kEffective, amount == CostAmount::kEffective, kNaN, &line.effective));
  GPUCOST_RETURN_IF_ERROR(ReadAmount(row, kList, false, kNaN, &line.list));
  line.resource_id = row.Text(layout.col(kResourceId));
  line.resource_name = row.Text(layout.col(kResourceName));
  line.provider = NormaliseProvider(row.Text(layout.col(kProvider)));
  line.account = row.Text(layout.col(kAccount));
  line.region = row.Text(layout.col(kRegion));
  line.service = row.Text(layout.col(kService));
  line.sku = row.Text(layout.col(kSku));
  line.charge_category = row.Text(layout.col(kChargeCategory));
  line.commitment_id = row.Text(layout.col(kCommitmentId));
  line.commitment_status = row.Text(layout.col(kCommitmentStatus));
  line.currency = row.Text(layout.col(kCurrency));

  // Purchases of a commitment, its covered usage and its unused rows all
  // carry the commitment's id; Dynamic pricing is spot / low priority.
  const std::string_view category = row.Text(layout.col(kPricingCategory));
  if (!line.commitment_id.empty() || absl::EqualsIgnoreCase(ToAbsl(category), "Committed")) {
    line.pricing = "commitment";
  } else if (absl::EqualsIgnoreCase(ToAbsl(category), "Dynamic")) {
    line.pricing = "spot";
  } else if (absl::EqualsIgnoreCase(ToAbsl(category), "Standard")) {
    line.pricing = "on_demand";
  } else {
    line.pricing = "other";
  }

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
  // Azure without SKU details: the VM meter name as a size, as the
  // cost-details reader does, when the catalog knows it.
  std::string meter_size;
  if (instance.empty() && line.provider == "azure" && !row.IsNull(layout.col(kMeterName)) &&
      (absl::EqualsIgnoreCase(ToAbsl(row.Text(layout.col(kMeterCategory))), "Virtual Machines") ||
       absl::EqualsIgnoreCase(ToAbsl(line.service), "Virtual Machines"))) {
    meter_size = AzureVmSizeFromMeter(row.Text(layout.col(kMeterName)));
    if (out.KnownInstanceType(meter_size)) instance = meter_size;
  }
  line.instance_type = out.CatalogInstanceType(instance);
  std::string_view gpu_count;
  GPUCOST_RETURN_IF_ERROR(CellKeyValue(row, layout.col(kSkuPriceDetails), "GpuCount", out, &gpu_count));
  double gpus = 0;
  line.gpu_sku = !gpu_count.empty() && ParseDouble(gpu_count, &gpus) && gpus > 0;

  GPUCOST_RETURN_IF_ERROR(out.TagsFromCell(row, layout.col(kTags)));
  return out.Commit(line, [&](std::string_view what) { return row.Error(layout.name(AmountField(amount)), what); });
}

template absl::Status FocusFormat::Normalise<CsvRow>(const CsvRow&, LineBuilder&);
template absl::Status FocusFormat::Normalise<ArrowRow>(const ArrowRow&, LineBuilder&);
template absl::Status FocusFormat::Normalise<JsonRow>(const JsonRow&, LineBuilder&);

}  // namespace gpucost::io::internal
