// File: io/azure.h
//
// Azure Cost Management cost details exports -> cost lines (io/billing.h).
// Columns match case-insensitively (EA and MCA spell them differently);
// each row is one day: [date, date + 1 day); dates may be ISO 8601 or
// MM/DD/YYYY. The file does not say whether it is the amortized or the actual
// dataset, so BillingOptions::azure_dataset does: its cost column is the
// effective amount of the amortized dataset or the billed amount of the
// actual one. pricingModel OnDemand / "On Demand", Reservation, SavingsPlan
// and Spot map to on_demand, commitment and spot; UnusedReservation and
// UnusedSavingsPlan rows are kept (commitment status Unused). Tags may be a
// JSON object or the brace-less form older exports write. Resource ids are
// lower-cased (ARM ids are case-insensitive).
//
// Example:
//   absl::StatusOr<gpucost::io::CostLines> lines = gpucost::io::ReadAzureCostsCsv(csv_text);
#ifndef GPUCOST_IO_AZURE_H_
#define GPUCOST_IO_AZURE_H_

#include <string_view>

#include "gpucost/io/billing.h"

namespace gpucost::io {

[[nodiscard]] inline absl::StatusOr<CostLines> ReadAzureCostsCsv(std::string_view csv,
                                                                 const BillingOptions& options = {}) {
  return ReadBilling(BillingFormat::kAzure, csv, options);
}

}  // namespace gpucost::io

#endif  // GPUCOST_IO_AZURE_H_
