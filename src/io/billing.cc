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

absl::StatusOr<CostAmount> ParseCostAmount(std::string_view amount) {
  if (amount == "effective" || amount == "amortized") return CostAmount::kEffective;
  if (amount == "billed") return CostAmount::kBilled;
  if (amount == "list") return CostAmount::kList;
  return ParameterError("amount", absl::StrCat("unknown amount '", absl::string_view(amount.data(), amount.size()),
                                               "' (expected \"effective\", \"amortized\", \"billed\" or \"list\")"));
}

namespace internal {

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = absl::ascii_tolower(static_cast<unsigned char>(c));
  return out;
}

void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out->append("\\u00");
          out->push_back(kHex[(c >> 4) & 0xF]);
          out->push_back(kHex[c & 0xF]);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

void AddOrNull(StringEncoder& encoder, std::string_view value) {
  if (value.empty()) {
    encoder.AddNull();
  } else {
    encoder.Add(value);
  }
}

}  // namespace

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

// ---- Arrow --------------------------------------------------------------------

namespace {

bool Valid(const ArrowArray& a, int64_t i) {
  if (a.null_count == 0 || a.buffers[0] == nullptr) return true;
  const int64_t bit = a.offset + i;
  return (static_cast<const uint8_t*>(a.buffers[0])[bit >> 3] >> (bit & 7)) & 1;
}

template <typename T>
T ValueAt(const ArrowArray& a, int64_t i) {
  return static_cast<const T*>(a.buffers[1])[a.offset + i];
}

std::string_view StringAt(const ArrowArray& a, bool large, int64_t i) {
  const int64_t j = a.offset + i;
  const char* data = static_cast<const char*>(a.buffers[2]);
  if (large) {
    const auto* off = static_cast<const int64_t*>(a.buffers[1]);
    return {data + off[j], static_cast<size_t>(off[j + 1] - off[j])};
  }
  const auto* off = static_cast<const int32_t*>(a.buffers[1]);
  return {data + off[j], static_cast<size_t>(off[j + 1] - off[j])};
}

bool IsStringKind(ArrowColumn::Kind k) { return k == ArrowColumn::kString || k == ArrowColumn::kLargeString; }

bool CellIsNull(const ArrowColumn& c, int64_t i) {
  return c.kind == ArrowColumn::kNullType || !Valid(*c.array, i);
}

// Numbers of any numeric kind as double; false for other kinds.
bool NumericAt(const ArrowColumn& c, int64_t i, double* out) {
  const ArrowArray& a = *c.array;
  switch (c.kind) {
    case ArrowColumn::kFloat64: *out = ValueAt<double>(a, i); return true;
    case ArrowColumn::kFloat32: *out = ValueAt<float>(a, i); return true;
    case ArrowColumn::kInt64: *out = static_cast<double>(ValueAt<int64_t>(a, i)); return true;
    case ArrowColumn::kInt32: *out = ValueAt<int32_t>(a, i); return true;
    case ArrowColumn::kInt16: *out = ValueAt<int16_t>(a, i); return true;
    case ArrowColumn::kInt8: *out = ValueAt<int8_t>(a, i); return true;
    case ArrowColumn::kUInt64: *out = static_cast<double>(ValueAt<uint64_t>(a, i)); return true;
    case ArrowColumn::kUInt32: *out = ValueAt<uint32_t>(a, i); return true;
    case ArrowColumn::kUInt16: *out = ValueAt<uint16_t>(a, i); return true;
    case ArrowColumn::kUInt8: *out = ValueAt<uint8_t>(a, i); return true;
    default: return false;
  }
}

// A cell as text (strings as they are; numbers and booleans rendered).
std::string_view CellText(const ArrowColumn& c, int64_t i, std::string* scratch, ValueKind* kind) {
  *kind = ValueKind::kRaw;
  if (CellIsNull(c, i)) return "null";
  if (IsStringKind(c.kind)) {
    *kind = ValueKind::kString;
    return StringAt(*c.array, c.kind == ArrowColumn::kLargeString, i);
  }
  if (c.kind == ArrowColumn::kBool) {
    const int64_t bit = c.array->offset + i;
    return (static_cast<const uint8_t*>(c.array->buffers[1])[bit >> 3] >> (bit & 7)) & 1 ? "true" : "false";
  }
  if (c.kind == ArrowColumn::kTimestamp || c.kind == ArrowColumn::kDate32 || c.kind == ArrowColumn::kDate64) {
    const int64_t v = c.kind == ArrowColumn::kDate32 ? ValueAt<int32_t>(*c.array, i) : ValueAt<int64_t>(*c.array, i);
    *scratch = std::to_string(v);
    return *scratch;
  }
  double v = 0;
  if (NumericAt(c, i, &v)) {
    char buffer[32];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), v);
    scratch->assign(buffer, ec == std::errc() ? end : buffer);
    return *scratch;
  }
  *scratch = absl::StrCat("<", ToAbsl(c.format), ">");
  return *scratch;
}

// [begin, end) of list or map entry i.
std::pair<int64_t, int64_t> ListRange(const ArrowColumn& c, int64_t i) {
  const int64_t j = c.array->offset + i;
  if (c.kind == ArrowColumn::kLargeList) {
    const auto* off = static_cast<const int64_t*>(c.array->buffers[1]);
    return {off[j], off[j + 1]};
  }
  const auto* off = static_cast<const int32_t*>(c.array->buffers[1]);
  return {off[j], off[j + 1]};
}

std::string TypeError(const ArrowColumn& c, std::string_view expected) {
  return absl::StrCat("has Arrow type '", ToAbsl(c.format), "', expected ", ToAbsl(expected));
}

}  // namespace

// Appends cell i of `c` to a row key: its text, list and map entries
// field by field. False for a type it cannot render (the row then has no key).
bool AppendArrowCellKey(const ArrowColumn& c, int64_t i, std::string* key, std::string* scratch) {
  key->push_back('\x1f');
  if (CellIsNull(c, i)) {
    key->push_back('\x00');
    return true;
  }
  if (c.kind == ArrowColumn::kMap || c.kind == ArrowColumn::kList || c.kind == ArrowColumn::kLargeList) {
    if (c.fields.empty()) return false;
    auto [begin, end] = ListRange(c, i);
    key->push_back('[');
    for (int64_t j = begin; j < end; ++j) {
      for (const ArrowColumn& f : c.fields) {
        if (!AppendArrowCellKey(f, j, key, scratch)) return false;
      }
    }
    key->push_back(']');
    return true;
  }
  if (c.kind == ArrowColumn::kUnsupported) return false;
  ValueKind kind;
  key->append(CellText(c, i, scratch, &kind));
  return true;
}

ArrowColumn DescribeArrowColumn(const ArrowSchema& schema, const ArrowArray& array) {
  ArrowColumn c;
  c.schema = &schema;
  c.array = &array;
  c.format = schema.format == nullptr ? std::string_view() : std::string_view(schema.format);
  const std::string_view f = c.format;
  if (schema.dictionary != nullptr) return c;  // dictionaries are decoded by the caller
  static const std::pair<std::string_view, ArrowColumn::Kind> kSimple[] = {
      {"n", ArrowColumn::kNullType}, {"u", ArrowColumn::kString},  {"U", ArrowColumn::kLargeString},
      {"g", ArrowColumn::kFloat64},  {"f", ArrowColumn::kFloat32}, {"l", ArrowColumn::kInt64},
      {"i", ArrowColumn::kInt32},    {"s", ArrowColumn::kInt16},   {"c", ArrowColumn::kInt8},
      {"L", ArrowColumn::kUInt64},   {"I", ArrowColumn::kUInt32},  {"S", ArrowColumn::kUInt16},
      {"C", ArrowColumn::kUInt8},    {"b", ArrowColumn::kBool},    {"tdD", ArrowColumn::kDate32},
      {"tdm", ArrowColumn::kDate64}, {"+m", ArrowColumn::kMap},    {"+l", ArrowColumn::kList},
      {"+L", ArrowColumn::kLargeList},
  };
  for (const auto& [format, kind] : kSimple) {
    if (f == format) c.kind = kind;
  }
  if (f.size() >= 4 && f.substr(0, 2) == "ts" && f[3] == ':') {
    c.kind = ArrowColumn::kTimestamp;
    switch (f[2]) {
      case 's': c.ns_per_unit = 1'000'000'000; break;
      case 'm': c.ns_per_unit = 1'000'000; break;
      case 'u': c.ns_per_unit = 1'000; break;
      case 'n': c.ns_per_unit = 1; break;
      default: c.kind = ArrowColumn::kUnsupported;
    }
  }
  if ((c.kind == ArrowColumn::kMap || c.kind == ArrowColumn::kList || c.kind == ArrowColumn::kLargeList) &&
      schema.n_children == 1 && array.n_children == 1 && schema.children[0]->format != nullptr &&
      std::string_view(schema.children[0]->format) == "+s") {
    const ArrowSchema& entries = *schema.children[0];
    for (int64_t k = 0; k < entries.n_children; ++k) {
      c.fields.push_back(DescribeArrowColumn(*entries.children[k], *array.children[0]->children[k]));
      c.field_names.emplace_back(entries.children[k]->name == nullptr ? "" : entries.children[k]->name);
    }
  }
  return c;
}

const ArrowColumn* ArrowColumn::Field(std::string_view name) const {
  for (size_t k = 0; k < fields.size(); ++k) {
    if (field_names[k] == name) return &fields[k];
  }
  if (kind == kMap && fields.size() == 2) return name == "key" ? &fields[0] : name == "value" ? &fields[1] : nullptr;
  return nullptr;
}

// Like CSV cells, empty strings and the literal "null" are null.
bool ArrowRow::IsNull(int col) const {
  if (col < 0 || CellIsNull(columns_[col], index_)) return true;
  const ArrowColumn& c = columns_[col];
  return IsStringKind(c.kind) &&
         IsNullText(TrimSpaces(StringAt(*c.array, c.kind == ArrowColumn::kLargeString, index_)));
}

bool ArrowRow::Naive(int col) const {
  if (IsNull(col)) return false;
  const ArrowColumn& c = columns_[col];
  switch (c.kind) {
    case ArrowColumn::kTimestamp: return c.format.size() <= 4;  // "tsu:" has no zone after the colon
    case ArrowColumn::kDate32:
    case ArrowColumn::kDate64: return true;
    default: return !HasZoneDesignator(Text(col));
  }
}

std::string_view ArrowRow::Text(int col) const {
  if (IsNull(col)) return {};
  ValueKind kind;
  return TrimSpaces(CellText(columns_[col], index_, &scratch_, &kind));
}

Parsed ArrowRow::Number(int col, double* out) const {
  if (IsNull(col)) return Parsed::kNull;
  const ArrowColumn& c = columns_[col];
  if (NumericAt(c, index_, out)) return std::isfinite(*out) ? Parsed::kOk : Parsed::kBad;
  if (IsStringKind(c.kind)) {
    return ParseDouble(StringAt(*c.array, c.kind == ArrowColumn::kLargeString, index_), out) ? Parsed::kOk
                                                                                              : Parsed::kBad;
  }
  return Parsed::kBad;
}

Parsed ArrowRow::Instant(int col, int64_t* out) const {
  if (IsNull(col)) return Parsed::kNull;
  const ArrowColumn& c = columns_[col];
  switch (c.kind) {
    case ArrowColumn::kTimestamp: *out = ValueAt<int64_t>(*c.array, index_) * c.ns_per_unit; return Parsed::kOk;
    case ArrowColumn::kDate32: *out = ValueAt<int32_t>(*c.array, index_) * kNanosPerDay; return Parsed::kOk;
    case ArrowColumn::kDate64: *out = ValueAt<int64_t>(*c.array, index_) * 1'000'000; return Parsed::kOk;
    case ArrowColumn::kString:
    case ArrowColumn::kLargeString: {
      std::string_view s = StringAt(*c.array, c.kind == ArrowColumn::kLargeString, index_);
      return ParseInstant(s, out) || ParseUsDate(s, out) ? Parsed::kOk : Parsed::kBad;
    }
    default: return Parsed::kBad;
  }
}

bool ArrowRow::RawText(int col, std::string_view* text) const {
  if (IsNull(col) || !IsStringKind(columns_[col].kind)) return false;
  *text = Text(col);
  return true;
}

absl::Status ArrowRow::Pairs(int col, PairSink sink) const {
  if (IsNull(col)) return absl::OkStatus();
  const ArrowColumn& c = columns_[col];
  const ArrowColumn* keys = c.Field("key");
  const ArrowColumn* values = c.Field("value");
  if (keys == nullptr || values == nullptr || !IsStringKind(keys->kind)) {
    return Error(layout_.names[col], TypeError(c, "a map<string, string> or a list<struct<key, value>>"));
  }
  auto [begin, end] = ListRange(c, index_);
  std::string key_scratch, value_scratch;
  for (int64_t j = begin; j < end; ++j) {
    ValueKind key_kind, value_kind;
    std::string_view k = CellText(*keys, j, &key_scratch, &key_kind);
    std::string_view v = CellText(*values, j, &value_scratch, &value_kind);
    sink(k, v, value_kind);
  }
  return absl::OkStatus();
}

absl::Status ArrowRow::Credits(int col, CreditSink sink) const {
  if (IsNull(col)) return absl::OkStatus();
  const ArrowColumn& c = columns_[col];
  const ArrowColumn* amounts = c.kind == ArrowColumn::kMap ? nullptr : c.Field("amount");
  if (amounts == nullptr) {
    return Error(layout_.names[col], TypeError(c, "a list<struct<amount, type, ...>>"));
  }
  const ArrowColumn* types = c.Field("type");
  const ArrowColumn* names = c.Field("name");
  auto text = [](const ArrowColumn* f, int64_t j) {
    return f != nullptr && IsStringKind(f->kind) && !CellIsNull(*f, j)
               ? StringAt(*f->array, f->kind == ArrowColumn::kLargeString, j)
               : std::string_view();
  };
  auto [begin, end] = ListRange(c, index_);
  for (int64_t j = begin; j < end; ++j) {
    double value = 0;
    if (CellIsNull(*amounts, j) || !NumericAt(*amounts, j, &value) || !std::isfinite(value)) {
      return Error(layout_.names[col], "has a credit amount that is not a number");
    }
    sink(value, text(types, j), text(names, j));
  }
  return absl::OkStatus();
}

// ---- output -------------------------------------------------------------------

LineBuilder::LineBuilder(const BillingOptions& options)
    : options_(options), catalog_(options.catalog != nullptr ? options.catalog : &Catalog::Embedded()) {
  // BillingReader::Create checked that the zone loads.
  has_tz_ = !options_.tz.empty() && options_.tz != "UTC" && absl::LoadTimeZone(options_.tz, &tz_);
}

absl::Status LineBuilder::Localise(int64_t naive, int64_t* earlier, int64_t* later, std::string* error) {
  const int64_t seconds = naive >= 0 ? naive / kNanosPerSecond : -((-naive + kNanosPerSecond - 1) / kNanosPerSecond);
  const int64_t subsecond = naive - seconds * kNanosPerSecond;
  const absl::CivilSecond civil = absl::ToCivilSecond(absl::FromUnixSeconds(seconds), absl::UTCTimeZone());
  const absl::TimeZone::TimeInfo info = tz_.At(civil);
  if (info.kind == absl::TimeZone::TimeInfo::SKIPPED) {
    *error = absl::StrCat("does not exist in ", options_.tz, " (skipped by a daylight-saving change)");
    return absl::InvalidArgumentError(*error);
  }
  *earlier = absl::ToUnixSeconds(info.pre) * kNanosPerSecond + subsecond;
  *later = absl::ToUnixSeconds(info.post) * kNanosPerSecond + subsecond;
  if (*later < *earlier) std::swap(*earlier, *later);
  return absl::OkStatus();
}

int LineBuilder::InstanceGpus(std::string_view name) { return name.empty() ? 0 : Lookup(name).gpus; }

const LineBuilder::TypeInfo& LineBuilder::Lookup(std::string_view name) {
  if (auto it = types_.find(ToAbsl(name)); it != types_.end()) return it->second;
  TypeInfo info;
  absl::StatusOr<const InstanceType*> found = catalog_->FindInstanceType(name);
  if (found.ok()) {
    info.canonical = (*found)->instance_type;
    info.known = true;
    info.gpu = (*found)->gpus > 0;
    info.gpus = static_cast<int>((*found)->gpus);
  } else {
    info.canonical = std::string(name);
  }
  return types_.emplace(std::string(name), std::move(info)).first->second;
}

std::string_view LineBuilder::CatalogInstanceType(std::string_view name) {
  if (name.empty()) return name;
  return Lookup(name).canonical;
}

absl::Status LineBuilder::JsonValue(std::string_view text, std::string_view key, std::string_view* value) {
  std::string cache_key = absl::StrCat(ToAbsl(key), "\x01", ToAbsl(text));
  if (auto it = json_values_.find(cache_key); it != json_values_.end()) {
    *value = it->second;
    return absl::OkStatus();
  }
  std::string found_value;
  bool found = false;
  GPUCOST_RETURN_IF_ERROR(JsonObjectValue(text, key, &found_value, &found));
  // Values that differ on every row (Azure's additionalInfo can) must not
  // grow the cache without bound.
  if (json_values_.size() > 100'000) json_values_.clear();
  *value = json_values_.emplace(std::move(cache_key), std::move(found_value)).first->second;
  return absl::OkStatus();
}

bool LineBuilder::KnownInstanceType(std::string_view name) { return !name.empty() && Lookup(name).known; }

int32_t LineBuilder::InternPendingTags() {
  json_scratch_.clear();
  json_scratch_.push_back('{');
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (i > 0) json_scratch_.push_back(',');
    AppendJsonString(pending_[i].key, &json_scratch_);
    json_scratch_.push_back(':');
    if (pending_[i].kind == ValueKind::kString) {
      AppendJsonString(pending_[i].value, &json_scratch_);
    } else {
      json_scratch_.append(pending_[i].value);
    }
  }
  json_scratch_.push_back('}');
  if (auto it = tags_by_json_.find(ToAbsl(json_scratch_)); it != tags_by_json_.end()) return it->second;
  const auto code = static_cast<int32_t>(tags_json_.size());
  tags_json_.push_back(json_scratch_);
  tags_by_json_.emplace(json_scratch_, code);
  // The expanded keys: exact key, else AWS's "user:" / "user_" forms.
  std::vector<std::string> values(options_.expand_tags.size());
  std::vector<uint8_t> present(options_.expand_tags.size(), 0);
  for (size_t k = 0; k < options_.expand_tags.size(); ++k) {
    const std::string& want = options_.expand_tags[k];
    int best = 0;  // 2 = exact, 1 = prefixed
    for (const Pair& pair : pending_) {
      int score = 0;
      if (pair.key == want) {
        score = 2;
      } else if (pair.key.size() == want.size() + 5 && pair.key.substr(5) == want &&
                 (pair.key.substr(0, 5) == "user:" || pair.key.substr(0, 5) == "user_")) {
        score = 1;
      }
      if (score > best && !(pair.kind == ValueKind::kRaw && pair.value == "null")) {
        best = score;
        values[k] = std::string(pair.value);
        present[k] = 1;
      }
    }
  }
  tags_expanded_.push_back(std::move(values));
  tags_expanded_present_.push_back(std::move(present));
  return code;
}

absl::Status LineBuilder::Commit(const Line& line, absl::FunctionRef<absl::Status(std::string_view)> row_error) {
  double cost = kNaN;
  switch (options_.amount) {
    case CostAmount::kEffective: cost = line.effective; break;
    case CostAmount::kBilled: cost = line.billed; break;
    case CostAmount::kList: cost = std::isfinite(line.list) ? line.list : 0.0; break;
  }
  if (!std::isfinite(cost)) return row_error("the amount to allocate is missing or not finite");
  lines_.cost.push_back(cost);
  lines_.list_cost.push_back(std::isfinite(line.list) ? line.list : 0.0);
  lines_.billed_cost.push_back(line.billed);
  lines_.effective_cost.push_back(line.effective);
  lines_.start.push_back(line.start);
  // A charge stamped with one instant (a one-time fee) gets one second, so
  // the engine's end > start holds and the line keeps its period.
  lines_.end.push_back(line.end > line.start ? line.end : line.start + kNanosPerSecond);
  if (line.lowercase_resource && !line.resource_id.empty()) {
    AddOrNull(resource_id_, Lower(line.resource_id));
  } else {
    AddOrNull(resource_id_, line.resource_id);
  }
  AddOrNull(resource_name_, line.resource_name);
  AddOrNull(provider_, line.provider);
  AddOrNull(account_, line.account);
  AddOrNull(region_, line.region);
  AddOrNull(service_, line.service);
  AddOrNull(sku_, line.sku);
  AddOrNull(instance_type_, line.instance_type);
  AddOrNull(pricing_, line.pricing);
  AddOrNull(charge_category_, line.charge_category);
  AddOrNull(commitment_id_, line.commitment_id);
  AddOrNull(commitment_status_, line.commitment_status);
  AddOrNull(currency_, line.currency);
  AddOrNull(pricing_currency_, line.pricing_currency);
  AddOrNull(instance_id_, line.instance_id);
  rank_.push_back(static_cast<int8_t>(line.resource_id.empty() ? 0 : line.primary_rank));
  quantity_.push_back(line.quantity_hours);
  by_instance_id_.push_back(line.resource_by_instance_id && !line.instance_id.empty() ? 1 : 0);
  lines_.gpu.push_back(line.gpu_sku || (!line.instance_type.empty() && Lookup(line.instance_type).gpu));
  tag_codes_.push_back(pending_code_ >= 0 ? pending_code_ : InternPendingTags());
  pending_.clear();
  pending_owned_.clear();
  pending_code_ = -1;
  return absl::OkStatus();
}

void LineBuilder::NoteCommitment(CommitmentNote note, const Line* fee) {
  if (fee != nullptr) {
    Line copy = *fee;
    for (std::string_view* s : {&copy.resource_id, &copy.resource_name, &copy.provider, &copy.account, &copy.region,
                                &copy.service, &copy.sku, &copy.instance_type, &copy.pricing, &copy.charge_category,
                                &copy.commitment_id, &copy.commitment_status, &copy.currency}) {
      *s = Stable(*s);
    }
    note.fee = static_cast<int32_t>(commitment_fees_.size());
    commitment_fees_.push_back(copy);
  }
  commitment_notes_.push_back(std::move(note));
}

CostLines LineBuilder::Finish() {
  CostLines out = std::move(lines_);
  out.resource_id = resource_id_.Finish();
  out.resource_name = resource_name_.Finish();
  out.provider = provider_.Finish();
  out.account = account_.Finish();
  out.region = region_.Finish();
  out.service = service_.Finish();
  out.sku = sku_.Finish();
  out.instance_type = instance_type_.Finish();
  out.pricing = pricing_.Finish();
  out.charge_category = charge_category_.Finish();
  out.commitment_id = commitment_id_.Finish();
  out.commitment_status = commitment_status_.Finish();
  out.currency = currency_.Finish();
  out.pricing_currency = pricing_currency_.Finish();
  out.instance_id = instance_id_.Finish();
  // Lines that named their instance only by its number take the canonical id
  // of a line that named both.
  if (std::find(by_instance_id_.begin(), by_instance_id_.end(), 1) != by_instance_id_.end()) {
    std::vector<int32_t> by_number(out.instance_id.values.size(), kNullCode);
    for (size_t i = 0; i < by_instance_id_.size(); ++i) {
      const int32_t n = out.instance_id.codes[i];
      if (!by_instance_id_[i] && n != kNullCode && out.resource_id.codes[i] != kNullCode) {
        by_number[n] = out.resource_id.codes[i];
      }
    }
    for (size_t i = 0; i < by_instance_id_.size(); ++i) {
      const int32_t n = out.instance_id.codes[i];
      if (by_instance_id_[i] && by_number[n] != kNullCode) out.resource_id.codes[i] = by_number[n];
    }
    // Drop the numeric spellings no line uses any more from the dictionary.
    std::vector<int32_t> remap(out.resource_id.values.size(), kNullCode);
    for (int32_t code : out.resource_id.codes) {
      if (code != kNullCode) remap[code] = 0;
    }
    EncodedStrings compact;
    for (size_t v = 0; v < remap.size(); ++v) {
      if (remap[v] == kNullCode) continue;
      remap[v] = static_cast<int32_t>(compact.values.size());
      compact.values.push_back(std::move(out.resource_id.values[v]));
    }
    compact.codes = std::move(out.resource_id.codes);
    for (int32_t& code : compact.codes) {
      if (code != kNullCode) code = remap[code];
    }
    compact.value_views.assign(compact.values.begin(), compact.values.end());
    out.resource_id = std::move(compact);
  }
  ResolvePrimary(out);
  report_.currencies.assign(out.currency.values.begin(), out.currency.values.end());
  std::sort(report_.currencies.begin(), report_.currencies.end());
  out.report = std::move(report_);
  // A resource with one GPU line is a GPU resource on all its lines (GCP
  // bills the GPU as its own SKU next to the VM's cores and memory).
  std::vector<uint8_t> gpu_resource(out.resource_id.values.size(), 0);
  for (size_t i = 0; i < out.gpu.size(); ++i) {
    const int32_t r = out.resource_id.codes[i];
    if (r != kNullCode && out.gpu[i]) gpu_resource[r] = 1;
  }
  for (size_t i = 0; i < out.gpu.size(); ++i) {
    const int32_t r = out.resource_id.codes[i];
    if (r != kNullCode && gpu_resource[r]) out.gpu[i] = 1;
  }
  out.tags.codes = std::move(tag_codes_);
  out.tags.values = std::move(tags_json_);
  out.tags.value_views.assign(out.tags.values.begin(), out.tags.values.end());
  out.tag_keys = options_.expand_tags;
  for (size_t k = 0; k < options_.expand_tags.size(); ++k) {
    // Per tags code, the code of its value for key k.
    StringEncoder values;
    std::vector<int32_t> by_tags(tags_expanded_.size(), kNullCode);
    for (size_t t = 0; t < tags_expanded_.size(); ++t) {
      if (tags_expanded_present_[t][k]) by_tags[t] = values.Add(tags_expanded_[t][k]);
    }
    EncodedStrings column = values.Finish();
    column.codes.resize(out.tags.codes.size());
    for (size_t i = 0; i < out.tags.codes.size(); ++i) column.codes[i] = by_tags[out.tags.codes[i]];
    out.tag_values.push_back(std::move(column));
  }
  return out;
}

void LineBuilder::ResolvePrimary(CostLines& out) {
  const size_t n = out.size();
  out.primary.assign(n, 0);
  out.quantity_hours.assign(n, kNaN);
  struct Group {
    int8_t rank = 0;
    int64_t first = -1;  // the primary line
    double hours = 0;
    bool unknown = false;
  };
  using Key = std::tuple<int32_t, int64_t, int64_t>;
  absl::flat_hash_map<Key, Group> groups;
  for (size_t i = 0; i < n; ++i) {
    if (rank_[i] <= 0) continue;
    Group& g = groups[Key{out.resource_id.codes[i], out.start[i], out.end[i]}];
    if (rank_[i] < g.rank) continue;
    if (rank_[i] > g.rank) g = Group{rank_[i], static_cast<int64_t>(i), 0, false};
    if (std::isnan(quantity_[i])) {
      g.unknown = true;
    } else {
      g.hours += quantity_[i];
    }
  }
  absl::flat_hash_set<int32_t> beyond;
  for (const auto& [key, g] : groups) {
    const size_t i = static_cast<size_t>(g.first);
    if (g.unknown) {
      ++report_.quantity_unknown;
      out.primary[i] = 1;
      continue;
    }
    if (!(g.hours > 0)) continue;  // billed no time: money, no hours
    out.primary[i] = 1;
    const double period = static_cast<double>(out.end[i] - out.start[i]) / (3600.0 * kNanosPerSecond);
    double hours = g.hours;
    // Beyond the period (beyond rounding of the export's amounts): clipped.
    if (hours > period * (1 + 1e-6) + 1e-6) {
      ++report_.hours_beyond_period_lines;
      beyond.insert(std::get<0>(key));
      hours = period;
    }
    // Within the rounding of the export's amounts (0.333333 h of a 20-minute
    // line) the line bills its whole period, not a hair less.
    out.quantity_hours[i] = hours >= period * (1 - 1e-6) - 1e-6 ? period : hours;
  }
  for (size_t i = 0; i < n; ++i) report_.primary_lines += out.primary[i];
  for (int32_t r : beyond) report_.hours_beyond_period.emplace_back(out.resource_id.values[r]);
  std::sort(report_.hours_beyond_period.begin(), report_.hours_beyond_period.end());
}

// ---- the reader ---------------------------------------------------------------

namespace {

template <typename Format>
class ReaderImpl final : public BillingReader {
 public:
  explicit ReaderImpl(BillingOptions options)
      : options_(std::move(options)), builder_(options_), csv_(options_.source) {}

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
        if (keyed && Repeated(key_)) continue;
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
    if constexpr (std::is_same_v<Format, GcpFormat>) {
      // The normaliser marks an export with resource columns (the detailed one).
      if (builder_.report().gcp_export.empty()) builder_.report().gcp_export = "standard";
    }
    return builder_.Finish();
  }

  int64_t rows() const override { return rows_; }

 private:
  enum class Mode { kNone, kCsv, kJson, kArrow };

  // Whether the row whose key is `key` was read before (then counted). Two
  // independent 64-bit hashes keep a false match out of reach (about 2^-128
  // per pair) without keeping the rows.
  bool Repeated(std::string_view key) {
    const std::pair<uint64_t, uint64_t> h{absl::HashOf(ToAbsl(key)), std::hash<std::string_view>{}(key)};
    if (seen_.insert(h).second) return false;
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
        if (Repeated(key_)) return absl::OkStatus();
      } else if (Repeated(IdentityKey(row))) {
        return absl::OkStatus();
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
    if (Repeated(Format::IdentityFields().empty() ? TrimSpaces(text) : IdentityKey(row))) return absl::OkStatus();
    return Format::Normalise(row, builder_);
  }

  BillingOptions options_;
  LineBuilder builder_;
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
  absl::flat_hash_set<std::pair<uint64_t, uint64_t>> seen_;
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
