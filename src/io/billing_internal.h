// Internals of the billing readers (private, not installed).
//
// A reader is a Format (FOCUS, CUR, GCP, Azure: which columns it reads and
// how one row becomes a cost line) instantiated over a row source: CsvRow
// (text fields of one CSV record), ArrowRow (one row of an Arrow record
// batch) or JsonRow (one BigQuery JSON line). Formats only talk to rows
// through the small interface below, so CSV, Parquet and JSON go through the
// very same normalisation.
#ifndef GPUCOST_SRC_IO_BILLING_INTERNAL_H_
#define GPUCOST_SRC_IO_BILLING_INTERNAL_H_

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/container/node_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gpucost/catalog.h"
#include "gpucost/columns.h"
#include "gpucost/detail/arrow_c_data.h"
#include "gpucost/io/billing.h"
#include "gpucost/io/csv.h"
#include "gpucost/status.h"
#include "io/cells.h"
#include "io/json_cells.h"

namespace gpucost::io::internal {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = absl::ascii_tolower(static_cast<unsigned char>(c));
  return out;
}

// Whether `text` contains `part`, ignoring ASCII case.
inline bool ContainsIgnoreCase(std::string_view text, std::string_view part) {
  return absl::StrContains(absl::AsciiStrToLower(ToAbsl(text)), absl::AsciiStrToLower(ToAbsl(part)));
}

// Maps `header` to `specs`: exact names first, then case-insensitively.
// `tag_key` says whether a column is a tag column and with which key.
Layout MapColumns(std::span<const std::string> header, std::span<const ColumnSpec> specs, int field_count,
                  std::optional<std::string> (*tag_key)(std::string_view column));

// ---- rows -------------------------------------------------------------------

class CsvRow {
 public:
  CsvRow(const CsvRecord& record, std::string_view source, const Layout& layout)
      : record_(record), source_(source), layout_(layout) {}

  [[nodiscard]] bool IsNull(int col) const {
    return col < 0 || static_cast<size_t>(col) >= record_.fields.size() ||
           IsNullText(TrimSpaces(record_.fields[col]));
  }
  [[nodiscard]] std::string_view Text(int col) const {
    return IsNull(col) ? std::string_view() : TrimSpaces(record_.fields[col]);
  }
  [[nodiscard]] Parsed Number(int col, double* out) const {
    if (IsNull(col)) return Parsed::kNull;
    return ParseDouble(record_.fields[col], out) ? Parsed::kOk : Parsed::kBad;
  }
  [[nodiscard]] Parsed Instant(int col, int64_t* out) const {
    if (IsNull(col)) return Parsed::kNull;
    return ParseInstant(record_.fields[col], out) ? Parsed::kOk : Parsed::kBad;
  }
  // A day: ISO 8601 or MM/DD/YYYY.
  [[nodiscard]] Parsed Day(int col, int64_t* out) const {
    if (IsNull(col)) return Parsed::kNull;
    return ParseInstant(record_.fields[col], out) || ParseUsDate(record_.fields[col], out) ? Parsed::kOk
                                                                                           : Parsed::kBad;
  }
  [[nodiscard]] bool Naive(int col) const { return !IsNull(col) && !HasZoneDesignator(Text(col)); }
  // CSV cells are always text (structured values are JSON text).
  [[nodiscard]] bool RawText(int col, std::string_view* text) const {
    *text = Text(col);
    return true;
  }
  [[nodiscard]] absl::Status Pairs(int, PairSink) const { return absl::OkStatus(); }
  [[nodiscard]] absl::Status Credits(int, CreditSink) const { return absl::OkStatus(); }
  // The cell as it is written, for messages.
  [[nodiscard]] std::string_view Shown(int col) const {
    return col < 0 || static_cast<size_t>(col) >= record_.fields.size() ? std::string_view()
                                                                         : record_.fields[col];
  }
  [[nodiscard]] absl::Status Error(std::string_view column, std::string_view what) const {
    return LineError(source_, record_.line, column, what);
  }
  [[nodiscard]] const Layout& layout() const { return layout_; }

 private:
  const CsvRecord& record_;
  std::string_view source_;
  const Layout& layout_;
};

// One column of an Arrow record batch, typed once per batch.
struct ArrowColumn {
  enum Kind {
    kUnsupported, kNullType, kString, kLargeString, kFloat64, kFloat32, kInt64, kInt32, kInt16, kInt8,
    kUInt64, kUInt32, kUInt16, kUInt8, kBool, kDate32, kDate64, kTimestamp, kMap, kList, kLargeList,
  };
  Kind kind = kUnsupported;
  const ArrowSchema* schema = nullptr;
  const ArrowArray* array = nullptr;
  int64_t ns_per_unit = 1;  // timestamps
  std::string_view format;  // the schema's, valid as long as the schema
  // Maps and lists of structs: the entries' fields, described once per batch.
  std::vector<ArrowColumn> fields;
  std::vector<std::string_view> field_names;

  // The entries' field named `name` (maps: "key"/"value" or the first/second
  // field), or nullptr.
  [[nodiscard]] const ArrowColumn* Field(std::string_view name) const;
};

ArrowColumn DescribeArrowColumn(const ArrowSchema& schema, const ArrowArray& array);
// Appends cell i of `c` to a row key (for finding rows read twice); false
// for a type it cannot render (the row then has no key).
bool AppendArrowCellKey(const ArrowColumn& c, int64_t i, std::string* key, std::string* scratch);

class ArrowRow {
 public:
  ArrowRow(std::span<const ArrowColumn> columns, int64_t index, int64_t row_number, std::string_view source,
           const Layout& layout)
      : columns_(columns), index_(index), row_number_(row_number), source_(source), layout_(layout) {}

  [[nodiscard]] bool IsNull(int col) const;
  [[nodiscard]] std::string_view Text(int col) const;
  [[nodiscard]] Parsed Number(int col, double* out) const;
  [[nodiscard]] Parsed Instant(int col, int64_t* out) const;
  [[nodiscard]] Parsed Day(int col, int64_t* out) const { return Instant(col, out); }
  // Strings without a zone; timestamps without a time zone; dates.
  [[nodiscard]] bool Naive(int col) const;
  [[nodiscard]] bool RawText(int col, std::string_view* text) const;
  [[nodiscard]] absl::Status Pairs(int col, PairSink sink) const;
  [[nodiscard]] absl::Status Credits(int col, CreditSink sink) const;
  [[nodiscard]] std::string_view Shown(int col) const { return Text(col); }
  [[nodiscard]] absl::Status Error(std::string_view column, std::string_view what) const {
    return RowError(source_, row_number_, column, what);
  }
  [[nodiscard]] const Layout& layout() const { return layout_; }

 private:
  std::span<const ArrowColumn> columns_;
  int64_t index_;       // row in the batch
  int64_t row_number_;  // row in the file (0-based)
  std::string_view source_;
  const Layout& layout_;
  mutable std::string scratch_;  // Text() of non-string columns
};

// ---- output -----------------------------------------------------------------

// One normalised cost line; amounts are NaN where the export has none.
struct Line {
  std::string_view resource_id;
  std::string_view resource_name;
  int64_t start = 0;
  int64_t end = 0;
  double billed = kNaN;
  double effective = kNaN;
  double list = kNaN;
  std::string_view provider, account, region, service, sku, instance_type, pricing, charge_category,
      commitment_id, commitment_status, currency;
  bool gpu_sku = false;             // the line itself is a GPU SKU
  bool lowercase_resource = false;  // ARM ids are case-insensitive (Azure)
  // Primary candidates (SEMANTICS 1.1): 0 never; 2 the resource's time line
  // (instance usage, GCP GPU SKU); 1 primary only when its resource has no
  // rank-2 line in the same period (a GCP VM's core SKU). Of the lines of the
  // best rank of one resource and period, the first is primary and bills the
  // sum of their quantity_hours (instance-hours, NaN when unknown).
  int primary_rank = 0;
  double quantity_hours = kNaN;
  std::string_view pricing_currency;
  std::string_view instance_id;  // GCP numeric instance id
  // The line names its resource only by instance_id (GCP): take the
  // canonical id of another line with that instance_id when there is one.
  bool resource_by_instance_id = false;
};

// Usage amount in `unit` as hours: seconds, minutes, hours, days in any
// common spelling ("seconds", "Hrs", "1 Hour", "10 Hours"); NaN otherwise.
double UsageHours(double amount, std::string_view unit);

// GCP Compute Engine instance names: "//compute.googleapis.com/projects/P/
// zones/Z/instances/X" (X the numeric id or the name) and the instance's name
// -> the canonical id "projects/P/zones/Z/instances/NAME" (GKE's providerID
// gce://P/Z/NAME spelled the same way), and X when it is numeric. False when
// `global_name` is not a Compute Engine instance.
bool GcpInstance(std::string_view global_name, std::string_view name, std::string* canonical,
                 std::string_view* numeric_id);

// The instance id `i-0abc` of an EC2 instance ARN
// (`arn:aws[-cn|-us-gov]:ec2:<region>:<account>:instance/i-0abc`, as AWS's
// FOCUS export writes ResourceId), the spelling the CUR, a node's providerID
// and DCGM use; empty for any other id.
std::string_view Ec2InstanceId(std::string_view arn);

// A line that takes part in a GCP committed-use discount, noted while reading
// so that amortize.cc can spread the fees once every line is known.
struct CommitmentNote {
  enum class Kind : uint8_t {
    kResourceFee,      // "Commitment v1: ..." fee (resource-based CUD)
    kSpendFee,         // "Commitment - dollar based v1: ..." fee (legacy spend-based CUD)
    kOffsetFee,        // a fee with FEE_UTILIZATION_OFFSET credits (new spend-based model)
    kResourceCovered,  // usage with COMMITTED_USAGE_DISCOUNT credits
    kSpendCovered,     // usage with COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE credits
  };
  int64_t line = 0;       // index of the committed line
  Kind kind = Kind::kResourceFee;
  std::string_view pool;  // stable: what fees and covered usage meet on (CudPool)
  double gross = 0;       // cost before credits
  double credit = 0;      // the CUD credits of the kind (<= 0): on-demand value covered
  // Resource fees and covered usage: usage.amount (committed / used units);
  // spend fees: the hourly commitment in on-demand dollars. NaN when absent.
  double quantity = kNaN;
  int32_t fee = -1;  // fees: index of the line's stable copy (LineBuilder::commitment_fee)
};

// The pool a CUD fee or covered usage line belongs to: "<region>/gpu:a100",
// "<region>/cpu:a2", "<region>/ram:n1", ...; "" when the description names no
// resource. Fee descriptions ("Commitment v1: A2 Cpu in Americas for 1 Year")
// and usage descriptions ("A2 Instance Core running in Americas") give the
// same pool for the same resource.
std::string CudPool(std::string_view region, std::string_view description, bool fee);
// Accelerator-optimized machine families (A2, A3, G2, ...): their core and
// memory commitments are GPU commitments.
bool IsGpuFamilyPool(std::string_view pool);

class LineBuilder;
// Spreads the noted CUD fees over the usage they cover, hour by hour (SEMANTICS
// 1.1, docs/formats.md): covered lines get their share of the fee added to the
// effective amount, the fee's effective amount becomes 0, and what the
// commitment did not cover becomes an Unused line of its own. Sum of `cost`
// before == after. Only for the effective amount; a no-op without notes.
absl::Status AmortizeCommitments(LineBuilder& out);

class LineBuilder {
 public:
  explicit LineBuilder(const BillingOptions& options);

  [[nodiscard]] const BillingOptions& options() const { return options_; }

  // Tags of the line being built; reset by Commit(). Views must stay valid
  // until Commit().
  template <typename Row>
  absl::Status TagsFromCell(const Row& row, int col);
  void AddTag(std::string_view key, std::string_view value, ValueKind kind) {
    pending_.push_back({key, value, kind});
  }
  // AddTag for views that die before Commit() (a JSON cell's parsed values):
  // copies kept until the tags are interned.
  void AddTagCopy(std::string_view key, std::string_view value, ValueKind kind) {
    const std::string& k = pending_owned_.emplace_back(key);
    const std::string& v = pending_owned_.emplace_back(value);
    AddTag(k, v, kind);
  }
  // The next line gets the tags of the line committed last (GCP credit lines).
  void RepeatLastTags() { pending_code_ = tag_codes_.empty() ? -1 : tag_codes_.back(); }
  // The value of `key` in a JSON object given as text ("" when absent),
  // cached by text. `*value` stays valid until the next call.
  absl::Status JsonValue(std::string_view text, std::string_view key, std::string_view* value);
  // A copy of `s` that stays valid as long as the builder.
  std::string_view Stable(std::string_view s) { return *stable_.insert(std::string(s)).first; }
  // The catalog's spelling of an instance type, or `name` when unknown.
  std::string_view CatalogInstanceType(std::string_view name);
  [[nodiscard]] bool KnownInstanceType(std::string_view name);
  // GPUs per instance of a catalog type; 0 when unknown or none.
  [[nodiscard]] int InstanceGpus(std::string_view name);

  // A timestamp without a zone, read as UTC by the parser, taken as local
  // time in options().tz. `earlier`/`later` are the two readings of a time
  // repeated by a daylight-saving change (equal otherwise). Errors for a
  // time that does not exist there.
  absl::Status Localise(int64_t naive, int64_t* earlier, int64_t* later, std::string* error);
  [[nodiscard]] bool has_tz() const { return has_tz_; }
  void NoteNaive() { report_.naive_timestamps = true; }

  // Appends the line; the amount options().amount names becomes `cost`.
  // `row_error` reports a bad amount against the row.
  absl::Status Commit(const Line& line, absl::FunctionRef<absl::Status(std::string_view)> row_error);

  [[nodiscard]] int64_t size() const { return static_cast<int64_t>(lines_.start.size()); }
  BillingReport& report() { return report_; }
  // A builder that keeps no line: Commit() only adds the chosen amount up per
  // currency (what a reader drops as read twice, in money).
  void TallyOnly() { tally_only_ = true; }
  [[nodiscard]] const std::vector<std::string>& tally_currencies() const { return tally_currencies_; }
  [[nodiscard]] const std::vector<double>& tally_amounts() const { return tally_amounts_; }
  CostLines Finish();

  // Committed-use discounts (amortize.cc): notes taken while reading, the
  // amounts of committed lines, and the tags of line `i` for the next Commit.
  // `fee`: the fee's line, kept (with stable strings) to build its unused line from.
  void NoteCommitment(CommitmentNote note, const Line* fee = nullptr);
  [[nodiscard]] const std::vector<CommitmentNote>& commitment_notes() const { return commitment_notes_; }
  [[nodiscard]] const Line& commitment_fee(int32_t i) const { return commitment_fees_[i]; }
  void SetEffective(int64_t i, double effective) {
    lines_.effective_cost[i] = effective;
    if (options_.amount == CostAmount::kEffective) lines_.cost[i] = effective;
  }
  [[nodiscard]] double effective(int64_t i) const { return lines_.effective_cost[i]; }
  [[nodiscard]] int64_t start(int64_t i) const { return lines_.start[i]; }
  void UseTagsOf(int64_t i) { pending_code_ = tag_codes_[i]; }

 private:
  struct Pair {
    std::string_view key, value;
    ValueKind kind;
  };
  struct TypeInfo {
    std::string canonical;
    bool known = false;
    bool gpu = false;
    int gpus = 0;
  };
  void ResolvePrimary(CostLines& out);
  int32_t InternPendingTags();
  const TypeInfo& Lookup(std::string_view name);

  BillingOptions options_;
  const Catalog* catalog_;
  CostLines lines_;
  StringEncoder resource_id_, provider_, account_, region_, service_, sku_, instance_type_, pricing_,
      charge_category_, commitment_id_, commitment_status_, currency_, resource_name_, pricing_currency_,
      instance_id_;
  std::vector<int8_t> rank_;
  std::vector<double> quantity_;
  std::vector<uint8_t> by_instance_id_;
  std::vector<uint8_t> not_machine_;  // commitment lines naming a resource: never GPU resources
  bool tally_only_ = false;
  std::vector<std::string> tally_currencies_;
  std::vector<double> tally_amounts_;
  BillingReport report_;
  bool has_tz_ = false;
  absl::TimeZone tz_;
  std::vector<StringEncoder> tag_value_encoders_;
  // Tags: distinct JSON objects and, per object, the expanded key values.
  std::vector<Pair> pending_;
  std::deque<std::string> pending_owned_;  // what AddTagCopy's pairs view
  int32_t pending_code_ = -1;  // a cached code instead of pending_
  absl::flat_hash_map<std::string, int32_t> tags_by_json_;
  absl::flat_hash_map<std::string, int32_t> tags_by_raw_text_;
  std::vector<std::string> tags_json_;
  std::vector<std::vector<std::string>> tags_expanded_;  // per tags code, per key ("" = absent)
  std::vector<std::vector<uint8_t>> tags_expanded_present_;
  std::vector<int32_t> tag_codes_;
  std::vector<CommitmentNote> commitment_notes_;
  std::vector<Line> commitment_fees_;
  absl::node_hash_map<std::string, TypeInfo> types_;  // stable: views escape
  absl::node_hash_map<std::string, std::string> json_values_;
  absl::node_hash_set<std::string> stable_;
  std::string json_scratch_;
};

template <typename Row>
absl::Status LineBuilder::TagsFromCell(const Row& row, int col) {
  pending_.clear();
  pending_owned_.clear();
  pending_code_ = -1;
  if (row.IsNull(col)) return absl::OkStatus();
  std::string_view text;
  if (row.RawText(col, &text)) {
    if (auto it = tags_by_raw_text_.find(ToAbsl(text)); it != tags_by_raw_text_.end()) {
      pending_code_ = it->second;
      return absl::OkStatus();
    }
    absl::Status status = ParseTagsJson(text, [&](std::string_view k, std::string_view v, ValueKind kind) {
      AddTagCopy(k, v, kind);
    });
    if (!status.ok()) {
      return row.Error(row.layout().names[col], std::string(status.message()));
    }
    pending_code_ = InternPendingTags();
    pending_.clear();
    pending_owned_.clear();
    tags_by_raw_text_.emplace(std::string(text), pending_code_);
    return absl::OkStatus();
  }
  GPUCOST_RETURN_IF_ERROR(
      row.Pairs(col, [&](std::string_view k, std::string_view v, ValueKind kind) { AddTagCopy(k, v, kind); }));
  pending_code_ = InternPendingTags();
  pending_.clear();
  pending_owned_.clear();
  return absl::OkStatus();
}

// Reports a bad or missing value of `field` on `row`.
template <typename Row>
absl::Status BadValue(const Row& row, int field, std::string_view what) {
  const Layout& layout = row.layout();
  if (!layout.has(field)) return row.Error(layout.name(field), what);
  return row.Error(layout.name(field), absl::StrCat("'", ToAbsl(row.Shown(layout.col(field))), "' ", ToAbsl(what)));
}

// Reads a required (or optional) number; null -> `fallback` when optional.
template <typename Row>
absl::Status ReadAmount(const Row& row, int field, bool required, double fallback, double* out) {
  const Parsed p = row.Number(row.layout().col(field), out);
  if (p == Parsed::kOk) return absl::OkStatus();
  if (p == Parsed::kBad) return BadValue(row, field, "is not a number");
  if (required) return row.Error(row.layout().name(field), "missing amount");
  *out = fallback;
  return absl::OkStatus();
}

// [start, end) read as naive local times -> UTC. Around a daylight-saving
// change a repeated time has two readings; the pair that keeps the period's
// written length is taken (the earlier one when both do).
template <typename Row>
absl::Status LocalisePeriod(const Row& row, int start_field, int end_field, int64_t* start, int64_t* end,
                            LineBuilder& out) {
  const int64_t length = *end - *start;
  int64_t s[2], e[2];
  std::string error;
  if (!out.Localise(*start, &s[0], &s[1], &error).ok()) return BadValue(row, start_field, error);
  if (!out.Localise(*end, &e[0], &e[1], &error).ok()) return BadValue(row, end_field, error);
  for (int a = 0; a < 2; ++a) {
    for (int b = 0; b < 2; ++b) {
      if (e[b] - s[a] == length) {
        *start = s[a];
        *end = e[b];
        return absl::OkStatus();
      }
    }
  }
  *start = s[0];
  *end = e[1];
  return absl::OkStatus();
}

// Reads the charge period; an end before the start is an error. Naive
// timestamps are local times in the builder's tz (when it has one).
template <typename Row>
absl::Status ReadPeriod(const Row& row, int start_field, int end_field, int64_t* start, int64_t* end,
                        LineBuilder& out) {
  const Layout& layout = row.layout();
  bool naive = false;
  for (auto [field, value] : {std::pair{start_field, start}, std::pair{end_field, end}}) {
    const Parsed p = row.Instant(layout.col(field), value);
    if (p == Parsed::kBad) return BadValue(row, field, "is not an ISO 8601 timestamp");
    if (p == Parsed::kNull) return row.Error(layout.name(field), "missing timestamp");
    naive |= row.Naive(layout.col(field));
  }
  if (naive) {
    out.NoteNaive();
    if (out.has_tz()) GPUCOST_RETURN_IF_ERROR(LocalisePeriod(row, start_field, end_field, start, end, out));
  }
  if (*end < *start) return BadValue(row, end_field, "is before the start of the period");
  return absl::OkStatus();
}

// A day (Azure's date column): [day, next day) in the builder's tz.
template <typename Row>
absl::Status ReadDay(const Row& row, int field, int64_t* start, int64_t* end, LineBuilder& out) {
  const Layout& layout = row.layout();
  const Parsed day = row.Day(layout.col(field), start);
  if (day == Parsed::kBad) return BadValue(row, field, "is not a date");
  if (day == Parsed::kNull) return row.Error(layout.name(field), "missing date");
  *end = *start + kNanosPerDay;
  // Azure's days are UTC days unless the caller says otherwise: not noted.
  if (row.Naive(layout.col(field))) {
    if (out.has_tz()) {
      // A local day's midnights: its length changes on daylight-saving days.
      const int64_t naive_start = *start, naive_end = *end;
      std::string error;
      int64_t later = 0;
      if (!out.Localise(naive_start, start, &later, &error).ok() ||
          !out.Localise(naive_end, end, &later, &error).ok()) {
        return BadValue(row, field, error);
      }
    }
  }
  return absl::OkStatus();
}

// The value of `key` in a cell holding a JSON object (text) or a map
// (Arrow, JSON); "" when absent. Valid until the builder's next lookup.
template <typename Row>
absl::Status CellKeyValue(const Row& row, int col, std::string_view key, LineBuilder& out, std::string_view* value) {
  *value = {};
  if (row.IsNull(col)) return absl::OkStatus();
  std::string_view text;
  if (row.RawText(col, &text)) {
    absl::Status status = out.JsonValue(text, key, value);
    if (!status.ok()) return row.Error(row.layout().names[col], std::string(status.message()));
    return status;
  }
  return row.Pairs(col, [&](std::string_view k, std::string_view v, ValueKind) {
    if (k == key) *value = v;
  });
}

// An Azure scale set's line names its instance in the additional-info JSON
// (cost details' AdditionalInfo, FOCUS's x_SkuDetails) as VMName
// "<scale set>_<N>": *resource_id becomes the instance's own ARM id
// (".../virtualMachines/<N>"), as AKS's providerID has it. Any other id or
// VMName leaves it as it is.
template <typename Row>
absl::Status AzureScaleSetInstance(const Row& row, int info_col, LineBuilder& out, std::string_view* resource_id) {
  constexpr std::string_view kScaleSets = "/virtualMachineScaleSets";  // then "/<scale set>", any case
  const std::string_view id = *resource_id;
  const size_t slash = id.rfind('/');
  if (slash == std::string_view::npos || slash < kScaleSets.size()) return absl::OkStatus();
  if (!absl::EqualsIgnoreCase(absl::string_view(id.data() + slash - kScaleSets.size(), kScaleSets.size()),
                              absl::string_view(kScaleSets.data(), kScaleSets.size()))) {
    return absl::OkStatus();
  }
  std::string_view vm_name;
  GPUCOST_RETURN_IF_ERROR(CellKeyValue(row, info_col, "VMName", out, &vm_name));
  const size_t underscore = vm_name.rfind('_');
  const std::string_view scale_set = id.substr(slash + 1);
  if (underscore != std::string_view::npos && underscore + 1 < vm_name.size() &&
      absl::EqualsIgnoreCase(absl::string_view(vm_name.data(), underscore),
                             absl::string_view(scale_set.data(), scale_set.size()))) {
    *resource_id = out.Stable(absl::StrCat(absl::string_view(id.data(), id.size()), "/virtualMachines/",
                                           absl::string_view(vm_name.data() + underscore + 1,
                                                             vm_name.size() - underscore - 1)));
  }
  return absl::OkStatus();
}

// The instance type in an AWS usage type: "USW2-BoxUsage:p4d.24xlarge" ->
// "p4d.24xlarge"; "" when there is none.
std::string_view InstanceTypeFromUsageType(std::string_view usage_type);

// An Azure VM meter name spelled as a VM size: "NC4as T4 v3" (or "NC4as T4
// v3 Spot") -> "Standard_NC4as_T4_v3". Callers check the catalog knows it.
std::string AzureVmSizeFromMeter(std::string_view meter);

// ---- formats ------------------------------------------------------------------

// Each format: its fields, the columns it requires for `options`, tag
// columns, and the normalisation of one row.
#define GPUCOST_BILLING_FORMAT_(Name)                                                              \
  struct Name {                                                                                     \
    static std::span<const ColumnSpec> Columns();                                                   \
    static int FieldCount();                                                                        \
    static std::vector<int> Required(const BillingOptions& options);                               \
    static std::optional<std::string> TagColumnKey(std::string_view column);                       \
    static absl::Status CheckOptions(const BillingOptions& options);                               \
    /* Fields whose values identify a row (a repeat is a row read twice); */                        \
    /* empty: the whole row does. */                                                                \
    static std::vector<int> IdentityFields();                                                       \
    template <typename Row>                                                                         \
    static absl::Status Normalise(const Row& row, LineBuilder& out);                                \
  }

GPUCOST_BILLING_FORMAT_(FocusFormat);
GPUCOST_BILLING_FORMAT_(CurFormat);
GPUCOST_BILLING_FORMAT_(GcpFormat);
GPUCOST_BILLING_FORMAT_(AzureFormat);

#undef GPUCOST_BILLING_FORMAT_

}  // namespace gpucost::io::internal

#endif  // GPUCOST_SRC_IO_BILLING_INTERNAL_H_
