// File: io/gcp.h
//
// GCP Cloud Billing detailed (resource-level) export -> cost lines
// (io/billing.h), from CSV (nested fields flattened as "service.description",
// repeated fields such as credits and labels as JSON arrays) or BigQuery's
// newline-delimited JSON export.
//
// Amounts: cost + sum(credits.amount) (credits are negative; CUD, SUD,
// free tier, promotions ...) for both effective and billed; cost_at_list for
// list. With GcpCredits::kSeparate every credit becomes its own line instead.
// The resource is resource.global_name (else resource.name); labels become
// the tags; the machine type comes from system_labels
// "compute.googleapis.com/machine_spec". GPU SKU lines ("Nvidia Tesla A100
// GPU running in ...") are separate lines of the same VM and mark the VM as
// a GPU resource.
//
// Example:
//   absl::StatusOr<gpucost::io::CostLines> lines = gpucost::io::ReadGcpBillingCsv(csv_text);
#ifndef GPUCOST_IO_GCP_H_
#define GPUCOST_IO_GCP_H_

#include <string_view>

#include "gpucost/io/billing.h"

namespace gpucost::io {

[[nodiscard]] inline absl::StatusOr<CostLines> ReadGcpBillingCsv(std::string_view csv,
                                                                 const BillingOptions& options = {}) {
  return ReadBilling(BillingFormat::kGcp, csv, options);
}

[[nodiscard]] inline absl::StatusOr<CostLines> ReadGcpBillingJsonLines(std::string_view json_lines,
                                                                       const BillingOptions& options = {}) {
  return ReadBilling(BillingFormat::kGcp, json_lines, options, /*json_lines=*/true);
}

}  // namespace gpucost::io

#endif  // GPUCOST_IO_GCP_H_
