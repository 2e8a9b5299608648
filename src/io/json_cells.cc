#include "io/json_cells.h"

#include <charconv>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "simdjson.h"

namespace gpucost::io::internal {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// One parser per thread for cells (tags, credits, additionalInfo); strings it
// hands out stay valid until its next parse.
simdjson::dom::parser& CellParser() {
  thread_local simdjson::dom::parser parser;
  return parser;
}

// A scalar's value and kind for a tag; nested values are minified JSON.
void ScalarText(element value, std::string* storage, std::string_view* text, ValueKind* kind) {
  std::string_view s;
  if (value.get_string().get(s) == simdjson::SUCCESS) {
    *text = s;
    *kind = ValueKind::kString;
    return;
  }
  *storage = simdjson::minify(value);
  *text = *storage;
  *kind = ValueKind::kRaw;
}

// Object {"k": v} or array of {"key": k, "value": v}.
absl::Status PairsFromElement(element root, PairSink sink) {
  std::vector<std::string> storage;  // non-string values, kept alive for sink
  simdjson::dom::object object;
  if (root.get_object().get(object) == simdjson::SUCCESS) {
    storage.reserve(object.size());
    for (auto field : object) {
      std::string_view text;
      ValueKind kind;
      storage.emplace_back();
      ScalarText(field.value, &storage.back(), &text, &kind);
      sink(field.key, text, kind);
    }
    return absl::OkStatus();
  }
  simdjson::dom::array array;
  if (root.get_array().get(array) == simdjson::SUCCESS) {
    storage.reserve(array.size());
    for (element item : array) {
      std::string_view key;
      element value;
      if (item.at_key("key").get_string().get(key) != simdjson::SUCCESS) {
        return absl::InvalidArgumentError("is not a JSON array of {\"key\": ..., \"value\": ...} objects");
      }
      if (item.at_key("value").get(value) != simdjson::SUCCESS) {
        sink(key, "null", ValueKind::kRaw);
        continue;
      }
      std::string_view text;
      ValueKind kind;
      storage.emplace_back();
      ScalarText(value, &storage.back(), &text, &kind);
      sink(key, text, kind);
    }
    return absl::OkStatus();
  }
  if (root.is_null()) return absl::OkStatus();
  return absl::InvalidArgumentError("is not a JSON object of tags");
}

absl::Status CreditsFromElement(element root, CreditSink sink) {
  if (root.is_null()) return absl::OkStatus();
  simdjson::dom::array array;
  if (root.get_array().get(array) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("is not a JSON array of credits");
  }
  for (element item : array) {
    element amount_element;
    double amount = 0;
    if (item.at_key("amount").get(amount_element) != simdjson::SUCCESS) {
      return absl::InvalidArgumentError("has a credit without an amount");
    }
    std::string_view amount_text;
    if (amount_element.get_double().get(amount) != simdjson::SUCCESS &&
        !(amount_element.get_string().get(amount_text) == simdjson::SUCCESS && ParseDouble(amount_text, &amount))) {
      return absl::InvalidArgumentError("has a credit amount that is not a number");
    }
    std::string_view type, name;
    if (item.at_key("type").get_string().get(type) != simdjson::SUCCESS) type = {};
    if (item.at_key("name").get_string().get(name) != simdjson::SUCCESS) name = {};
    sink(amount, type, name);
  }
  return absl::OkStatus();
}

absl::Status ParseCell(std::string_view text, element* root, std::string_view what) {
  if (text.size() > (1u << 26)) return absl::InvalidArgumentError(absl::StrCat("is too long for ", ToAbsl(what)));
  if (CellParser().parse(text.data(), text.size()).get(*root) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat("is not valid JSON (", ToAbsl(what), ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseTagsJson(std::string_view text, PairSink sink) {
  std::string_view trimmed = TrimSpaces(text);
  if (trimmed.empty()) return absl::OkStatus();
  std::string wrapped;
  if (trimmed.front() != '{' && trimmed.front() != '[') {
    // Azure EA exports write tags without the outer braces.
    wrapped = absl::StrCat("{", ToAbsl(trimmed), "}");
    trimmed = wrapped;
  }
  element root;
  absl::Status status = ParseCell(trimmed, &root, "tags");
  if (status.ok()) status = PairsFromElement(root, sink);
  return status;
}

absl::Status ParseCreditsJson(std::string_view text, CreditSink sink) {
  std::string_view trimmed = TrimSpaces(text);
  if (trimmed.empty()) return absl::OkStatus();
  element root;
  GPUCOST_RETURN_IF_ERROR(ParseCell(trimmed, &root, "credits"));
  return CreditsFromElement(root, sink);
}

absl::Status JsonObjectValue(std::string_view text, std::string_view key, std::string* value, bool* found) {
  *found = false;
  std::string_view trimmed = TrimSpaces(text);
  if (trimmed.empty()) return absl::OkStatus();
  element root;
  GPUCOST_RETURN_IF_ERROR(ParseCell(trimmed, &root, "an object"));
  element item;
  if (root.at_key(key).get(item) != simdjson::SUCCESS) {
    // Also accept an array of {"key", "value"} (GCP system labels).
    simdjson::dom::array array;
    if (root.get_array().get(array) != simdjson::SUCCESS) return absl::OkStatus();
    for (element entry : array) {
      std::string_view k;
      if (entry.at_key("key").get_string().get(k) == simdjson::SUCCESS && k == key &&
          entry.at_key("value").get(item) == simdjson::SUCCESS) {
        *found = true;
        break;
      }
    }
    if (!*found) return absl::OkStatus();
  }
  std::string_view s;
  if (item.get_string().get(s) == simdjson::SUCCESS) {
    *value = std::string(s);
  } else if (item.is_null()) {
    return absl::OkStatus();
  } else {
    *value = simdjson::minify(item);
  }
  *found = true;
  return absl::OkStatus();
}

// ---- JSON lines ---------------------------------------------------------------

class JsonLine {
 public:
  simdjson::dom::parser parser;
  std::vector<element> values;  // per field
  std::vector<uint8_t> found;
};

namespace {

// "a.b.c" in `object`: the literal key first, then nested objects.
bool Lookup(element object, std::string_view path, element* out) {
  if (object.at_key(path).get(*out) == simdjson::SUCCESS) return true;
  const size_t dot = path.find('.');
  if (dot == std::string_view::npos) return false;
  element child;
  if (object.at_key(path.substr(0, dot)).get(child) != simdjson::SUCCESS) return false;
  return Lookup(child, path.substr(dot + 1), out);
}

}  // namespace

JsonLinesParser::JsonLinesParser(std::vector<std::vector<std::string>> paths)
    : line_(std::make_unique<JsonLine>()), paths_(std::move(paths)) {
  line_->values.resize(paths_.size());
  line_->found.resize(paths_.size());
}

JsonLinesParser::~JsonLinesParser() = default;

absl::Status JsonLinesParser::Parse(std::string_view text, std::string_view source, int64_t line_number) {
  element root;
  if (line_->parser.parse(text.data(), text.size()).get(root) != simdjson::SUCCESS || !root.is_object()) {
    return LineError(source, line_number, "*", "is not a JSON object");
  }
  for (size_t f = 0; f < paths_.size(); ++f) {
    line_->found[f] = 0;
    for (const std::string& path : paths_[f]) {
      if (Lookup(root, path, &line_->values[f])) {
        line_->found[f] = !line_->values[f].is_null();
        break;
      }
    }
  }
  return absl::OkStatus();
}

bool JsonRow::IsNull(int col) const {
  if (col < 0 || !line_.found[col]) return true;
  std::string_view s;
  return line_.values[col].get_string().get(s) == simdjson::SUCCESS && IsNullText(TrimSpaces(s));
}

std::string_view JsonRow::Text(int col) const {
  if (IsNull(col)) return {};
  std::string_view s;
  if (line_.values[col].get_string().get(s) == simdjson::SUCCESS) return TrimSpaces(s);
  scratch_ = simdjson::minify(line_.values[col]);
  return scratch_;
}

Parsed JsonRow::Number(int col, double* out) const {
  if (IsNull(col)) return Parsed::kNull;
  const element value = line_.values[col];
  if (value.get_double().get(*out) == simdjson::SUCCESS) return Parsed::kOk;
  std::string_view s;
  if (value.get_string().get(s) == simdjson::SUCCESS) return ParseDouble(s, out) ? Parsed::kOk : Parsed::kBad;
  return Parsed::kBad;
}

Parsed JsonRow::Instant(int col, int64_t* out) const {
  if (IsNull(col)) return Parsed::kNull;
  std::string_view s;
  if (line_.values[col].get_string().get(s) == simdjson::SUCCESS) {
    return ParseInstant(s, out) ? Parsed::kOk : Parsed::kBad;
  }
  return Parsed::kBad;
}

bool JsonRow::RawText(int col, std::string_view* text) const {
  if (IsNull(col)) return false;
  return line_.values[col].get_string().get(*text) == simdjson::SUCCESS;
}

absl::Status JsonRow::Pairs(int col, PairSink sink) const {
  if (IsNull(col)) return absl::OkStatus();
  absl::Status status = PairsFromElement(line_.values[col], sink);
  if (!status.ok()) return Error(layout_.names[col], std::string(status.message()));
  return status;
}

absl::Status JsonRow::Credits(int col, CreditSink sink) const {
  if (IsNull(col)) return absl::OkStatus();
  absl::Status status = CreditsFromElement(line_.values[col], sink);
  if (!status.ok()) return Error(layout_.names[col], std::string(status.message()));
  return status;
}

}  // namespace gpucost::io::internal
