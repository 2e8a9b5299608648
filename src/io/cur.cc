// AWS Cost and Usage Report, legacy ("lineItem/UsageStartDate") and CUR 2.0 /
// Data Exports ("line_item_usage_start_date") -> cost lines.
//
// The amortized cost follows AWS's own definition per line item type (the
// expression of the CUR user guide and AWS's CUDOS dashboards):
//   SavingsPlanCoveredUsage  savings_plan_savings_plan_effective_cost
//   SavingsPlanRecurringFee  total_commitment_to_date - used_commitment (the unused part)
//   SavingsPlanNegation      0
//   SavingsPlanUpfrontFee    0
//   DiscountedUsage          reservation_effective_cost
//   RIFee                    unused_amortized_upfront_fee_for_billing_period + unused_recurring_fee
//   Fee with a reservation   0 (the upfront fee, amortized into DiscountedUsage)
//   anything else            line_item_unblended_cost
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "billing_internal.h"

namespace gpucost::io::internal {
namespace {

enum Field {
  kStart, kEnd, kType, kResourceId, kUsageType, kUnblended, kRiEffective, kSpEffective, kSpTotalCommitment,
  kSpUsedCommitment, kRiUnusedUpfront, kRiUnusedRecurring, kRiArn, kSpArn, kTerm, kPublicOnDemand,
  kInstanceType, kProductMap, kAccount, kRegion, kService, kSku, kCurrency, kTags, kUsageAmount, kLineItemId,
  kTimeInterval, kPricingCurrency, kCount,
};

constexpr ColumnSpec kColumns[] = {
    {kStart, {"line_item_usage_start_date", "lineItem/UsageStartDate"}},
    {kEnd, {"line_item_usage_end_date", "lineItem/UsageEndDate"}},
    {kType, {"line_item_line_item_type", "lineItem/LineItemType"}},
    {kResourceId, {"line_item_resource_id", "lineItem/ResourceId"}},
    {kUsageType, {"line_item_usage_type", "lineItem/UsageType"}},
    {kUnblended, {"line_item_unblended_cost", "lineItem/UnblendedCost"}},
    {kRiEffective, {"reservation_effective_cost", "reservation/EffectiveCost"}},
    {kSpEffective, {"savings_plan_savings_plan_effective_cost", "savingsPlan/SavingsPlanEffectiveCost"}},
    {kSpTotalCommitment, {"savings_plan_total_commitment_to_date", "savingsPlan/TotalCommitmentToDate"}},
    {kSpUsedCommitment, {"savings_plan_used_commitment", "savingsPlan/UsedCommitment"}},
    {kRiUnusedUpfront,
     {"reservation_unused_amortized_upfront_fee_for_billing_period",
      "reservation/UnusedAmortizedUpfrontFeeForBillingPeriod"}},
    {kRiUnusedRecurring, {"reservation_unused_recurring_fee", "reservation/UnusedRecurringFee"}},
    {kRiArn, {"reservation_reservation_a_r_n", "reservation/ReservationARN"}},
    {kSpArn, {"savings_plan_savings_plan_a_r_n", "savingsPlan/SavingsPlanARN"}},
    {kTerm, {"pricing_term", "pricing/term"}},
    {kPublicOnDemand, {"pricing_public_on_demand_cost", "pricing/publicOnDemandCost"}},
    {kInstanceType, {"product_instance_type", "product/instanceType"}},
    {kProductMap, {"product"}},
    {kAccount, {"line_item_usage_account_id", "lineItem/UsageAccountId"}},
    {kRegion, {"product_region_code", "product/regionCode", "product_region", "product/region"}},
    {kService, {"line_item_product_code", "lineItem/ProductCode"}},
    {kSku, {"product_sku", "product/sku"}},
    {kCurrency, {"line_item_currency_code", "lineItem/CurrencyCode"}},
    {kTags, {"resource_tags"}},
    {kUsageAmount, {"line_item_usage_amount", "lineItem/UsageAmount"}},
    {kLineItemId, {"identity_line_item_id", "identity/LineItemId"}},
    {kTimeInterval, {"identity_time_interval", "identity/TimeInterval"}},
    {kPricingCurrency, {"pricing_currency", "pricing/currency"}},
};

// Reads an amount that a line item type needs from a column that legacy
// reports only have when the account has reservations or savings plans.
// When the amortized amount is not the one allocated (`strict` false), what
// it cannot compute becomes NaN in effective_cost instead of an error.
template <typename Row>
absl::Status NeededAmount(const Row& row, int field, std::string_view type, bool value_required, bool strict,
                          double* out) {
  if (!row.layout().has(field)) {
    if (!strict) {
      *out = kNaN;
      return absl::OkStatus();
    }
    return row.Error(row.layout().name(field),
                     absl::StrCat("missing column, needed for the amortized cost of ", ToAbsl(type), " lines"));
  }
  return ReadAmount(row, field, value_required && strict, value_required ? kNaN : 0.0, out);
}

bool Is(std::string_view type, std::string_view name) { return type == name; }

}  // namespace

std::span<const ColumnSpec> CurFormat::Columns() { return kColumns; }
int CurFormat::FieldCount() { return kCount; }
std::vector<int> CurFormat::Required(const BillingOptions& options) {
  std::vector<int> required = {kStart, kEnd, kType, kUnblended};
  if (options.amount == CostAmount::kList) required.push_back(kPublicOnDemand);
  return required;
}
std::optional<std::string> CurFormat::TagColumnKey(std::string_view column) {
  constexpr std::string_view kLegacy = "resourceTags/";  // resourceTags/user:team
  constexpr std::string_view kAthena = "resource_tags_";  // resource_tags_user_team
  if (column.substr(0, kLegacy.size()) == kLegacy && column.size() > kLegacy.size()) {
    return std::string(column.substr(kLegacy.size()));
  }
  if (column.substr(0, kAthena.size()) == kAthena && column.size() > kAthena.size()) {
    return std::string(column.substr(kAthena.size()));
  }
  return std::nullopt;
}
absl::Status CurFormat::CheckOptions(const BillingOptions&) { return absl::OkStatus(); }
// AWS: a line item id is unique within its time interval.
std::vector<int> CurFormat::IdentityFields() { return {kLineItemId, kTimeInterval}; }

template <typename Row>
absl::Status CurFormat::Normalise(const Row& row, LineBuilder& out) {
  const Layout& layout = row.layout();
  Line line;
  GPUCOST_RETURN_IF_ERROR(ReadPeriod(row, kStart, kEnd, &line.start, &line.end, out));
  const std::string_view type = row.Text(layout.col(kType));
  if (type.empty()) return row.Error(layout.name(kType), "missing line item type");
  double unblended = 0;
  GPUCOST_RETURN_IF_ERROR(ReadAmount(row, kUnblended, true, 0.0, &unblended));
  line.billed = unblended;
  GPUCOST_RETURN_IF_ERROR(ReadAmount(row, kPublicOnDemand, false, kNaN, &line.list));
  const std::string_view ri_arn = row.Text(layout.col(kRiArn));
  const std::string_view sp_arn = row.Text(layout.col(kSpArn));

  // Amortized cost, exactly as AWS defines it per line item type.
  double amortized = unblended;
  bool unused_part = false;
  const bool strict = out.options().amount == CostAmount::kEffective;
  if (Is(type, "SavingsPlanCoveredUsage")) {
    GPUCOST_RETURN_IF_ERROR(NeededAmount(row, kSpEffective, type, true, strict, &amortized));
  } else if (Is(type, "SavingsPlanRecurringFee")) {
    double total = 0, used = 0;
    GPUCOST_RETURN_IF_ERROR(NeededAmount(row, kSpTotalCommitment, type, false, strict, &total));
    GPUCOST_RETURN_IF_ERROR(NeededAmount(row, kSpUsedCommitment, type, false, strict, &used));
    amortized = total - used;
    unused_part = true;
  } else if (Is(type, "SavingsPlanNegation") || Is(type, "SavingsPlanUpfrontFee") ||
             (Is(type, "Fee") && !ri_arn.empty())) {
    amortized = 0;
  } else if (Is(type, "DiscountedUsage")) {
    GPUCOST_RETURN_IF_ERROR(NeededAmount(row, kRiEffective, type, true, strict, &amortized));
  } else if (Is(type, "RIFee")) {
    double upfront = 0, recurring = 0;
    GPUCOST_RETURN_IF_ERROR(NeededAmount(row, kRiUnusedUpfront, type, false, strict, &upfront));
    GPUCOST_RETURN_IF_ERROR(NeededAmount(row, kRiUnusedRecurring, type, false, strict, &recurring));
    amortized = upfront + recurring;
    unused_part = true;
  }
  line.effective = amortized;

  line.resource_id = row.Text(layout.col(kResourceId));
  line.provider = ToString(Provider::kAws);
  line.account = row.Text(layout.col(kAccount));
  line.service = row.Text(layout.col(kService));
  line.sku = row.Text(layout.col(kSku));
  line.currency = row.Text(layout.col(kCurrency));
  if (line.currency.empty()) line.currency = row.Text(layout.col(kPricingCurrency));
  line.region = row.Text(layout.col(kRegion));
  if (line.region.empty()) {
    GPUCOST_RETURN_IF_ERROR(CellKeyValue(row, layout.col(kProductMap), "region", out, &line.region));
    line.region = out.Stable(line.region);
  }
  line.commitment_id = !ri_arn.empty() ? ri_arn : sp_arn;

  const std::string_view usage_type = row.Text(layout.col(kUsageType));
  std::string_view instance = row.Text(layout.col(kInstanceType));
  if (instance.empty()) {
    GPUCOST_RETURN_IF_ERROR(CellKeyValue(row, layout.col(kProductMap), "instance_type", out, &instance));
  }
  if (instance.empty()) instance = InstanceTypeFromUsageType(usage_type);
  line.instance_type = out.CatalogInstanceType(instance);

  const bool reserved = Is(type, "DiscountedUsage") || Is(type, "RIFee") || (Is(type, "Fee") && !ri_arn.empty());
  const bool savings_plan = Is(type, "SavingsPlanCoveredUsage") || Is(type, "SavingsPlanNegation") ||
                            Is(type, "SavingsPlanRecurringFee") || Is(type, "SavingsPlanUpfrontFee");
  const std::string_view term = row.Text(layout.col(kTerm));
  Purchase purchase = Purchase::kOther;
  if (absl::StrContains(ToAbsl(usage_type), "SpotUsage") || term == "Spot") {
    purchase = Purchase::kSpot;
  } else if (reserved) {
    purchase = Purchase::kReserved;
  } else if (savings_plan) {
    purchase = Purchase::kSavingsPlan;
  } else if (Is(type, "Usage")) {
    purchase = Purchase::kOnDemand;
  }
  line.pricing = ToString(purchase);
  if (Is(type, "Usage") || Is(type, "DiscountedUsage") || Is(type, "SavingsPlanCoveredUsage") ||
      Is(type, "SavingsPlanNegation")) {
    line.charge_category = ToString(ChargeCategory::kUsage);
  } else if (Is(type, "Fee") || Is(type, "RIFee") || Is(type, "SavingsPlanRecurringFee") ||
             Is(type, "SavingsPlanUpfrontFee")) {
    line.charge_category = ToString(ChargeCategory::kPurchase);
  } else if (Is(type, "Tax")) {
    line.charge_category = ToString(ChargeCategory::kTax);
  } else if (Is(type, "Credit") || Is(type, "Refund") || absl::EndsWith(ToAbsl(type), "Discount")) {
    line.charge_category = ToString(ChargeCategory::kCredit);
  } else {
    line.charge_category = ToString(ChargeCategory::kAdjustment);
  }
  if (Is(type, "DiscountedUsage") || Is(type, "SavingsPlanCoveredUsage")) {
    line.commitment_status = "Used";
  } else if (unused_part && amortized != 0 && !std::isnan(amortized)) {
    line.commitment_status = "Unused";
  }

  // The instance's time: its usage line (on demand, spot, or covered by a
  // reservation or savings plan), whose usage type names the instance type
  // ("USW2-BoxUsage:p4d.24xlarge"); its usage amount is instance-hours.
  // Data transfer and EBS lines of the same instance are not.
  const bool instance_usage =
      Is(type, "Usage") || Is(type, "DiscountedUsage") || Is(type, "SavingsPlanCoveredUsage");
  const bool instance_line = layout.has(kUsageType) ? !InstanceTypeFromUsageType(usage_type).empty()
                                                    : !line.instance_type.empty();
  if (instance_usage && instance_line) {
    line.primary_rank = 2;
    GPUCOST_RETURN_IF_ERROR(ReadAmount(row, kUsageAmount, false, kNaN, &line.quantity_hours));
  }

  if (layout.has(kTags)) {
    GPUCOST_RETURN_IF_ERROR(out.TagsFromCell(row, layout.col(kTags)));
  } else {
    for (const auto& [col, key] : layout.tag_columns) {
      if (!row.IsNull(col)) out.AddTag(key, row.Text(col), ValueKind::kString);
    }
  }
  int amount_field = kUnblended;
  if (out.options().amount == CostAmount::kList) amount_field = kPublicOnDemand;
  return out.Commit(line, [&](std::string_view what) { return row.Error(layout.name(amount_field), what); });
}

template absl::Status CurFormat::Normalise<CsvRow>(const CsvRow&, LineBuilder&);
template absl::Status CurFormat::Normalise<ArrowRow>(const ArrowRow&, LineBuilder&);
template absl::Status CurFormat::Normalise<JsonRow>(const JsonRow&, LineBuilder&);

}  // namespace gpucost::io::internal
