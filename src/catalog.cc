#include "gpucost/catalog.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "catalog_data.h"
#include "gpucost/io/csv.h"
#include "gpucost/status.h"

namespace gpucost {
namespace {

absl::string_view ToAbsl(std::string_view sv) { return {sv.data(), sv.size()}; }

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = absl::ascii_tolower(static_cast<unsigned char>(c));
  return out;
}

std::string MigKey(std::string_view model, std::string_view profile) {
  std::string key(model);
  key.push_back('\0');
  key.append(profile);
  return key;
}

// A problem with one value: the column it is in and what is wrong.
struct Problem {
  std::string column;
  std::string what;
};

std::optional<Problem> CheckInstanceType(const InstanceType& row) {
  if (row.instance_type.empty()) return Problem{"instance_type", "is empty"};
  if (row.gpus < 0) return Problem{"gpus", absl::StrCat(row.gpus, " is negative")};
  if (row.gpus > 0) {
    if (row.gpu_model.empty()) return Problem{"gpu_model", "is empty but gpus > 0"};
    if (!(row.gpu_memory_gib > 0) || !std::isfinite(row.gpu_memory_gib)) {
      return Problem{"gpu_memory_gib", absl::StrCat(row.gpu_memory_gib, " is not a positive size")};
    }
  }
  if (!(row.gpu_fraction > 0 && row.gpu_fraction <= 1)) {
    return Problem{"gpu_fraction", absl::StrCat(row.gpu_fraction, " is outside (0, 1]")};
  }
  if (row.vcpus < 0) return Problem{"vcpus", absl::StrCat(row.vcpus, " is negative")};
  if (!(row.memory_gib >= 0) || !std::isfinite(row.memory_gib)) {
    return Problem{"memory_gib", absl::StrCat(row.memory_gib, " is not a size")};
  }
  if (!(row.gpu_tdp_w >= 0) || !std::isfinite(row.gpu_tdp_w)) {
    return Problem{"gpu_tdp_w", absl::StrCat(row.gpu_tdp_w, " is not a power in W")};
  }
  if (!(row.node_max_power_w >= 0) || !std::isfinite(row.node_max_power_w)) {
    return Problem{"node_max_power_w", absl::StrCat(row.node_max_power_w, " is not a power in W")};
  }
  if (row.on_demand_hourly.has_value() &&
      (!(*row.on_demand_hourly >= 0) || !std::isfinite(*row.on_demand_hourly))) {
    return Problem{"on_demand_hourly", absl::StrCat(*row.on_demand_hourly, " is not a price")};
  }
  return std::nullopt;
}

std::optional<Problem> CheckMigProfile(const MigProfile& row) {
  if (row.gpu_model.empty()) return Problem{"gpu_model", "is empty"};
  if (row.profile.empty()) return Problem{"profile", "is empty"};
  if (row.compute_total <= 0) return Problem{"compute_total", absl::StrCat(row.compute_total, " is not positive")};
  if (row.compute_slices <= 0 || row.compute_slices > row.compute_total) {
    return Problem{"compute_slices", absl::StrCat(row.compute_slices, " is outside 1..", row.compute_total)};
  }
  if (row.memory_total <= 0) return Problem{"memory_total", absl::StrCat(row.memory_total, " is not positive")};
  if (row.memory_slices <= 0 || row.memory_slices > row.memory_total) {
    return Problem{"memory_slices", absl::StrCat(row.memory_slices, " is outside 1..", row.memory_total)};
  }
  if (!(row.memory_gib > 0) || !std::isfinite(row.memory_gib)) {
    return Problem{"memory_gib", absl::StrCat(row.memory_gib, " is not a positive size")};
  }
  return std::nullopt;
}

// Reads a small CSV table with a header into named columns, one callback per
// data row with a getter by column name ("" for absent columns and empty
// cells).
class NamedCsv {
 public:
  NamedCsv(std::string_view source, bool table_rows) : source_(source), table_rows_(table_rows) {}

  absl::Status Error(int64_t line, std::string_view column, std::string_view what) const {
    // Line 1 is the header, so data row r (0-based) is on line r + 2 when
    // the text was serialized from a table with one line per row.
    return table_rows_ ? RowError(source_, line - 2, column, what) : LineError(source_, line, column, what);
  }

  template <typename RowFn>
  absl::Status Read(std::string_view text, std::span<const std::string_view> required, RowFn&& on_row) {
    io::CsvTokenizer csv(source_);
    std::vector<std::string> header;
    absl::flat_hash_map<std::string, size_t> index;
    auto callback = [&](const io::CsvRecord& record) -> absl::Status {
      if (header.empty()) {
        for (std::string_view f : record.fields) {
          header.emplace_back(io::TrimSpaces(f));
          index.emplace(header.back(), header.size() - 1);
        }
        for (std::string_view name : required) {
          if (!index.contains(std::string(name))) {
            return TableError(source_, absl::StrCat("missing required column '", ToAbsl(name), "'"));
          }
        }
        return absl::OkStatus();
      }
      if (record.fields.size() != header.size()) {
        return Error(record.line, record.fields.size() < header.size() ? header[record.fields.size()] : "#",
                     absl::StrCat("expected ", header.size(), " fields, found ", record.fields.size()));
      }
      auto get = [&](std::string_view column) -> std::string_view {
        auto it = index.find(std::string(column));
        return it == index.end() ? std::string_view() : io::TrimSpaces(record.fields[it->second]);
      };
      return on_row(get, record.line);
    };
    GPUCOST_RETURN_IF_ERROR(csv.Feed(text, callback));
    GPUCOST_RETURN_IF_ERROR(csv.Finish(callback, header));
    if (header.empty() && !io::TrimSpaces(text).empty()) return TableError(source_, "no header line");
    return absl::OkStatus();
  }

 private:
  std::string source_;
  bool table_rows_;
};

template <typename Get>
absl::Status ReadNumber(const NamedCsv& csv, Get& get, int64_t line, std::string_view column,
                        bool required, double* out) {
  std::string_view text = get(column);
  if (text.empty()) {
    if (required) return csv.Error(line, column, "is empty");
    return absl::OkStatus();
  }
  if (!io::ParseDouble(text, out)) {
    return csv.Error(line, column, absl::StrCat("'", ToAbsl(text), "' is not a number"));
  }
  return absl::OkStatus();
}

template <typename Get>
absl::Status ReadInt(const NamedCsv& csv, Get& get, int64_t line, std::string_view column,
                     bool required, int* out) {
  double value = *out;
  GPUCOST_RETURN_IF_ERROR(ReadNumber(csv, get, line, column, required, &value));
  if (value != std::floor(value) || std::fabs(value) > 1e9) {
    return csv.Error(line, column, absl::StrCat("'", ToAbsl(get(column)), "' is not a whole number"));
  }
  *out = static_cast<int>(value);
  return absl::OkStatus();
}

template <typename Get>
absl::Status ReadBool(const NamedCsv& csv, Get& get, int64_t line, std::string_view column, bool* out) {
  const std::string value = Lower(get(column));
  if (value.empty()) return absl::OkStatus();
  if (value == "true" || value == "1" || value == "yes" || value == "1.0") {
    *out = true;
  } else if (value == "false" || value == "0" || value == "no" || value == "0.0") {
    *out = false;
  } else {
    return csv.Error(line, column, absl::StrCat("'", ToAbsl(get(column)), "' is not true or false"));
  }
  return absl::OkStatus();
}

// One token of a GPU name and the model sizes it comes in (GB).
struct KnownChip {
  std::string_view name;
  std::initializer_list<int> memory_gb;  // one entry = the default size
};

constexpr std::string_view kDroppedTokens[] = {"NVIDIA", "TESLA", "SXM", "SXM2", "SXM4", "SXM5",
                                               "PCIE", "HBM2", "HBM2E", "HBM3", "HBM3E", "GPU",
                                               "MEGA", "TENSOR", "CORE", "AMD", "INSTINCT", "OAM"};

}  // namespace

std::string CanonicalGpuModel(std::string_view name) {
  static const KnownChip kChips[] = {
      {"A100", {40, 80}}, {"H100", {80, 94}}, {"H200", {141}}, {"A30", {24}},  {"A10G", {24}},
      {"A10", {24}},      {"L4", {24}},       {"L40S", {48}},  {"L40", {48}},  {"T4", {16}},
      {"V100", {16, 32}}, {"P100", {16}},     {"P4", {8}},     {"A40", {48}},  {"K80", {12}},
      // Export variants carry their parent's MIG profiles; GH200's GPU has
      // 96 GB (HBM3) or 144 GB (HBM3e), its name the superchip's total.
      {"A800", {40, 80}}, {"H800", {80}},     {"H20", {96}},   {"GH200", {96, 144}},
      // AMD Instinct, per device as amd-smi lists it: an MI250X or MI250
      // is two devices (GCDs) of 64 GB each.
      {"MI210", {64}},    {"MI250X", {64}},   {"MI250", {64}}, {"MI300X", {192}}, {"MI300A", {128}},
      {"MI325X", {256}},
  };
  std::string upper = absl::AsciiStrToUpper(ToAbsl(io::TrimSpaces(name)));
  for (char& c : upper) {
    if (c == '-' || c == '_' || c == '/') c = ' ';
  }
  const KnownChip* chip = nullptr;
  int memory = 0;
  bool nvl = false, hbm3e_144 = false;
  for (absl::string_view token : absl::StrSplit(upper, ' ', absl::SkipEmpty())) {
    bool dropped = false;
    for (std::string_view d : kDroppedTokens) dropped |= (token == ToAbsl(d));
    if (dropped) continue;
    nvl |= token == "NVL";
    hbm3e_144 |= token == "144G";  // "NVIDIA GH200 144G HBM3e"
    if (token.size() > 2 && token.substr(token.size() - 2) == "GB") {
      double gb = 0;
      if (io::ParseDouble(std::string_view(token.data(), token.size() - 2), &gb) && gb >= 0 && gb < 1e6) {
        memory = static_cast<int>(gb);
        continue;
      }
    }
    for (const KnownChip& c : kChips) {
      if (token == ToAbsl(c.name) && chip == nullptr) chip = &c;
    }
  }
  if (chip == nullptr) return std::string(io::TrimSpaces(name));
  const std::string_view chip_name = chip->name;
  if (chip_name == "GH200") {
    memory = memory == 144 || hbm3e_144 ? 144 : 96;  // "GH200 480GB" names the superchip's memory
  } else if (nvl && memory == 0 && (chip_name == "H100" || chip_name == "H800")) {
    memory = 94;  // H100 NVL, H800 NVL
  }
  if (memory == 0) {
    if (chip->memory_gb.size() != 1) return std::string(chip->name);  // ambiguous
    memory = *chip->memory_gb.begin();
  }
  return absl::StrCat(ToAbsl(chip->name), " ", memory, "GB");
}

const Catalog& Catalog::Embedded() {
  static const Catalog* const kEmbedded = [] {
    absl::StatusOr<Catalog> catalog =
        FromCsv(internal::kEmbeddedInstanceTypesCsv, internal::kEmbeddedMigProfilesCsv,
                {"data/catalog/instance_types.csv", "data/catalog/mig_profiles.csv", false});
    if (!catalog.ok()) {
      // The data is checked by the test suite; this is a build defect.
      std::fprintf(stderr, "gpucost: the embedded catalog is invalid: %s\n",
                   std::string(catalog.status().message()).c_str());
      std::abort();
    }
    return new Catalog(*std::move(catalog));
  }();
  return *kEmbedded;
}

absl::StatusOr<Catalog> Catalog::FromCsv(std::string_view instance_types_csv,
                                         std::string_view mig_profiles_csv,
                                         const CatalogSources& sources) {
  Catalog catalog;
  {
    NamedCsv csv(sources.instance_types, sources.table_rows);
    static constexpr std::string_view kRequired[] = {"provider", "instance_type", "gpu_model", "gpus",
                                                     "gpu_memory_gib"};
    auto on_row = [&](auto& get, int64_t line) -> absl::Status {
      InstanceType row;
      row.provider = std::string(get("provider"));
      row.instance_type = std::string(get("instance_type"));
      row.gpu_model = std::string(get("gpu_model"));
      GPUCOST_RETURN_IF_ERROR(ReadInt(csv, get, line, "gpus", true, &row.gpus));
      GPUCOST_RETURN_IF_ERROR(ReadNumber(csv, get, line, "gpu_memory_gib", row.gpus > 0, &row.gpu_memory_gib));
      GPUCOST_RETURN_IF_ERROR(ReadNumber(csv, get, line, "gpu_fraction", false, &row.gpu_fraction));
      GPUCOST_RETURN_IF_ERROR(ReadInt(csv, get, line, "vcpus", false, &row.vcpus));
      GPUCOST_RETURN_IF_ERROR(ReadNumber(csv, get, line, "memory_gib", false, &row.memory_gib));
      GPUCOST_RETURN_IF_ERROR(ReadBool(csv, get, line, "mig_capable", &row.mig_capable));
      if (!get("on_demand_hourly").empty()) {
        double price = 0;
        GPUCOST_RETURN_IF_ERROR(ReadNumber(csv, get, line, "on_demand_hourly", true, &price));
        row.on_demand_hourly = price;
      }
      row.price_region = std::string(get("price_region"));
      row.price_date = std::string(get("price_date"));
      row.price_source = std::string(get("price_source"));
      GPUCOST_RETURN_IF_ERROR(ReadNumber(csv, get, line, "gpu_tdp_w", false, &row.gpu_tdp_w));
      GPUCOST_RETURN_IF_ERROR(ReadNumber(csv, get, line, "node_max_power_w", false, &row.node_max_power_w));
      row.spec_source = std::string(get("spec_source"));
      if (std::optional<Problem> p = CheckInstanceType(row)) return csv.Error(line, p->column, p->what);
      return catalog.AddInstanceType(std::move(row));
    };
    GPUCOST_RETURN_IF_ERROR(csv.Read(instance_types_csv, kRequired, on_row));
  }
  {
    NamedCsv csv(sources.mig_profiles, sources.table_rows);
    static constexpr std::string_view kRequired[] = {"gpu_model",     "profile",      "compute_slices",
                                                     "compute_total", "memory_slices", "memory_total",
                                                     "memory_gib"};
    auto on_row = [&](auto& get, int64_t line) -> absl::Status {
      MigProfile row;
      row.gpu_model = std::string(get("gpu_model"));
      row.profile = std::string(get("profile"));
      GPUCOST_RETURN_IF_ERROR(ReadInt(csv, get, line, "compute_slices", true, &row.compute_slices));
      GPUCOST_RETURN_IF_ERROR(ReadInt(csv, get, line, "compute_total", true, &row.compute_total));
      GPUCOST_RETURN_IF_ERROR(ReadInt(csv, get, line, "memory_slices", true, &row.memory_slices));
      GPUCOST_RETURN_IF_ERROR(ReadInt(csv, get, line, "memory_total", true, &row.memory_total));
      GPUCOST_RETURN_IF_ERROR(ReadNumber(csv, get, line, "memory_gib", true, &row.memory_gib));
      if (std::optional<Problem> p = CheckMigProfile(row)) return csv.Error(line, p->column, p->what);
      return catalog.AddMigProfile(std::move(row));
    };
    GPUCOST_RETURN_IF_ERROR(csv.Read(mig_profiles_csv, kRequired, on_row));
  }
  return catalog;
}

absl::Status Catalog::AddInstanceType(InstanceType row) {
  if (std::optional<Problem> p = CheckInstanceType(row)) {
    return RowError("catalog", static_cast<long long>(instance_types_.size()), p->column, p->what);
  }
  if (!row.gpu_model.empty()) row.gpu_model = CanonicalGpuModel(row.gpu_model);
  auto it = by_name_.find(row.instance_type);
  if (it != by_name_.end()) {
    instance_types_[it->second] = std::move(row);
    return absl::OkStatus();
  }
  by_name_.emplace(row.instance_type, instance_types_.size());
  by_lower_name_.emplace(Lower(row.instance_type), instance_types_.size());
  instance_types_.push_back(std::move(row));
  return absl::OkStatus();
}

absl::Status Catalog::AddMigProfile(MigProfile row) {
  if (std::optional<Problem> p = CheckMigProfile(row)) {
    return RowError("mig_profiles", static_cast<long long>(mig_profiles_.size()), p->column, p->what);
  }
  row.gpu_model = CanonicalGpuModel(row.gpu_model);
  std::string key = MigKey(row.gpu_model, row.profile);
  auto it = mig_by_key_.find(key);
  if (it != mig_by_key_.end()) {
    mig_profiles_[it->second] = std::move(row);
    return absl::OkStatus();
  }
  mig_by_key_.emplace(std::move(key), mig_profiles_.size());
  mig_profiles_.push_back(std::move(row));
  return absl::OkStatus();
}

void Catalog::Reindex() {
  by_name_.clear();
  by_lower_name_.clear();
  mig_by_key_.clear();
  for (size_t i = 0; i < instance_types_.size(); ++i) {
    by_name_[instance_types_[i].instance_type] = i;
    by_lower_name_.emplace(Lower(instance_types_[i].instance_type), i);
  }
  for (size_t i = 0; i < mig_profiles_.size(); ++i) {
    mig_by_key_[MigKey(mig_profiles_[i].gpu_model, mig_profiles_[i].profile)] = i;
  }
}

Catalog Catalog::MergedWith(const Catalog& overrides) const {
  Catalog merged = *this;
  for (const InstanceType& row : overrides.instance_types_) {
    auto it = merged.by_name_.find(row.instance_type);
    if (it != merged.by_name_.end()) {
      merged.instance_types_[it->second] = row;
    } else {
      merged.instance_types_.push_back(row);
    }
  }
  for (const MigProfile& row : overrides.mig_profiles_) {
    auto it = merged.mig_by_key_.find(MigKey(row.gpu_model, row.profile));
    if (it != merged.mig_by_key_.end()) {
      merged.mig_profiles_[it->second] = row;
    } else {
      merged.mig_profiles_.push_back(row);
    }
  }
  merged.Reindex();
  return merged;
}

absl::StatusOr<const InstanceType*> Catalog::FindInstanceType(std::string_view instance_type) const {
  std::string_view name = io::TrimSpaces(instance_type);
  if (auto it = by_name_.find(std::string(name)); it != by_name_.end()) return &instance_types_[it->second];
  std::string lower = Lower(name);
  if (auto it = by_lower_name_.find(lower); it != by_lower_name_.end()) return &instance_types_[it->second];
  // GCP: "n1-standard-8+nvidia-tesla-t4x2" -> "n1+nvidia-tesla-t4x2".
  const size_t plus = lower.find('+');
  if (lower.rfind("n1-", 0) == 0 && plus != std::string::npos) {
    if (auto it = by_lower_name_.find("n1" + lower.substr(plus)); it != by_lower_name_.end()) {
      return &instance_types_[it->second];
    }
  }
  return absl::NotFoundError(absl::StrCat("unknown instance type '", ToAbsl(name),
                                          "' (not in the catalog; add your own catalog rows for it)"));
}

absl::StatusOr<const MigProfile*> Catalog::FindMigProfile(std::string_view gpu_model,
                                                          std::string_view profile) const {
  std::string_view p = io::TrimSpaces(profile);
  if (p.size() > 4 && Lower(p.substr(0, 4)) == "mig ") p.remove_prefix(4);
  const std::string model = CanonicalGpuModel(gpu_model);
  auto it = mig_by_key_.find(MigKey(model, Lower(p)));
  if (it == mig_by_key_.end()) it = mig_by_key_.find(MigKey(model, p));
  if (it == mig_by_key_.end()) {
    return absl::NotFoundError(absl::StrCat("unknown MIG profile '", ToAbsl(p), "' on GPU model '",
                                            ToAbsl(gpu_model), "' (read as '", model, "')"));
  }
  return &mig_profiles_[it->second];
}

absl::StatusOr<double> Catalog::MigShare(std::string_view gpu_model, std::string_view profile,
                                         MigBasis basis) const {
  GPUCOST_ASSIGN_OR_RETURN(const MigProfile* row, FindMigProfile(gpu_model, profile));
  return row->Share(basis);
}

absl::StatusOr<Inventory> BuildInventory(const StringColumn& resource_id, const StringColumn& instance_type,
                                         const Catalog& catalog, std::span<const uint8_t> include,
                                         const InventoryOptions& options) {
  const size_t n = resource_id.size();
  if (instance_type.size() != n) {
    return TableError(options.table, absl::StrCat("columns 'resource_id' and 'instance_type' have ", n,
                                                  " and ", instance_type.size(), " rows"));
  }
  if (!include.empty() && include.size() != n) {
    return ParameterError("include", absl::StrCat("has ", include.size(), " entries for ", n, " rows"));
  }
  // Per instance-type code: the catalog row (resolved once per code).
  std::vector<const InstanceType*> types(instance_type.dictionary.size(), nullptr);
  std::vector<uint8_t> resolved(instance_type.dictionary.size(), 0);
  struct Seen {
    std::string_view instance_type;
    long long row;
    const InstanceType* type;
  };
  absl::flat_hash_map<std::string, Seen> seen;
  std::vector<std::string_view> order;
  for (size_t i = 0; i < n; ++i) {
    if (!include.empty() && include[i] == 0) continue;
    const int32_t r = resource_id.codes[i];
    const int32_t t = instance_type.codes[i];
    if (r < kNullCode || r >= static_cast<int32_t>(resource_id.dictionary.size())) {
      return RowError(options.table, static_cast<long long>(i), "resource_id", "code out of range");
    }
    if (t < kNullCode || t >= static_cast<int32_t>(instance_type.dictionary.size())) {
      return RowError(options.table, static_cast<long long>(i), "instance_type", "code out of range");
    }
    const bool no_type = t == kNullCode || io::TrimSpaces(instance_type.dictionary[t]).empty();
    const bool no_resource = r == kNullCode || resource_id.dictionary[r].empty();
    if (no_type || no_resource) {
      if (options.skip_missing_instance_type) continue;
      return RowError(options.table, static_cast<long long>(i), no_resource ? "resource_id" : "instance_type",
                      "is missing");
    }
    if (!resolved[t]) {
      absl::StatusOr<const InstanceType*> found = catalog.FindInstanceType(instance_type.dictionary[t]);
      if (!found.ok()) {
        return absl::NotFoundError(absl::StrCat(options.table, ": row ", i, ", column 'instance_type': ",
                                                found.status().message()));
      }
      types[t] = *found;
      resolved[t] = 1;
    }
    const std::string_view id = resource_id.dictionary[r];
    auto [it, inserted] = seen.try_emplace(std::string(id), Seen{instance_type.dictionary[t],
                                                                 static_cast<long long>(i), types[t]});
    if (inserted) {
      order.push_back(id);
    } else if (it->second.type != types[t]) {
      return RowError(options.table, static_cast<long long>(i), "instance_type",
                      absl::StrCat("resource '", ToAbsl(id), "' is '", ToAbsl(instance_type.dictionary[t]),
                                   "' here but '", ToAbsl(it->second.instance_type), "' on row ",
                                   it->second.row));
    }
  }
  Inventory out;
  StringEncoder ids;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  for (std::string_view id : order) {
    const InstanceType* type = seen.find(std::string(id))->second.type;
    for (int d = 0; d < type->gpus; ++d) {
      ids.Add(id);
      out.device.push_back(d);
      out.mem_capacity.push_back(type->gpu_memory_gib * kGiB);
    }
  }
  out.resource_id = ids.Finish();
  return out;
}

absl::Status CheckMigPartition(const MigPartition& partition, const Catalog& catalog) {
  struct Used {
    int compute = 0, compute_total = 0, memory = 0, memory_total = 0;
    std::vector<int32_t> instances;
    std::vector<absl::string_view> profiles;
  };
  absl::flat_hash_map<int32_t, Used> by_device;
  std::vector<int32_t> devices;  // in order of first appearance, for the message
  for (const MigSlice& slice : partition.slices) {
    GPUCOST_ASSIGN_OR_RETURN(const MigProfile* profile, catalog.FindMigProfile(partition.gpu_model, slice.profile));
    auto [it, inserted] = by_device.try_emplace(slice.device);
    if (inserted) devices.push_back(slice.device);
    Used& used = it->second;
    for (int32_t seen : used.instances) {
      if (seen == slice.instance) {
        return absl::InvalidArgumentError(absl::StrCat("MIG partition of device ", slice.device, " (",
                                                       partition.gpu_model, "): GPU instance ", slice.instance,
                                                       " appears twice"));
      }
    }
    used.instances.push_back(slice.instance);
    used.profiles.push_back(ToAbsl(slice.profile));
    used.compute += profile->compute_slices;
    used.memory += profile->memory_slices;
    used.compute_total = profile->compute_total;
    used.memory_total = profile->memory_total;
  }
  for (int32_t device : devices) {
    const Used& used = by_device[device];
    if (used.compute > used.compute_total || used.memory > used.memory_total) {
      return absl::InvalidArgumentError(absl::StrCat(
          "MIG partition of device ", device, " (", partition.gpu_model, "): slices ",
          absl::StrJoin(used.profiles, " + "), " need ", used.compute, "/", used.compute_total, " compute and ",
          used.memory, "/", used.memory_total, " memory slices, more than the GPU has"));
    }
  }
  return absl::OkStatus();
}

}  // namespace gpucost
