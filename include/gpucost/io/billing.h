// File: io/billing.h
//
// Cloud billing exports -> the cost lines of SEMANTICS 1.1, plus the columns
// people slice a bill by. One streaming reader serves every format
// (io/focus.h, io/cur.h, io/gcp.h, io/azure.h name the convenience calls):
// feed CSV (or, for GCP, JSON-lines) bytes in chunks of any size, or Arrow
// record batches (Parquet arrives this way from Python), then Finish().
// Memory grows with the cost lines, which are dictionary-encoded, not with
// the size of the export.
//
// Money is never dropped: every data row becomes a line (purchases, unused
// commitments, credits, taxes, lines without a resource included), so the sum
// of `cost` equals the export's own total of the chosen amount; only rows read
// twice are dropped, and counted (BillingReport). Bad input is
// an error naming the file, the line (CSV, JSON lines: 1-based) or row (Arrow:
// 0-based) and the column; there is never a partial result. Columns the
// reader does not know are ignored.
//
// Example:
//   gpucost::io::BillingOptions options;
//   options.source = "bill.csv";
//   auto reader = gpucost::io::BillingReader::Create(gpucost::io::BillingFormat::kFocus, options);
//   for (std::string_view chunk : chunks) (void)(*reader)->FeedCsv(chunk);
//   absl::StatusOr<gpucost::io::CostLines> lines = (*reader)->Finish();
//   // lines->columns() feeds gpucost::Allocate directly.
#ifndef GPUCOST_IO_BILLING_H_
#define GPUCOST_IO_BILLING_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpucost/catalog.h"
#include "gpucost/columns.h"
#include "gpucost/detail/arrow_c_data.h"

namespace gpucost::io {

enum class BillingFormat { kFocus, kCur, kGcp, kAzure };

// Which amount becomes `cost`:
// - kEffective: the amortized / effective cost (FOCUS EffectiveCost, the CUR
//   amortized cost AWS defines per line item type, GCP cost + credits, the
//   Azure amortized dataset). The default: what a workload really cost.
// - kBilled: the invoiced amount (FOCUS BilledCost, CUR unblended cost, GCP
//   cost + credits, the Azure actual-cost dataset).
// - kList: the On-Demand equivalent (FOCUS ListCost, CUR public On-Demand
//   cost, GCP cost_at_list, Azure pay-as-you-go cost); 0 where the export has
//   no list amount (taxes, credits).
enum class CostAmount { kEffective, kBilled, kList };

// "effective" (or "amortized"), "billed" or "list".
[[nodiscard]] absl::StatusOr<CostAmount> ParseCostAmount(std::string_view amount);

// The rows of one bill read so far, shared by the readers of its parts
// (BillingOptions::seen): a row repeated across parts, files or manifests (an
// overlapping re-delivery, a part given twice) is dropped and counted by the
// reader that meets it again, as a row repeated within one part is. Holds two
// 64-bit hashes per row, not the rows. Not thread-safe: the parts of one bill
// are read one after another (which copy is kept does not depend on timing).
class BillRows {
 public:
  BillRows();
  ~BillRows();
  BillRows(const BillRows&) = delete;
  BillRows& operator=(const BillRows&) = delete;

  // True when `key` (a row's identity, see BillingReader) is new; remembered.
  [[nodiscard]] bool Insert(std::string_view key);
  // Distinct rows seen.
  [[nodiscard]] int64_t size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// GCP: credits netted into their line (default), or each credit its own line
// (charge_category "Credit") next to the line it belongs to.
enum class GcpCredits { kNet, kSeparate };

// Azure cost details come as two exports: amortized (reservation and savings
// plan purchases spread over the usage they cover, unused parts as their own
// lines) and actual (purchases as billed). The file itself does not say which.
enum class AzureDataset { kAmortized, kActual };

struct BillingOptions {
  CostAmount amount = CostAmount::kEffective;
  // Tag keys to expand into their own columns (CostLines::tag_values). A key
  // also matches AWS's cost-allocation forms "user:<key>" and "user_<key>".
  std::vector<std::string> expand_tags;
  // Decides the `gpu` column and normalises instance types; nullptr means
  // Catalog::Embedded(). Must outlive the reader.
  const Catalog* catalog = nullptr;
  std::string source = "input";  // the file name errors start with
  GcpCredits gcp_credits = GcpCredits::kNet;
  AzureDataset azure_dataset = AzureDataset::kAmortized;
  // Time zone (IANA name) of timestamps written without a zone designator
  // ("2025-03-01 10:00:00", Azure's dates): "" or "UTC" reads them as UTC.
  // Timestamps with a zone ("Z", "+02:00", " UTC") are read as written.
  std::string tz;
  // The rows of the bill's parts read before this one; null: this reader's
  // own. Share one BillRows between the readers of one bill's parts.
  std::shared_ptr<BillRows> seen;
};

// What a reader dropped or noticed (Python: frame.attrs["billing"]).
struct BillingReport {
  int64_t rows_read = 0;           // data rows of the export
  int64_t duplicates_dropped = 0;  // rows read twice (see BillingReader), not made lines
  // The chosen amount of the rows dropped, per currency ("" when the export
  // names none), in the order first met: the money a bill read twice would
  // have counted twice.
  std::vector<std::string> duplicate_currencies;
  std::vector<double> duplicate_cost;
  int64_t primary_lines = 0;
  // Primary lines whose usage amount could not be turned into instance-hours
  // (no amount, a unit other than time, a GPU count the catalog lacks): their
  // quantity_hours is NaN, the whole period.
  int64_t quantity_unknown = 0;
  // Resources whose lines of one charge period bill more instance-hours than
  // the period has (clipped to it): a bill read twice, or overlapping parts.
  std::vector<std::string> hours_beyond_period;
  int64_t hours_beyond_period_lines = 0;
  // Distinct currencies of the lines, sorted.
  std::vector<std::string> currencies;
  // GCP: "detailed" (resource-level) or "standard" (no resource columns:
  // lines cannot join nodes). Empty for other formats.
  std::string gcp_export;
  // Whether naive timestamps were read in BillingOptions::tz (true) or as
  // UTC; false when every timestamp carried its zone.
  bool naive_timestamps = false;
  // FOCUS 1.3: rows that are already allocated charges of a split cost
  // allocation (AllocatedMethodId set), and where the first one is ("file:
  // line N: column AllocatedMethodId: ..."). Allocating them again would
  // split each charge twice; gpucost.allocate refuses such lines.
  int64_t allocated_charges = 0;
  std::string first_allocated_charge;
};

// The reader's output: SEMANTICS 1.1 cost lines and the slicing columns. All
// strings are dictionary-encoded; null (kNullCode) where the export has no
// value. Instants are nanoseconds since the epoch, UTC; `end` is exclusive.
struct CostLines {
  EncodedStrings resource_id;  // null: a charge with no resource
  std::vector<int64_t> start, end;
  std::vector<double> cost;            // the chosen amount; always finite
  std::vector<double> list_cost;       // On-Demand equivalent; 0 where none
  std::vector<double> billed_cost;     // NaN where the export has none
  std::vector<double> effective_cost;  // NaN where the export has none
  // "aws", "gcp", "azure" (FOCUS: the ProviderName, normalised when known).
  EncodedStrings provider;
  EncodedStrings account;   // AWS account, GCP project, Azure subscription
  EncodedStrings region;
  EncodedStrings service;
  EncodedStrings sku;
  EncodedStrings instance_type;
  EncodedStrings pricing;  // a Purchase, as ToString(Purchase) spells it (model.h)
  // FOCUS ChargeCategory vocabulary: Usage, Purchase, Tax, Credit, Adjustment.
  EncodedStrings charge_category;
  EncodedStrings commitment_id;      // reservation / savings plan / CUD id
  EncodedStrings commitment_status;  // "Used", "Unused" or null
  EncodedStrings currency;
  EncodedStrings resource_name;
  // The resource's tags as a JSON object string ("{}" when none).
  EncodedStrings tags;
  // Whether the line is for a GPU resource: its instance type has GPUs in the
  // catalog, or it is a GPU SKU (GCP), or another line of its resource is.
  // A commitment's own line (charge_category Purchase: CUR RIFee and savings
  // plan fees, CUD fees, Azure and FOCUS purchases; or an Unused commitment)
  // that names a resource names the commitment (the RI's ARN), not a machine:
  // never a GPU resource, whatever instance type it mentions.
  std::vector<uint8_t> gpu;
  // SEMANTICS 1.1: whether the line bills its resource's time. One line per
  // resource and charge period is primary: the instance's usage line (AWS,
  // Azure, FOCUS lines in hours), the GPU SKU line of a GCP VM-hour (its core
  // line when it has no GPU SKU line). Fees, credits, taxes and other SKUs are not.
  std::vector<uint8_t> primary;
  // Instance-hours a primary line bills within its period (the usage amount,
  // summed over the lines a period is split into, never above the period's
  // length); NaN on other lines and where the export does not say.
  std::vector<double> quantity_hours;
  // FOCUS PricingCurrency (null elsewhere): the currency of the price list
  // when it differs from the billing currency.
  EncodedStrings pricing_currency;
  // GCP: the instance's numeric id (resource.global_name's last part), kept
  // beside the canonical resource_id "projects/P/zones/Z/instances/NAME".
  EncodedStrings instance_id;
  BillingReport report;
  // One column per BillingOptions::expand_tags key, in that order: the
  // tag's value (JSON text for non-string values), null when absent.
  std::vector<std::string> tag_keys;
  std::vector<EncodedStrings> tag_values;

  [[nodiscard]] size_t size() const { return start.size(); }
  // The engine's view: every column SEMANTICS 1.1 reads (resource_id, start,
  // end, cost, list_cost, currency when the lines name one, primary,
  // quantity_hours), so primary hours and currencies are never lost.
  [[nodiscard]] CostColumns columns() const;
};

// Streaming reader of one export. Feed one kind of input (CSV, JSON lines or
// Arrow batches), then Finish(). An error is sticky: every later call
// returns it, so a partially read export never yields a result.
//
// Rows read twice are dropped and counted (BillingReport): for CUR a
// repeated identity_line_item_id within its identity_time_interval; for
// FOCUS, GCP and Azure a row identical in every column to an earlier one (a
// file or an overlapping export part read twice). Earlier rows are this
// reader's, or those of every part sharing BillingOptions::seen.
class BillingReader {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<BillingReader>> Create(BillingFormat format,
                                                                             BillingOptions options);
  virtual ~BillingReader();

  // CSV bytes (the header first), in chunks of any size.
  [[nodiscard]] virtual absl::Status FeedCsv(std::string_view chunk) = 0;
  // Newline-delimited JSON objects (BigQuery's JSON export). GCP only.
  [[nodiscard]] virtual absl::Status FeedJsonLines(std::string_view chunk) = 0;
  // One record batch: a struct array whose children are the columns. Column
  // types: strings (utf8, large_utf8), float64/32, integers, booleans,
  // timestamps of any unit (the zone is ignored: values are UTC), date32/64,
  // map<string, string> and list<struct<key, value>> (tags, labels),
  // list<struct<amount, type, ...>> (GCP credits); structs must be flattened
  // into "parent.child" columns first. The caller keeps ownership.
  [[nodiscard]] virtual absl::Status FeedArrow(const ArrowSchema& schema, const ArrowArray& batch) = 0;
  // Fails the read with `what` at the current input position (file, line
  // and column of the record in progress): for errors of the byte stream
  // itself, such as a truncated gzip member.
  [[nodiscard]] virtual absl::Status FailAtInputPosition(std::string_view what) = 0;
  // Ends the input and returns the lines.
  [[nodiscard]] virtual absl::StatusOr<CostLines> Finish() = 0;
  // Data rows read so far.
  [[nodiscard]] virtual int64_t rows() const = 0;
};

// Every column name `format` reads, in all the spellings it accepts (matched
// exactly, then case-insensitively), for column projection of Parquet files.
// Tag columns with a per-key name (legacy CUR "resourceTags/user:team") are
// told by IsBillingTagColumn.
[[nodiscard]] std::vector<std::string> BillingColumnNames(BillingFormat format);
[[nodiscard]] bool IsBillingTagColumn(BillingFormat format, std::string_view column);

// Reads a whole export held in memory (CSV text, or JSON lines for GCP when
// `json_lines`).
[[nodiscard]] absl::StatusOr<CostLines> ReadBilling(BillingFormat format, std::string_view text,
                                                    const BillingOptions& options, bool json_lines = false);

}  // namespace gpucost::io

#endif  // GPUCOST_IO_BILLING_H_
