// File: io/focus.h
//
// FOCUS exports (FinOps Open Cost and Usage Specification 1.0, 1.1, 1.2,
// 1.3) -> cost lines (io/billing.h).
//
// Columns read: ChargePeriodStart/End (required; the end is exclusive),
// EffectiveCost (the default amount), BilledCost, ListCost, ResourceId,
// ResourceName, ProviderName (1.3: ServiceProviderName, HostProviderName), SubAccountId,
// RegionId, ServiceName, SkuId, ChargeCategory, PricingCategory,
// CommitmentDiscountId/Status, BillingCurrency, Tags, SkuPriceDetails
// (InstanceType, GpuCount), x_UsageType (AWS), x_SkuDetails (Azure). Every
// row becomes a line: purchases (EffectiveCost 0), unused-commitment rows
// (their ResourceId is the commitment), credits, taxes and rows without a
// resource, so the EffectiveCost total always reconciles. Nulls may be empty
// cells or the literal `null`. 1.3's allocated charges (AllocatedMethodId
// set) are read as lines and counted in BillingReport::allocated_charges;
// 1.3's contract columns (ContractApplied) are not needed for allocation.
//
// Example:
//   absl::StatusOr<gpucost::io::CostLines> lines = gpucost::io::ReadFocusCsv(csv_text);
#ifndef GPUCOST_IO_FOCUS_H_
#define GPUCOST_IO_FOCUS_H_

#include <string_view>

#include "gpucost/io/billing.h"

namespace gpucost::io {

[[nodiscard]] inline absl::StatusOr<CostLines> ReadFocusCsv(std::string_view csv,
                                                            const BillingOptions& options = {}) {
  return ReadBilling(BillingFormat::kFocus, csv, options);
}

}  // namespace gpucost::io

#endif  // GPUCOST_IO_FOCUS_H_
