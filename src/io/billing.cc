#include "gpucost/io/billing.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include <algorithm>
#include <functional>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "billing_internal.h"
#include "gpucost/status.h"

namespace gpucost::io {

struct BillRows::Impl {
  // The first hash is absl's, well mixed: the table uses it as it is instead
  // of hashing the pair again.
  struct FirstHash {
    size_t operator()(const std::pair<uint64_t, uint64_t>& h) const { return static_cast<size_t>(h.first); }
  };
  absl::flat_hash_set<std::pair<uint64_t, uint64_t>, FirstHash> seen;
};
BillRows::BillRows() : impl_(std::make_unique<Impl>()) {}
BillRows::~BillRows() = default;
// Two independent 64-bit hashes keep a false match out of reach (about 2^-128
// per pair) without keeping the rows.
bool BillRows::Insert(std::string_view key) {
  const std::pair<uint64_t, uint64_t> h{absl::HashOf(internal::ToAbsl(key)), std::hash<std::string_view>{}(key)};
  return impl_->seen.insert(h).second;
}
int64_t BillRows::size() const { return static_cast<int64_t>(impl_->seen.size()); }

CostColumns CostLines::columns() const {
  CostColumns out{.resource_id = resource_id.view(), .start = start, .end = end, .cost = cost,
                  .list_cost = list_cost, .primary = primary, .quantity_hours = quantity_hours};
  out.currency = ViewIfAny(currency);
  return out;
}

absl::StatusOr<CostAmount> ParseCostAmount(std::string_view amount) {
  if (amount == "effective" || amount == "amortized") return CostAmount::kEffective;
  if (amount == "billed") return CostAmount::kBilled;
  if (amount == "list") return CostAmount::kList;
  return ParameterError("amount", absl::StrCat("unknown amount '", absl::string_view(amount.data(), amount.size()),
                                               "' (expected \"effective\", \"amortized\", \"billed\" or \"list\")"));
}

namespace internal {

Layout MapColumns(std::span<const std::string> header, std::span<const ColumnSpec> specs, int field_count,
                  std::optional<std::string> (*tag_key)(std::string_view column)) {
  Layout layout;
  layout.column.assign(field_count, -1);
  layout.field_names.resize(field_count);
  layout.names.assign(header.begin(), header.end());
  absl::flat_hash_map<std::string, int> exact, lower;
  for (size_t i = 0; i < header.size(); ++i) {
    exact.try_emplace(header[i], static_cast<int>(i));
    lower.try_emplace(Lower(header[i]), static_cast<int>(i));
  }
  for (const ColumnSpec& spec : specs) {
    int found = -1;
    for (std::string_view name : spec.names) {
      if (name.empty()) break;
      if (auto it = exact.find(ToAbsl(name)); it != exact.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) {
      for (std::string_view name : spec.names) {
        if (name.empty()) break;
        if (auto it = lower.find(Lower(name)); it != lower.end()) {
          found = it->second;
          break;
        }
      }
    }
    layout.column[spec.field] = found;
    layout.field_names[spec.field] = found >= 0 ? header[found] : std::string(spec.names[0]);
  }
  if (tag_key != nullptr) {
    for (size_t i = 0; i < header.size(); ++i) {
      if (std::optional<std::string> key = tag_key(header[i])) {
        layout.tag_columns.emplace_back(static_cast<int>(i), *std::move(key));
      }
    }
  }
  return layout;
}

double UsageHours(double amount, std::string_view unit) {
  if (!std::isfinite(amount)) return kNaN;
  std::string u = absl::AsciiStrToLower(ToAbsl(TrimSpaces(unit)));
  // Azure writes a unit with a multiplier: "1 Hour", "10 Hours", "100 Hours".
  double scale = 1;
  if (const size_t space = u.find(' '); space != std::string::npos) {
    double multiplier = 0;
    if (absl::SimpleAtod(absl::string_view(u).substr(0, space), &multiplier) && multiplier > 0) {
      scale = multiplier;
      u.erase(0, space + 1);
    }
  }
  static const std::pair<std::string_view, double> kUnits[] = {
      {"s", 1.0 / 3600},     {"sec", 1.0 / 3600},   {"secs", 1.0 / 3600},   {"second", 1.0 / 3600},
      {"seconds", 1.0 / 3600}, {"min", 1.0 / 60},   {"mins", 1.0 / 60},     {"minute", 1.0 / 60},
      {"minutes", 1.0 / 60}, {"h", 1},              {"hr", 1},              {"hrs", 1},
      {"hour", 1},           {"hours", 1},          {"day", 24},            {"days", 24},
  };
  for (const auto& [name, hours] : kUnits) {
    if (u == name) return amount * scale * hours;
  }
  return kNaN;
}

std::string_view Ec2InstanceId(std::string_view arn) {
  if (!absl::StartsWith(ToAbsl(arn), "arn:aws")) return {};
  // partition, service, region, account, then "instance/<id>"
  const std::vector<absl::string_view> fields = absl::StrSplit(ToAbsl(arn), absl::MaxSplits(':', 5));
  if (fields.size() != 6 || fields[2] != "ec2") return {};
  for (char c : fields[4]) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return {};
  }
  absl::string_view resource = fields[5];
  if (!absl::ConsumePrefix(&resource, "instance/i-") || resource.empty()) return {};
  for (char c : resource) {
    const auto u = static_cast<unsigned char>(c);
    if (!absl::ascii_isdigit(u) && !(c >= 'a' && c <= 'f')) return {};
  }
  return arn.substr(arn.size() - resource.size() - 2);
}

bool GcpInstance(std::string_view global_name, std::string_view name, std::string* canonical,
                 std::string_view* numeric_id) {
  constexpr std::string_view kPrefix = "//compute.googleapis.com/";
  *numeric_id = {};
  if (!absl::StartsWith(ToAbsl(global_name), ToAbsl(kPrefix))) return false;
  const std::string_view path = global_name.substr(kPrefix.size());
  std::vector<absl::string_view> parts = absl::StrSplit(ToAbsl(path), '/');
  if (parts.size() != 6 || parts[0] != "projects" || parts[2] != "zones" || parts[4] != "instances" ||
      parts[1].empty() || parts[3].empty() || parts[5].empty()) {
    return false;
  }
  const absl::string_view last = parts[5];
  const bool numeric = std::all_of(last.begin(), last.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (numeric) *numeric_id = std::string_view(last.data(), last.size());
  const absl::string_view instance = numeric && !name.empty() ? ToAbsl(name) : last;
  *canonical = absl::StrCat("projects/", parts[1], "/zones/", parts[3], "/instances/", instance);
  return true;
}

std::string_view InstanceTypeFromUsageType(std::string_view usage_type) {
  const size_t at = usage_type.find("Usage:");
  if (at == std::string_view::npos) return {};
  std::string_view type = usage_type.substr(at + 6);
  if (type.find('.') == std::string_view::npos || type.find(':') != std::string_view::npos) return {};
  return type;
}

std::string AzureVmSizeFromMeter(std::string_view meter) {
  std::string size = absl::StrCat("Standard_", ToAbsl(meter));
  for (std::string_view suffix : {" Spot", " Low Priority"}) {
    if (absl::EndsWith(size, ToAbsl(suffix))) size.resize(size.size() - suffix.size());
  }
  for (char& c : size) c = c == ' ' ? '_' : c;
  return size;
}

// ---- the reader ---------------------------------------------------------------

namespace {

template <typename Format>
class ReaderImpl final : public BillingReader {
 public:
  explicit ReaderImpl(BillingOptions options)
      : options_(std::move(options)),
        builder_(options_),
        dropped_(options_),
        csv_(options_.source),
        seen_(options_.seen != nullptr ? options_.seen : std::make_shared<BillRows>()) {
    dropped_.TallyOnly();
  }

  absl::Status FeedCsv(std::string_view chunk) override {
    GPUCOST_RETURN_IF_ERROR(Enter(Mode::kCsv));
    status_ = csv_.Feed(chunk, [this](const CsvRecord& r) { return OnCsvRecord(r); });
    return status_;
  }

  absl::Status FeedJsonLines(std::string_view chunk) override {
    GPUCOST_RETURN_IF_ERROR(Enter(Mode::kJson));
    if constexpr (!std::is_same_v<Format, GcpFormat>) {
      return status_ = ParameterError("input", "JSON lines are read for GCP billing exports only");
    } else {
      if (json_ == nullptr) {
        std::vector<std::vector<std::string>> paths(Format::FieldCount());
        json_layout_.column.resize(Format::FieldCount());
        json_layout_.field_names.resize(Format::FieldCount());
        json_layout_.names.resize(Format::FieldCount());
        for (const ColumnSpec& spec : Format::Columns()) {
          for (std::string_view name : spec.names) {
            if (!name.empty()) paths[spec.field].emplace_back(name);
          }
          json_layout_.column[spec.field] = spec.field;
          json_layout_.field_names[spec.field] = std::string(spec.names[0]);
          json_layout_.names[spec.field] = std::string(spec.names[0]);
        }
        json_ = std::make_unique<JsonLinesParser>(std::move(paths));
      }
      pending_json_.append(chunk);
      size_t begin = 0;
      while (true) {
        const size_t newline = pending_json_.find('\n', begin);
        if (newline == std::string::npos) break;
        status_ = OnJsonLine(std::string_view(pending_json_).substr(begin, newline - begin));
        if (!status_.ok()) return status_;
        begin = newline + 1;
      }
      pending_json_.erase(0, begin);
      return status_;
    }
  }

  absl::Status FeedArrow(const ArrowSchema& schema, const ArrowArray& batch) override {
    GPUCOST_RETURN_IF_ERROR(Enter(Mode::kArrow));
    if (schema.format == nullptr || std::string_view(schema.format) != "+s" ||
        schema.n_children != batch.n_children) {
      return status_ = TableError(options_.source, "an Arrow record batch (a struct array) is expected");
    }
    std::vector<std::string> names;
    for (int64_t k = 0; k < schema.n_children; ++k) {
      names.emplace_back(schema.children[k]->name == nullptr ? "" : schema.children[k]->name);
    }
    if (!have_header_ || names != header_) {
      header_ = names;
      layout_ = MapColumns(header_, Format::Columns(), Format::FieldCount(), &Format::TagColumnKey);
      for (int field : Format::Required(options_)) {
        if (!layout_.has(field)) {
          return status_ = TableError(options_.source,
                                      absl::StrCat("missing required column '", layout_.name(field), "'"));
        }
      }
      have_header_ = true;
      IdentityColumns();
    }
    std::vector<ArrowColumn> columns;
    columns.reserve(schema.n_children);
    for (int64_t k = 0; k < schema.n_children; ++k) {
      columns.push_back(DescribeArrowColumn(*schema.children[k], *batch.children[k]));
    }
    for (int field = 0; field < Format::FieldCount(); ++field) {
      const int col = layout_.col(field);
      if (col >= 0 && columns[col].kind == ArrowColumn::kUnsupported) {
        return status_ = TableError(options_.source, absl::StrCat("column '", header_[col], "' has Arrow type '",
                                                                  ToAbsl(columns[col].format),
                                                                  "', which is not supported"));
      }
    }
    for (int64_t i = 0; i < batch.length; ++i) {
      ArrowRow row(columns, i, rows_, options_.source, layout_);
      ++rows_;
      if (check_duplicates_) {
        bool keyed = true;
        if (identity_.empty()) {
          key_.clear();
          for (const ArrowColumn& c : columns) keyed = keyed && AppendArrowCellKey(c, i, &key_, &scratch_);
        } else {
          IdentityKey(row);
        }
        // A row with a column of a type it cannot render has no key: kept.
        if (keyed && Repeated(key_)) {
          status_ = Format::Normalise(row, dropped_);  // its money, counted
          if (!status_.ok()) return status_;
          continue;
        }
      }
      status_ = Format::Normalise(row, builder_);
      if (!status_.ok()) return status_;
    }
    return status_;
  }

  absl::Status FailAtInputPosition(std::string_view what) override {
    if (!status_.ok()) return status_;
    if (mode_ == Mode::kJson) {
      return status_ = LineError(options_.source, json_line_ + 1, "*", what);
    }
    const int col = csv_.pending_column();
    const std::string column =
        col < static_cast<int>(header_.size()) ? header_[col] : absl::StrCat("#", col + 1);
    return status_ = LineError(options_.source, csv_.pending_line(), column, what);
  }

  absl::StatusOr<CostLines> Finish() override {
    if (!status_.ok()) return status_;
    if (mode_ == Mode::kNone) return status_ = TableError(options_.source, "is empty (no header line)");
    if (mode_ == Mode::kCsv) {
      status_ = csv_.Finish([this](const CsvRecord& r) { return OnCsvRecord(r); }, header_);
      if (!status_.ok()) return status_;
      if (!have_header_) return status_ = TableError(options_.source, "is empty (no header line)");
    } else if (mode_ == Mode::kJson && !pending_json_.empty()) {
      status_ = OnJsonLine(pending_json_);
      pending_json_.clear();
      if (!status_.ok()) return status_;
    }
    status_ = AmortizeCommitments(builder_);  // GCP CUDs; nothing for other formats
    if (!status_.ok()) return status_;
    status_ = absl::FailedPreconditionError("the reader has finished");
    builder_.report().rows_read = rows_;
    builder_.report().duplicates_dropped = duplicates_;
    builder_.report().duplicate_currencies = dropped_.tally_currencies();
    builder_.report().duplicate_cost = dropped_.tally_amounts();
    if constexpr (std::is_same_v<Format, GcpFormat>) {
      // The normaliser marks an export with resource columns (the detailed one).
      if (builder_.report().gcp_export.empty()) builder_.report().gcp_export = "standard";
    }
    return builder_.Finish();
  }

  int64_t rows() const override { return rows_; }

 private:
  enum class Mode { kNone, kCsv, kJson, kArrow };

  // Whether the row whose key is `key` was read before, by this reader or
  // another part's sharing BillingOptions::seen (then counted; the caller
  // tallies its money through dropped_).
  bool Repeated(std::string_view key) {
    if (seen_->Insert(key)) return false;
    ++duplicates_;
    return true;
  }

  // The identity fields of this layout, or empty when the whole row is the
  // identity; `*check` false when the format's identity columns are absent.
  void IdentityColumns() {
    identity_.clear();
    check_duplicates_ = true;
    for (int field : Format::IdentityFields()) {
      if (!layout_.has(field)) {
        check_duplicates_ = false;
        identity_.clear();
        return;
      }
      identity_.push_back(layout_.col(field));
    }
  }

  template <typename Row>
  std::string_view IdentityKey(const Row& row) {
    key_.clear();
    for (int col : identity_) {
      key_.append(row.Text(col));
      key_.push_back('\x1f');
    }
    return key_;
  }

  absl::Status Enter(Mode mode) {
    if (!status_.ok()) return status_;
    if (mode_ != Mode::kNone && mode_ != mode) {
      return status_ = ParameterError("input", "one reader reads one kind of input (CSV, JSON lines or Arrow)");
    }
    mode_ = mode;
    return absl::OkStatus();
  }

  absl::Status OnCsvRecord(const CsvRecord& record) {
    if (!have_header_) {
      header_.clear();
      for (std::string_view f : record.fields) header_.emplace_back(TrimSpaces(f));
      layout_ = MapColumns(header_, Format::Columns(), Format::FieldCount(), &Format::TagColumnKey);
      for (int field : Format::Required(options_)) {
        if (!layout_.has(field)) {
          return LineError(options_.source, record.line, layout_.name(field), "missing required column");
        }
      }
      have_header_ = true;
      IdentityColumns();
      return absl::OkStatus();
    }
    if (record.fields.size() != header_.size()) {
      const size_t n = record.fields.size();
      return LineError(options_.source, record.line, n < header_.size() ? header_[n] : absl::StrCat("#", n),
                       absl::StrCat("expected ", header_.size(), " fields, found ", n));
    }
    ++rows_;
    CsvRow row(record, options_.source, layout_);
    if (check_duplicates_) {
      if (identity_.empty()) {
        key_.clear();
        for (std::string_view f : record.fields) {
          key_.append(f);
          key_.push_back('\x1f');
        }
        if (Repeated(key_)) return Format::Normalise(row, dropped_);
      } else if (Repeated(IdentityKey(row))) {
        return Format::Normalise(row, dropped_);
      }
    }
    return Format::Normalise(row, builder_);
  }

  absl::Status OnJsonLine(std::string_view text) {
    ++json_line_;
    if (text.find_first_not_of(" \t\r") == std::string_view::npos) return absl::OkStatus();
    GPUCOST_RETURN_IF_ERROR(json_->Parse(text, options_.source, json_line_));
    ++rows_;
    JsonRow row(json_->line(), json_line_, options_.source, json_layout_);
    if (Repeated(Format::IdentityFields().empty() ? TrimSpaces(text) : IdentityKey(row))) {
      return Format::Normalise(row, dropped_);
    }
    return Format::Normalise(row, builder_);
  }

  BillingOptions options_;
  LineBuilder builder_;
  LineBuilder dropped_;  // tallies the money of rows read twice; keeps no line
  CsvTokenizer csv_;
  Mode mode_ = Mode::kNone;
  absl::Status status_;
  bool have_header_ = false;
  std::vector<std::string> header_;
  Layout layout_;
  int64_t rows_ = 0;
  // JSON lines
  std::unique_ptr<JsonLinesParser> json_;
  Layout json_layout_;
  std::string pending_json_;
  int64_t json_line_ = 0;
  // Rows read twice.
  std::shared_ptr<BillRows> seen_;
  std::vector<int> identity_;
  bool check_duplicates_ = true;
  int64_t duplicates_ = 0;
  std::string key_, scratch_;
};

}  // namespace
}  // namespace internal

BillingReader::~BillingReader() = default;

namespace {
absl::Status CheckTimeZone(const BillingOptions& options) {
  absl::TimeZone tz;
  if (!options.tz.empty() && !absl::LoadTimeZone(options.tz, &tz)) {
    return ParameterError("tz", absl::StrCat("unknown time zone '", options.tz, "'"));
  }
  return absl::OkStatus();
}
}  // namespace

absl::StatusOr<std::unique_ptr<BillingReader>> BillingReader::Create(BillingFormat format, BillingOptions options) {
  for (size_t k = 0; k < options.expand_tags.size(); ++k) {
    if (options.expand_tags[k].empty()) return ParameterError("expand_tags", "a tag key is empty");
    for (size_t j = 0; j < k; ++j) {
      if (options.expand_tags[j] == options.expand_tags[k]) {
        return ParameterError("expand_tags", absl::StrCat("'", options.expand_tags[k], "' is listed twice"));
      }
    }
  }
  switch (format) {
    case BillingFormat::kFocus:
      GPUCOST_RETURN_IF_ERROR(CheckTimeZone(options));
      GPUCOST_RETURN_IF_ERROR(internal::FocusFormat::CheckOptions(options));
      return std::make_unique<internal::ReaderImpl<internal::FocusFormat>>(std::move(options));
    case BillingFormat::kCur:
      GPUCOST_RETURN_IF_ERROR(CheckTimeZone(options));
      GPUCOST_RETURN_IF_ERROR(internal::CurFormat::CheckOptions(options));
      return std::make_unique<internal::ReaderImpl<internal::CurFormat>>(std::move(options));
    case BillingFormat::kGcp:
      GPUCOST_RETURN_IF_ERROR(CheckTimeZone(options));
      GPUCOST_RETURN_IF_ERROR(internal::GcpFormat::CheckOptions(options));
      return std::make_unique<internal::ReaderImpl<internal::GcpFormat>>(std::move(options));
    case BillingFormat::kAzure:
      GPUCOST_RETURN_IF_ERROR(CheckTimeZone(options));
      GPUCOST_RETURN_IF_ERROR(internal::AzureFormat::CheckOptions(options));
      return std::make_unique<internal::ReaderImpl<internal::AzureFormat>>(std::move(options));
  }
  return ParameterError("format", "unknown billing format");
}

namespace {

template <typename Format>
std::vector<std::string> NamesOf() {
  std::vector<std::string> names;
  for (const internal::ColumnSpec& spec : Format::Columns()) {
    for (std::string_view name : spec.names) {
      if (!name.empty()) names.emplace_back(name);
    }
  }
  return names;
}

}  // namespace

std::vector<std::string> BillingColumnNames(BillingFormat format) {
  switch (format) {
    case BillingFormat::kFocus: return NamesOf<internal::FocusFormat>();
    case BillingFormat::kCur: return NamesOf<internal::CurFormat>();
    case BillingFormat::kGcp: return NamesOf<internal::GcpFormat>();
    case BillingFormat::kAzure: return NamesOf<internal::AzureFormat>();
  }
  return {};
}

bool IsBillingTagColumn(BillingFormat format, std::string_view column) {
  switch (format) {
    case BillingFormat::kFocus: return internal::FocusFormat::TagColumnKey(column).has_value();
    case BillingFormat::kCur: return internal::CurFormat::TagColumnKey(column).has_value();
    case BillingFormat::kGcp: return internal::GcpFormat::TagColumnKey(column).has_value();
    case BillingFormat::kAzure: return internal::AzureFormat::TagColumnKey(column).has_value();
  }
  return false;
}

absl::StatusOr<CostLines> ReadBilling(BillingFormat format, std::string_view text, const BillingOptions& options,
                                      bool json_lines) {
  GPUCOST_ASSIGN_OR_RETURN(std::unique_ptr<BillingReader> reader, BillingReader::Create(format, options));
  GPUCOST_RETURN_IF_ERROR(json_lines ? reader->FeedJsonLines(text) : reader->FeedCsv(text));
  return reader->Finish();
}

}  // namespace gpucost::io
