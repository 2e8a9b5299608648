#include "gpucost/model.h"

#include <cstddef>
#include <span>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gpucost/status.h"

namespace gpucost {
namespace {

// One spelling per value, in the enum's order: the only place each is written.
constexpr std::string_view kProviderNames[] = {"aws", "gcp", "azure", "onprem", "other"};
constexpr std::string_view kMigBasisNames[] = {"compute", "memory"};
constexpr std::string_view kPurchaseNames[] = {"on_demand", "spot",  "reserved", "savings_plan",
                                               "cud",       "commitment", "capacity_block", "owned",
                                               "lease",     "rate_card",  "other"};
constexpr std::string_view kPaymentNames[] = {"no_upfront", "partial_upfront", "all_upfront"};
constexpr std::string_view kChargeCategoryNames[] = {"Usage", "Purchase", "Tax", "Credit", "Adjustment"};
constexpr std::string_view kBasisNames[] = {"allocated", "used", "blended"};
constexpr std::string_view kIdleModeNames[] = {"keep", "share"};
constexpr std::string_view kCostDriverNames[] = {"gpu_time", "energy"};

struct Alias {
  std::string_view text;  // normalised: lower case, '_' for '-' and ' '
  size_t value;
};
constexpr Alias kPurchaseAliases[] = {
    {"ondemand", 0},      {"reserved_instance", 2}, {"ri", 2},     {"reservation", 2},
    {"savingsplan", 3},   {"sp", 3},                {"committed_use", 4},
    {"committed_use_discount", 4},
};
constexpr Alias kProviderAliases[] = {
    {"amazon_web_services", 0}, {"google_cloud", 1}, {"google", 1},    {"google_cloud_platform", 1},
    {"microsoft", 2},           {"microsoft_azure", 2}, {"on_prem", 3}, {"on_premises", 3},
};

std::string Normalised(std::string_view text) {
  std::string out = absl::AsciiStrToLower(absl::string_view(text.data(), text.size()));
  for (char& c : out) {
    if (c == '-' || c == ' ') c = '_';
  }
  return out;
}

template <size_t N>
std::string Expected(const std::string_view (&names)[N]) {
  std::string out = "expected ";
  for (size_t i = 0; i < N; ++i) {
    absl::StrAppend(&out, i == 0 ? "" : i + 1 == N ? " or " : ", ", "\"", absl::string_view(names[i].data(), names[i].size()), "\"");
  }
  return out;
}

// Reads `text` as one of `names` (exactly, or normalised when `any_case`) or
// one of `aliases` (normalised).
template <typename E, size_t N>
absl::StatusOr<E> ParseName(const std::string_view (&names)[N], std::span<const Alias> aliases,
                            std::string_view text, bool any_case, std::string_view parameter,
                            std::string_view what) {
  for (size_t i = 0; i < N; ++i) {
    if (text == names[i]) return static_cast<E>(i);
  }
  if (any_case || !aliases.empty()) {
    const std::string normal = Normalised(text);
    for (size_t i = 0; any_case && i < N; ++i) {
      if (normal == Normalised(names[i])) return static_cast<E>(i);
    }
    for (const Alias& alias : aliases) {
      if (normal == alias.text) return static_cast<E>(alias.value);
    }
  }
  return ParameterError(parameter, absl::StrCat("unknown ", absl::string_view(what.data(), what.size()), " '",
                                                absl::string_view(text.data(), text.size()), "' (",
                                                Expected(names), ")"));
}

template <size_t N>
std::vector<std::string_view> AllOf(const std::string_view (&names)[N]) {
  return {names, names + N};
}

}  // namespace

std::string_view CanonicalProviderName(std::string_view name) {
  absl::StatusOr<Provider> provider = ParseProvider(name);
  return provider.ok() && *provider != Provider::kOther ? ToString(*provider) : name;
}

std::string_view ToString(Provider value) { return kProviderNames[static_cast<size_t>(value)]; }
std::string_view ToString(MigBasis value) { return kMigBasisNames[static_cast<size_t>(value)]; }
std::string_view ToString(Purchase value) { return kPurchaseNames[static_cast<size_t>(value)]; }
std::string_view ToString(Payment value) { return kPaymentNames[static_cast<size_t>(value)]; }
std::string_view ToString(ChargeCategory value) { return kChargeCategoryNames[static_cast<size_t>(value)]; }
std::string_view ToString(Basis value) { return kBasisNames[static_cast<size_t>(value)]; }
std::string_view ToString(IdleMode value) { return kIdleModeNames[static_cast<size_t>(value)]; }
std::string_view ToString(CostDriver value) { return kCostDriverNames[static_cast<size_t>(value)]; }

absl::StatusOr<Provider> ParseProvider(std::string_view text) {
  return ParseName<Provider>(kProviderNames, kProviderAliases, text, true, "provider", "provider");
}
absl::StatusOr<MigBasis> ParseMigBasis(std::string_view text) {
  return ParseName<MigBasis>(kMigBasisNames, {}, text, false, "basis", "basis");
}
absl::StatusOr<Purchase> ParsePurchase(std::string_view text) {
  return ParseName<Purchase>(kPurchaseNames, kPurchaseAliases, text, true, "purchase", "purchase");
}
absl::StatusOr<Payment> ParsePayment(std::string_view text) {
  return ParseName<Payment>(kPaymentNames, {}, text, true, "payment", "payment");
}
absl::StatusOr<ChargeCategory> ParseChargeCategory(std::string_view text) {
  return ParseName<ChargeCategory>(kChargeCategoryNames, {}, text, true, "charge_category", "charge category");
}
absl::StatusOr<Basis> ParseBasis(std::string_view text) {
  return ParseName<Basis>(kBasisNames, {}, text, false, "basis", "basis");
}
absl::StatusOr<IdleMode> ParseIdleMode(std::string_view text) {
  return ParseName<IdleMode>(kIdleModeNames, {}, text, false, "idle", "idle mode");
}
absl::StatusOr<CostDriver> ParseCostDriver(std::string_view text) {
  return ParseName<CostDriver>(kCostDriverNames, {}, text, false, "driver", "cost driver");
}

std::vector<EnumSpellings> ModelEnumSpellings() {
  return {{"Provider", AllOf(kProviderNames)}, {"MigBasis", AllOf(kMigBasisNames)},
          {"Purchase", AllOf(kPurchaseNames)}, {"Payment", AllOf(kPaymentNames)},
          {"ChargeCategory", AllOf(kChargeCategoryNames)}, {"Basis", AllOf(kBasisNames)},
          {"IdleMode", AllOf(kIdleModeNames)}, {"CostDriver", AllOf(kCostDriverNames)},
          {"Reserved", {kIdle, kUnattributed, kUnobserved, kUnlabelled, kDown}}};
}

}  // namespace gpucost
