// File: io/cur.h
//
// AWS Cost and Usage Reports -> cost lines (io/billing.h): the legacy CUR
// ("lineItem/UsageStartDate", one "resourceTags/user:<key>" column per tag)
// and CUR 2.0 / Data Exports ("line_item_usage_start_date", a
// "resource_tags" map), told apart by their column names.
//
// The effective (amortized) amount is AWS's own per line item type:
// SavingsPlanCoveredUsage -> savings plan effective cost, DiscountedUsage ->
// reservation effective cost, SavingsPlanRecurringFee -> its unused part
// (total commitment to date - used commitment), RIFee -> unused amortized
// upfront + unused recurring fee, SavingsPlanNegation, SavingsPlanUpfrontFee
// and reservation upfront Fee -> 0, every other type -> unblended cost. The
// billed amount is the unblended cost; list is the public On-Demand cost.
// Spot comes from the usage type ("SpotUsage"), the instance type from the
// product columns (or the usage type).
//
// Example:
//   absl::StatusOr<gpucost::io::CostLines> lines = gpucost::io::ReadCurCsv(csv_text);
#ifndef GPUCOST_IO_CUR_H_
#define GPUCOST_IO_CUR_H_

#include <string_view>

#include "gpucost/io/billing.h"

namespace gpucost::io {

[[nodiscard]] inline absl::StatusOr<CostLines> ReadCurCsv(std::string_view csv, const BillingOptions& options = {}) {
  return ReadBilling(BillingFormat::kCur, csv, options);
}

}  // namespace gpucost::io

#endif  // GPUCOST_IO_CUR_H_
