#include "samples.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gpucost/allocate.h"
#include "gpucost/status.h"

namespace gpucost::analyses_internal {
namespace {

absl::string_view ToAbsl(std::string_view sv) { return {sv.data(), sv.size()}; }

absl::Status CheckLength(std::string_view table, std::string_view column, size_t actual, size_t rows) {
  if (actual == rows) return absl::OkStatus();
  if (actual == 0) return TableError(table, absl::StrCat("missing required column '", ToAbsl(column), "'"));
  return TableError(table, absl::StrCat("column '", ToAbsl(column), "' has ", actual, " values for ", rows, " rows"));
}

absl::Status CheckCodes(std::string_view table, std::string_view column, const StringColumn& col) {
  const auto dict_size = static_cast<int32_t>(col.dictionary.size());
  for (size_t i = 0; i < col.codes.size(); ++i) {
    const int32_t c = col.codes[i];
    if (c < kNullCode || c >= dict_size) {
      return RowError(table, static_cast<int64_t>(i), column,
                      absl::StrCat("code ", c, " is not in the dictionary of ", dict_size, " values"));
    }
  }
  return absl::OkStatus();
}

bool IsReserved(std::string_view v) { return v == kIdle || v == kUnattributed || v == kUnlabelled; }

}  // namespace

std::string Quoted(std::string_view s) { return absl::StrCat("'", ToAbsl(s), "'"); }

int32_t DeviceIndex::Find(std::string_view name) const {
  auto it = ids.find(std::string(name));
  return it == ids.end() ? -1 : it->second;
}

absl::StatusOr<DeviceIndex> IndexDevices(const InventoryColumns& inv) {
  constexpr std::string_view kTable = "inventory";
  const size_t n = inv.resource_id.size();
  GPUCOST_RETURN_IF_ERROR(CheckLength(kTable, "device", inv.device.size(), n));
  GPUCOST_RETURN_IF_ERROR(CheckLength(kTable, "mem_capacity", inv.mem_capacity.size(), n));
  GPUCOST_RETURN_IF_ERROR(CheckCodes(kTable, "resource_id", inv.resource_id));
  DeviceIndex index;
  std::vector<int32_t> row_resource(n);
  for (size_t i = 0; i < n; ++i) {
    const auto row = static_cast<int64_t>(i);
    const int32_t code = inv.resource_id.codes[i];
    if (code == kNullCode || inv.resource_id.dictionary[code].empty()) {
      return RowError(kTable, row, "resource_id", "missing resource id");
    }
    if (inv.device[i] < 0) {
      return RowError(kTable, row, "device", absl::StrCat("device ", inv.device[i], " is negative"));
    }
    const double mem = inv.mem_capacity[i];
    if (!(mem > 0) || !std::isfinite(mem)) {
      return RowError(kTable, row, "mem_capacity", absl::StrCat(mem, " is not a positive number of bytes"));
    }
    auto [it, inserted] = index.ids.try_emplace(std::string(inv.resource_id.dictionary[code]),
                                                static_cast<int32_t>(index.names.size()));
    if (inserted) {
      index.names.emplace_back(inv.resource_id.dictionary[code]);
      index.device_count.push_back(0);
    }
    row_resource[i] = it->second;
    index.device_count[it->second] += 1;
  }
  index.first_device.resize(index.names.size());
  int64_t next = 0;
  for (size_t r = 0; r < index.names.size(); ++r) {
    index.first_device[r] = next;
    next += index.device_count[r];
  }
  index.mem_capacity.assign(next, 0.0);
  std::vector<int64_t> first_row(next, -1);
  for (size_t i = 0; i < n; ++i) {
    const int32_t r = row_resource[i];
    const int32_t d = inv.device[i];
    if (d >= index.device_count[r]) {
      return RowError(kTable, static_cast<int64_t>(i), "device",
                      absl::StrCat("device ", d, " of ", Quoted(index.names[r]), ", which has ",
                                   index.device_count[r], " devices (expected 0..", index.device_count[r] - 1, ")"));
    }
    const int64_t g = index.first_device[r] + d;
    if (first_row[g] >= 0) {
      return RowError(kTable, static_cast<int64_t>(i), "device",
                      absl::StrCat("duplicate (resource_id, device) (", Quoted(index.names[r]), ", ", d,
                                   "); first at row ", first_row[g]));
    }
    first_row[g] = static_cast<int64_t>(i);
    index.mem_capacity[g] = inv.mem_capacity[i];
  }
  return index;
}

absl::StatusOr<SampleReader> SampleReader::Create(const SampleColumns& s, const DeviceIndex& index,
                                                  double interval_seconds) {
  if (!(interval_seconds > 0.0) || !std::isfinite(interval_seconds)) {
    return ParameterError("interval", absl::StrCat(interval_seconds, " is not a positive number of seconds"));
  }
  const size_t n = s.timestamp.size();
  for (auto [name, size] : {std::pair<std::string_view, size_t>{"resource_id", s.resource_id.size()},
                            {"device", s.device.size()},
                            {"consumer", s.consumer.size()},
                            {"share", s.share.size()},
                            {"util", s.util.size()},
                            {"mem_used", s.mem_used.size()}}) {
    GPUCOST_RETURN_IF_ERROR(CheckLength(kUsage, name, size, n));
  }
  if (s.duration.has_value()) GPUCOST_RETURN_IF_ERROR(CheckLength(kUsage, "duration", s.duration->size(), n));
  SampleReader reader;
  reader.samples_ = &s;
  reader.index_ = &index;
  reader.interval_ns_ = std::llround(interval_seconds * 1e9);
  if (reader.interval_ns_ <= 0) return ParameterError("interval", "shorter than a nanosecond");
  reader.resource_map_.resize(s.resource_id.dictionary.size());
  for (size_t d = 0; d < reader.resource_map_.size(); ++d) reader.resource_map_[d] = index.Find(s.resource_id.dictionary[d]);
  absl::flat_hash_map<std::string, int32_t> ids;
  reader.consumer_map_.assign(s.consumer.dictionary.size(), -1);
  std::vector<uint8_t> reserved(s.consumer.dictionary.size(), 0);
  for (size_t d = 0; d < reader.consumer_map_.size(); ++d) {
    const std::string_view name = s.consumer.dictionary[d];
    if (name.empty()) continue;
    reserved[d] = IsReserved(name) ? 1 : 0;
    auto [it, inserted] = ids.try_emplace(std::string(name), static_cast<int32_t>(reader.consumer_names_.size()));
    if (inserted) reader.consumer_names_.emplace_back(name);
    reader.consumer_map_[d] = it->second;
  }
  for (size_t d = 0; d < reserved.size(); ++d) {
    if (!reserved[d]) continue;
    for (size_t i = 0; i < n; ++i) {
      if (s.consumer.codes[i] == static_cast<int32_t>(d)) {
        return RowError(kUsage, static_cast<int64_t>(i), "consumer",
                        absl::StrCat(Quoted(s.consumer.dictionary[d]), " is a reserved name"));
      }
    }
  }
  return reader;
}

absl::Status SampleReader::Explain(int64_t i) const {
  const SampleColumns& s = *samples_;
  const int32_t rc = s.resource_id.codes[i];
  if (rc == kNullCode) return RowError(kUsage, i, "resource_id", "missing resource id");
  if (rc < 0 || rc >= static_cast<int32_t>(resource_map_.size())) {
    return RowError(kUsage, i, "resource_id", absl::StrCat("code ", rc, " is not in the dictionary"));
  }
  const int32_t cc = s.consumer.codes[i];
  if (cc < kNullCode || cc >= static_cast<int32_t>(consumer_map_.size())) {
    return RowError(kUsage, i, "consumer", absl::StrCat("code ", cc, " is not in the dictionary"));
  }
  const int32_t r = resource_map_[rc];
  if (r >= 0 && (s.device[i] < 0 || s.device[i] >= index_->device_count[r])) {
    return RowError(kUsage, i, "device",
                    absl::StrCat("device ", s.device[i], " of ", Quoted(index_->names[r]), ", which has ",
                                 index_->device_count[r], " devices (expected 0..", index_->device_count[r] - 1, ")"));
  }
  if (s.timestamp[i] == kMissingInstant) return RowError(kUsage, i, "timestamp", "missing instant");
  const double share = s.share[i];
  if (!(share > 0.0 && share <= 1.0)) return RowError(kUsage, i, "share", absl::StrCat(share, " is outside (0, 1]"));
  const double util = s.util[i];
  if (!(util >= 0.0 && util <= 1.0)) return RowError(kUsage, i, "util", absl::StrCat(util, " is outside [0, 1]"));
  const double mem = s.mem_used[i];
  if (!(mem >= 0.0) || !std::isfinite(mem)) {
    return RowError(kUsage, i, "mem_used", absl::StrCat(mem, " is not a non-negative number of bytes"));
  }
  if (s.duration.has_value() && (*s.duration)[i] <= 0) {
    return RowError(kUsage, i, "duration", absl::StrCat((*s.duration)[i], " is not a positive duration"));
  }
  return absl::InternalError("sample check disagreed with its explanation");
}

absl::StatusOr<DeviceRows> GroupByDevice(const SampleReader& reader, const DeviceIndex& index) {
  const auto n = static_cast<int64_t>(reader.size());
  if (n > static_cast<int64_t>(std::numeric_limits<uint32_t>::max())) {
    return TableError(kUsage, absl::StrCat(n, " rows; at most 4294967295 per call"));
  }
  DeviceRows out;
  out.offsets.assign(index.num_devices() + 1, 0);
  for (int64_t i = 0; i < n; ++i) {
    GPUCOST_RETURN_IF_ERROR(reader.Check(i));
    if (reader.resource(i) < 0) {
      ++out.unknown_resource;
      continue;
    }
    ++out.offsets[reader.global_device(i) + 1];
  }
  for (size_t d = 1; d < out.offsets.size(); ++d) out.offsets[d] += out.offsets[d - 1];
  out.rows.resize(out.offsets.back());
  std::vector<int64_t> next(out.offsets.begin(), out.offsets.end() - 1);
  for (int64_t i = 0; i < n; ++i) {
    if (reader.resource(i) < 0) continue;
    out.rows[next[reader.global_device(i)]++] = static_cast<uint32_t>(i);
  }
  return out;
}

}  // namespace gpucost::analyses_internal
