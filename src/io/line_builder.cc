// The billing readers' output: normalised lines become dictionary-encoded
// CostLines (LineBuilder), with the primary lines and hours resolved at the end.
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

}  // namespace

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
  if (tally_only_) {
    size_t k = 0;
    while (k < tally_currencies_.size() && tally_currencies_[k] != line.currency) ++k;
    if (k == tally_currencies_.size()) {
      tally_currencies_.emplace_back(line.currency);
      tally_amounts_.push_back(0.0);
    }
    tally_amounts_[k] += cost;
    pending_.clear();
    pending_owned_.clear();
    pending_code_ = -1;
    return absl::OkStatus();
  }
  lines_.cost.push_back(cost);
  lines_.list_cost.push_back(std::isfinite(line.list) ? line.list : 0.0);
  lines_.billed_cost.push_back(line.billed);
  lines_.effective_cost.push_back(line.effective);
  lines_.start.push_back(line.start);
  // A charge stamped with one instant (a one-time fee) gets one second, so
  // the engine's end > start holds and the line keeps its period.
  lines_.end.push_back(line.end > line.start ? line.end : line.start + kNanosPerSecond);
  if (line.lowercase_resource && !line.resource_id.empty()) {
    resource_id_.AddOrNull(Lower(line.resource_id));
  } else {
    resource_id_.AddOrNull(line.resource_id);
  }
  resource_name_.AddOrNull(line.resource_name);
  provider_.AddOrNull(line.provider);
  account_.AddOrNull(line.account);
  region_.AddOrNull(line.region);
  service_.AddOrNull(line.service);
  sku_.AddOrNull(line.sku);
  instance_type_.AddOrNull(line.instance_type);
  pricing_.AddOrNull(line.pricing);
  charge_category_.AddOrNull(line.charge_category);
  commitment_id_.AddOrNull(line.commitment_id);
  commitment_status_.AddOrNull(line.commitment_status);
  currency_.AddOrNull(line.currency);
  pricing_currency_.AddOrNull(line.pricing_currency);
  instance_id_.AddOrNull(line.instance_id);
  rank_.push_back(static_cast<int8_t>(line.resource_id.empty() ? 0 : line.primary_rank));
  quantity_.push_back(line.quantity_hours);
  by_instance_id_.push_back(line.resource_by_instance_id && !line.instance_id.empty() ? 1 : 0);
  // A commitment's own line that names a resource names the commitment (the
  // RI's ARN on a RIFee line), not a machine: never a GPU resource.
  const bool commitment = line.charge_category == ToString(ChargeCategory::kPurchase) ||
                          line.commitment_status == "Unused";
  const bool not_machine = commitment && !line.resource_id.empty();
  not_machine_.push_back(not_machine ? 1 : 0);
  lines_.gpu.push_back(!not_machine &&
                       (line.gpu_sku || (!line.instance_type.empty() && Lookup(line.instance_type).gpu)));
  tag_codes_.push_back(pending_code_ >= 0 ? pending_code_ : InternPendingTags());
  pending_.clear();
  pending_owned_.clear();
  pending_code_ = -1;
  return absl::OkStatus();
}

void LineBuilder::NoteCommitment(CommitmentNote note, const Line* fee) {
  if (tally_only_) return;  // nothing is kept: nothing to amortize
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
  commitment_notes_.push_back(note);
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
    if (r != kNullCode && gpu_resource[r] && !not_machine_[i]) out.gpu[i] = 1;
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

}  // namespace gpucost::io::internal
