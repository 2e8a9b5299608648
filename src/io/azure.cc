// Azure Cost Management cost details exports (EA and MCA schemas, actual or
// amortized dataset) -> cost lines. Columns are matched case-insensitively
// (their casing differs between account types and schema versions); each row
// is one day of one meter on one resource: [date, date + 1 day).
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "billing_internal.h"

namespace gpucost::io::internal {
namespace {

enum Field {
  kDate, kCost, kPaygCost, kPaygPrice, kQuantity, kResourceId, kResourceName, kSubscription, kRegion,
  kMeterCategory, kMeterName, kMeterId, kCurrency, kChargeType, kPricingModel, kReservationId, kBenefitId,
  kTags, kAdditionalInfo, kUnitOfMeasure, kCount,
};

constexpr ColumnSpec kColumns[] = {
    {kDate, {"date", "UsageDate", "UsageDateTime"}},
    {kCost, {"costInBillingCurrency", "CostInBillingCurrency", "PreTaxCost", "Cost"}},
    {kPaygCost, {"paygCostInBillingCurrency"}},
    {kPaygPrice, {"PayGPrice"}},
    {kQuantity, {"quantity", "UsageQuantity"}},
    {kResourceId, {"ResourceId", "InstanceId"}},
    {kResourceName, {"resourceName"}},
    {kSubscription, {"SubscriptionId", "SubscriptionGuid"}},
    {kRegion, {"resourceLocation", "ResourceLocationNormalized", "Location"}},
    {kMeterCategory, {"meterCategory"}},
    {kMeterName, {"meterName"}},
    {kMeterId, {"meterId"}},
    {kCurrency, {"billingCurrency", "billingCurrencyCode", "BillingCurrency", "Currency"}},
    {kChargeType, {"chargeType"}},
    {kPricingModel, {"pricingModel"}},
    {kReservationId, {"reservationId"}},
    {kBenefitId, {"benefitId"}},
    {kTags, {"tags"}},
    {kAdditionalInfo, {"additionalInfo"}},
    {kUnitOfMeasure, {"unitOfMeasure", "UnitOfMeasure"}},
};

// "On Demand" / "OnDemand" -> "ondemand".
std::string Squash(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != ' ' && c != '_' && c != '-') out.push_back(absl::ascii_tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

}  // namespace

std::span<const ColumnSpec> AzureFormat::Columns() { return kColumns; }
int AzureFormat::FieldCount() { return kCount; }
std::vector<int> AzureFormat::Required(const BillingOptions& options) {
  if (options.amount == CostAmount::kList) return {kDate, kCost, kPaygCost};
  return {kDate, kCost};
}
std::optional<std::string> AzureFormat::TagColumnKey(std::string_view) { return std::nullopt; }
std::vector<int> AzureFormat::IdentityFields() { return {}; }
absl::Status AzureFormat::CheckOptions(const BillingOptions& options) {
  if (options.azure_dataset == AzureDataset::kAmortized && options.amount == CostAmount::kBilled) {
    return ParameterError("amount", "the amortized cost-details dataset has no billed amounts; read the "
                                    "actual-cost export (dataset \"actual\") for amount \"billed\"");
  }
  if (options.azure_dataset == AzureDataset::kActual && options.amount == CostAmount::kEffective) {
    return ParameterError("amount", "the actual-cost dataset has no amortized amounts; read the amortized "
                                    "export (dataset \"amortized\") for amount \"effective\"");
  }
  return absl::OkStatus();
}

template <typename Row>
absl::Status AzureFormat::Normalise(const Row& row, LineBuilder& out) {
  const Layout& layout = row.layout();
  Line line;
  GPUCOST_RETURN_IF_ERROR(ReadDay(row, kDate, &line.start, &line.end, out));
  double cost = 0;
  GPUCOST_RETURN_IF_ERROR(ReadAmount(row, kCost, true, 0.0, &cost));
  if (out.options().azure_dataset == AzureDataset::kAmortized) {
    line.effective = cost;
  } else {
    line.billed = cost;
  }
  GPUCOST_RETURN_IF_ERROR(ReadAmount(row, kPaygCost, false, kNaN, &line.list));
  if (!std::isfinite(line.list) && layout.has(kPaygPrice) && layout.has(kQuantity)) {
    double price = kNaN, quantity = kNaN;
    GPUCOST_RETURN_IF_ERROR(ReadAmount(row, kPaygPrice, false, kNaN, &price));
    GPUCOST_RETURN_IF_ERROR(ReadAmount(row, kQuantity, false, kNaN, &quantity));
    line.list = price * quantity;
  }
  line.resource_id = row.Text(layout.col(kResourceId));
  line.lowercase_resource = true;  // ARM ids are case-insensitive: one spelling, lower case
  // A scale set's line names its instance in additionalInfo.VMName.
  GPUCOST_RETURN_IF_ERROR(AzureScaleSetInstance(row, layout.col(kAdditionalInfo), out, &line.resource_id));
  line.resource_name = row.Text(layout.col(kResourceName));
  line.provider = ToString(Provider::kAzure);
  line.account = row.Text(layout.col(kSubscription));
  line.region = row.Text(layout.col(kRegion));
  line.service = row.Text(layout.col(kMeterCategory));
  line.sku = row.Text(layout.col(kMeterId));
  if (line.sku.empty()) line.sku = row.Text(layout.col(kMeterName));
  line.currency = row.Text(layout.col(kCurrency));

  const std::string charge = Squash(row.Text(layout.col(kChargeType)));
  const std::string model = Squash(row.Text(layout.col(kPricingModel)));
  const std::string_view reservation = row.Text(layout.col(kReservationId));
  const std::string_view benefit = row.Text(layout.col(kBenefitId));
  line.commitment_id = !reservation.empty() ? reservation : benefit;
  const bool unused = charge == "unusedreservation" || charge == "unusedsavingsplan";
  // PricingModel: OnDemand, Reservation, SavingsPlan or Spot (the model's
  // own words or aliases); unused commitments may leave it empty.
  Purchase purchase = ParsePurchase(model).value_or(Purchase::kOther);
  if (charge == "unusedreservation") {
    purchase = Purchase::kReserved;
  } else if (charge == "unusedsavingsplan") {
    purchase = Purchase::kSavingsPlan;
  } else if (model.empty() && charge == "usage") {
    purchase = Purchase::kOnDemand;
  }
  line.pricing = ToString(purchase);
  if (charge == "usage" || unused) {
    line.charge_category = ToString(ChargeCategory::kUsage);
  } else if (charge == "purchase") {
    line.charge_category = ToString(ChargeCategory::kPurchase);
  } else if (charge == "refund") {
    line.charge_category = ToString(ChargeCategory::kCredit);
  } else if (charge == "tax") {
    line.charge_category = ToString(ChargeCategory::kTax);
  } else {
    line.charge_category = ToString(ChargeCategory::kAdjustment);
  }
  if (unused) {
    line.commitment_status = "Unused";
  } else if (charge == "usage" && !line.commitment_id.empty()) {
    line.commitment_status = "Used";
  }

  // The VM size is additionalInfo.ServiceType; else the meter name spelled
  // as a size ("NC4as T4 v3" -> "Standard_NC4as_T4_v3") when the catalog knows it.
  std::string_view instance;
  GPUCOST_RETURN_IF_ERROR(CellKeyValue(row, layout.col(kAdditionalInfo), "ServiceType", out, &instance));
  if (!instance.empty()) {
    line.instance_type = out.CatalogInstanceType(instance);
  } else if (!row.IsNull(layout.col(kMeterName)) &&
             absl::EqualsIgnoreCase(ToAbsl(line.service), "Virtual Machines")) {
    const std::string size = AzureVmSizeFromMeter(row.Text(layout.col(kMeterName)));
    if (out.KnownInstanceType(size)) line.instance_type = out.CatalogInstanceType(size);
  }

  // The VM's time: its Virtual Machines meter line (not its disks, licences
  // or bandwidth), Quantity in the meter's unit of hours ("1 Hour", "10 Hours").
  if (charge == "usage" && absl::EqualsIgnoreCase(ToAbsl(line.service), "Virtual Machines") &&
      !line.resource_id.empty()) {
    double quantity = kNaN;
    GPUCOST_RETURN_IF_ERROR(ReadAmount(row, kQuantity, false, kNaN, &quantity));
    const std::string_view unit = row.Text(layout.col(kUnitOfMeasure));
    line.quantity_hours = unit.empty() ? quantity : UsageHours(quantity, unit);
    line.primary_rank = 2;
  }

  GPUCOST_RETURN_IF_ERROR(out.TagsFromCell(row, layout.col(kTags)));
  return out.Commit(line, [&](std::string_view what) { return row.Error(layout.name(kCost), what); });
}

template absl::Status AzureFormat::Normalise<CsvRow>(const CsvRow&, LineBuilder&);
template absl::Status AzureFormat::Normalise<ArrowRow>(const ArrowRow&, LineBuilder&);
template absl::Status AzureFormat::Normalise<JsonRow>(const JsonRow&, LineBuilder&);

}  // namespace gpucost::io::internal
