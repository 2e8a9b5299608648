// The Arrow row source of the billing readers: one row of a record batch
// (Parquet from Python, Arrow tables) read through the row interface of
// billing_internal.h.
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
#include "io/billing_internal.h"
#include "gpucost/status.h"

namespace gpucost::io::internal {

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

}  // namespace gpucost::io::internal
