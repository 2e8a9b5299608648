// GCP Cloud Billing detailed (resource-level) export to BigQuery, as CSV
// (nested fields flattened to "service.description", repeated fields as JSON
// arrays), JSON lines (BigQuery's export) or Parquet -> cost lines.
//
// Net cost = cost + sum(credits.amount) (credits are negative). GPUs are
// billed as their own SKU on the VM's resource, next to the core and RAM
// SKUs: each is its own line, prorated over the same GPUs.
#include <optional>
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
  kStart, kEnd, kCost, kCredits, kCostAtList, kGlobalName, kName, kProject, kService, kSku, kSkuDescription,
  kRegion, kCurrency, kLabels, kSystemLabels, kCostType, kUsageAmount, kUsageUnit, kPricingAmount, kCount,
};

constexpr ColumnSpec kColumns[] = {
    {kStart, {"usage_start_time"}},
    {kEnd, {"usage_end_time"}},
    {kCost, {"cost"}},
    {kCredits, {"credits"}},
    {kCostAtList, {"cost_at_list"}},
    {kGlobalName, {"resource.global_name", "resource_global_name"}},
    {kName, {"resource.name", "resource_name"}},
    {kProject, {"project.id", "project_id"}},
    {kService, {"service.description", "service_description"}},
    {kSku, {"sku.id", "sku_id"}},
    {kSkuDescription, {"sku.description", "sku_description"}},
    {kRegion, {"location.region", "location_region", "location.location"}},
    {kCurrency, {"currency"}},
    {kLabels, {"labels"}},
    {kSystemLabels, {"system_labels"}},
    {kCostType, {"cost_type"}},
    {kUsageAmount, {"usage.amount", "usage_amount"}},
    {kUsageUnit, {"usage.unit", "usage_unit"}},
    {kPricingAmount, {"usage.amount_in_pricing_units", "usage_amount_in_pricing_units"}},
};

struct Credit {
  double amount;
  std::string type;  // a copy: the JSON it came from is reused for the next cell
};

bool IsCommitmentCredit(std::string_view type) {
  return absl::StartsWith(ToAbsl(type), "COMMITTED_USAGE_DISCOUNT") || type == "FEE_UTILIZATION_OFFSET";
}

}  // namespace

std::span<const ColumnSpec> GcpFormat::Columns() { return kColumns; }
int GcpFormat::FieldCount() { return kCount; }
std::vector<int> GcpFormat::Required(const BillingOptions& options) {
  std::vector<int> required = {kStart, kEnd, kCost};
  if (options.amount == CostAmount::kList) required.push_back(kCostAtList);
  return required;
}
std::optional<std::string> GcpFormat::TagColumnKey(std::string_view) { return std::nullopt; }
absl::Status GcpFormat::CheckOptions(const BillingOptions&) { return absl::OkStatus(); }
std::vector<int> GcpFormat::IdentityFields() { return {}; }

template <typename Row>
absl::Status GcpFormat::Normalise(const Row& row, LineBuilder& out) {
  const Layout& layout = row.layout();
  Line line;
  GPUCOST_RETURN_IF_ERROR(ReadPeriod(row, kStart, kEnd, &line.start, &line.end, out));
  double cost = 0;
  GPUCOST_RETURN_IF_ERROR(ReadAmount(row, kCost, true, 0.0, &cost));
  GPUCOST_RETURN_IF_ERROR(ReadAmount(row, kCostAtList, false, kNaN, &line.list));

  std::vector<Credit> credits;
  double credit_total = 0;
  bool commitment_credit = false;
  // The CUD credits by kind, for the amortization (amortize.cc).
  double resource_cud = 0, spend_cud = 0;
  bool has_resource_cud = false, has_spend_cud = false, has_fee_offset = false;
  auto add_credit = [&](double amount, std::string_view type, std::string_view) {
    credits.push_back({amount, std::string(type)});
    credit_total += amount;
    commitment_credit |= IsCommitmentCredit(type);
    if (type == "COMMITTED_USAGE_DISCOUNT") {
      resource_cud += amount;
      has_resource_cud = true;
    } else if (type == "COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE") {
      spend_cud += amount;
      has_spend_cud = true;
    } else if (type == "FEE_UTILIZATION_OFFSET") {
      has_fee_offset = true;  // the new spend-based model: the fee's net amount is what went unused
    }
  };
  const int credits_col = layout.col(kCredits);
  std::string_view credits_text;
  if (row.RawText(credits_col, &credits_text)) {
    if (!credits_text.empty() && credits_text != "[]") {
      absl::Status status = ParseCreditsJson(credits_text, add_credit);
      if (!status.ok()) return row.Error(layout.name(kCredits), std::string(status.message()));
    }
  } else {
    GPUCOST_RETURN_IF_ERROR(row.Credits(credits_col, add_credit));
  }
  const bool separate = out.options().gcp_credits == GcpCredits::kSeparate;
  line.billed = line.effective = separate ? cost : cost + credit_total;

  // The detailed (resource-level) export has resource columns; the standard
  // one has none, and its lines name no resource.
  if (!row.IsNull(layout.col(kGlobalName)) || !row.IsNull(layout.col(kName))) out.report().gcp_export = "detailed";
  line.resource_name = row.Text(layout.col(kName));
  line.resource_id = row.Text(layout.col(kGlobalName));
  // A VM: "projects/P/zones/Z/instances/NAME", as GKE's providerID names it;
  // global_name carries the numeric id, kept as instance_id.
  std::string canonical;
  if (GcpInstance(line.resource_id, line.resource_name, &canonical, &line.instance_id)) {
    line.resource_by_instance_id = line.resource_name.empty() && !line.instance_id.empty();
    line.resource_id = out.Stable(canonical);
  }
  if (line.resource_id.empty()) line.resource_id = line.resource_name;
  line.provider = ToString(Provider::kGcp);
  line.account = row.Text(layout.col(kProject));
  line.service = row.Text(layout.col(kService));
  line.sku = row.Text(layout.col(kSku));
  line.region = row.Text(layout.col(kRegion));
  line.currency = row.Text(layout.col(kCurrency));
  std::string_view machine;
  GPUCOST_RETURN_IF_ERROR(
      CellKeyValue(row, layout.col(kSystemLabels), "compute.googleapis.com/machine_spec", out, &machine));
  line.instance_type = out.CatalogInstanceType(machine);

  const std::string_view description = row.Text(layout.col(kSkuDescription));
  const std::string_view cost_type = row.Text(layout.col(kCostType));
  const bool commitment_sku = absl::StartsWithIgnoreCase(ToAbsl(description), "Commitment");
  line.gpu_sku = ContainsIgnoreCase(description, " GPU");

  // Committed-use discounts: fees and covered usage meet in a pool (region and
  // resource, or the billing account's spend-based commitments), noted for
  // the amortization at the end of the read; both carry the pool as their
  // commitment_id. Credits kept as separate lines are not amortized.
  std::optional<CommitmentNote> note;
  const bool amortize = !separate && out.options().amount == CostAmount::kEffective;
  if (commitment_sku && cost_type != "tax" && cost_type != "adjustment" && cost_type != "rounding_error") {
    note.emplace();
    const bool spend = absl::StartsWithIgnoreCase(ToAbsl(description), "Commitment - dollar based");
    note->kind = has_fee_offset                ? CommitmentNote::Kind::kOffsetFee
                 : spend                       ? CommitmentNote::Kind::kSpendFee
                                               : CommitmentNote::Kind::kResourceFee;
    note->pool = has_fee_offset ? "spend-based-offset" : spend ? "spend-based" : out.Stable(CudPool(line.region, description, true));
    const int amount_col = layout.col(spend ? kPricingAmount : kUsageAmount);
    double quantity = kNaN;
    if (row.Number(amount_col, &quantity) == Parsed::kBad) {
      return BadValue(row, spend ? kPricingAmount : kUsageAmount, "is not a number");
    }
    // Spend-based fees: usage.amount_in_pricing_units is the hourly
    // commitment in cents of on-demand spend (GCP's own utilization query).
    note->quantity = spend ? quantity / 100 : quantity;
    line.gpu_sku = line.gpu_sku || IsGpuFamilyPool(note->pool);
    line.commitment_id = note->pool.empty() ? std::string_view() : out.Stable(absl::StrCat("gcp-cud:", ToAbsl(note->pool)));
  } else if (has_resource_cud || has_spend_cud) {
    note.emplace();
    note->kind = has_resource_cud ? CommitmentNote::Kind::kResourceCovered : CommitmentNote::Kind::kSpendCovered;
    note->pool = has_resource_cud ? out.Stable(CudPool(line.region, description, false)) : "spend-based";
    note->credit = has_resource_cud ? resource_cud : spend_cud;
    double quantity = kNaN;
    if (row.Number(layout.col(kUsageAmount), &quantity) == Parsed::kBad) {
      return BadValue(row, kUsageAmount, "is not a number");
    }
    note->quantity = quantity;
    if (!note->pool.empty()) {
      line.commitment_id = out.Stable(absl::StrCat("gcp-cud:", ToAbsl(note->pool)));
      line.commitment_status = "Used";
    }
  }
  if (note) note->gross = cost;
  const bool other = cost_type == "tax" || cost_type == "adjustment" || cost_type == "rounding_error";
  Purchase purchase = Purchase::kOnDemand;
  if (other) {
    purchase = Purchase::kOther;
  } else if (ContainsIgnoreCase(description, "Preemptible") ||
             absl::StartsWithIgnoreCase(ToAbsl(description), "Spot ")) {
    purchase = Purchase::kSpot;
  } else if (commitment_sku || (!separate && commitment_credit)) {
    purchase = Purchase::kCommittedUse;
  }
  line.pricing = ToString(purchase);
  if (cost_type == "tax") {
    line.charge_category = ToString(ChargeCategory::kTax);
  } else if (cost_type == "adjustment" || cost_type == "rounding_error") {
    line.charge_category = ToString(ChargeCategory::kAdjustment);
  } else if (commitment_sku) {
    line.charge_category = ToString(ChargeCategory::kPurchase);
  } else {
    line.charge_category = ToString(ChargeCategory::kUsage);
  }

  // The VM's time is billed as GPU, core and memory SKU lines: the GPU line
  // is primary (its core line when the VM has no GPU). usage.amount counts
  // GPU-seconds (core-seconds): per instance, divided by the machine type's
  // GPUs (system label compute.googleapis.com/cores).
  const bool usage = cost_type.empty() || cost_type == "regular";
  if (usage && !commitment_sku && !line.resource_id.empty()) {
    const bool core = ContainsIgnoreCase(description, "Instance Core") ||
                      ContainsIgnoreCase(description, "Core running") || ContainsIgnoreCase(description, "vCPU");
    if (line.gpu_sku || core) {
      line.primary_rank = line.gpu_sku ? 2 : 1;
      double amount = kNaN;
      GPUCOST_RETURN_IF_ERROR(ReadAmount(row, kUsageAmount, false, kNaN, &amount));
      double per_instance = 0;
      if (line.gpu_sku) {
        per_instance = out.InstanceGpus(machine);
      } else {
        std::string_view cores;
        GPUCOST_RETURN_IF_ERROR(
            CellKeyValue(row, layout.col(kSystemLabels), "compute.googleapis.com/cores", out, &cores));
        if (!cores.empty() && !ParseDouble(cores, &per_instance)) per_instance = 0;
      }
      line.quantity_hours =
          per_instance > 0 ? UsageHours(amount, row.Text(layout.col(kUsageUnit))) / per_instance : kNaN;
    }
  }

  GPUCOST_RETURN_IF_ERROR(out.TagsFromCell(row, layout.col(kLabels)));
  const int amount_field = out.options().amount == CostAmount::kList ? kCostAtList : kCost;
  auto error = [&](std::string_view what) { return row.Error(layout.name(amount_field), what); };
  GPUCOST_RETURN_IF_ERROR(out.Commit(line, error));
  if (note && amortize && !note->pool.empty()) {
    note->line = out.size() - 1;
    const bool fee = note->kind != CommitmentNote::Kind::kResourceCovered &&
                     note->kind != CommitmentNote::Kind::kSpendCovered;
    out.NoteCommitment(*note, fee ? &line : nullptr);
  }
  if (separate) {
    // Each credit as its own line on the same resource and period.
    for (const Credit& credit : credits) {
      Line c = line;
      c.billed = c.effective = credit.amount;
      c.list = 0;
      c.charge_category = ToString(ChargeCategory::kCredit);
      c.pricing = ToString(IsCommitmentCredit(credit.type) ? Purchase::kCommittedUse : Purchase::kOther);
      c.sku = credit.type.empty() ? line.sku : out.Stable(credit.type);
      c.primary_rank = 0;
      c.quantity_hours = kNaN;
      out.RepeatLastTags();
      GPUCOST_RETURN_IF_ERROR(out.Commit(c, error));
    }
  }
  return absl::OkStatus();
}

template absl::Status GcpFormat::Normalise<CsvRow>(const CsvRow&, LineBuilder&);
template absl::Status GcpFormat::Normalise<ArrowRow>(const ArrowRow&, LineBuilder&);
template absl::Status GcpFormat::Normalise<JsonRow>(const JsonRow&, LineBuilder&);

}  // namespace gpucost::io::internal
