// Owned hardware as cost lines (include/gpucost/owned.h, docs/onprem.md).
//
// Spread amounts (capex, facility, support, operations) are whole
// micro-dollars: a period's amount P over [ps, pe) has the running total
// M(t) = round(P * (t - ps) / (pe - ps)), and a line [a, b) gets M(b) - M(a),
// so the lines of a period add up to P exactly however they are cut. Power is
// energy x PUE x tariff, hour by hour.
#include "gpucost/owned.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/numeric/int128.h"
#include "absl/strings/str_cat.h"
#include "gpucost/status.h"
#include "gpucost/time.h"

namespace gpucost {
namespace {

constexpr double kMicros = 1e6;
constexpr double kJoulesPerKwh = 3.6e6;
constexpr int kMaxLifeYears = 30;
constexpr std::array<std::string_view, 5> kComponentNames = {"capex", "power", "facility", "support", "operations"};

std::string Num(double v) { return absl::StrCat(v); }

// Debian's Abseil has its own string_view (status.h).
absl::string_view ToAbsl(std::string_view sv) { return {sv.data(), sv.size()}; }

absl::Status ClassError(std::string_view name, std::string_view field, std::string_view what) {
  return TableError(absl::StrCat("owned: node class '", ToAbsl(name), "'"),
                    absl::StrCat("field '", ToAbsl(field), "': ", ToAbsl(what)));
}

absl::Status NodeError(std::string_view name, std::string_view field, std::string_view what) {
  return TableError(absl::StrCat("owned: node '", ToAbsl(name), "'"),
                    absl::StrCat("field '", ToAbsl(field), "': ", ToAbsl(what)));
}

absl::Status ClusterError(std::string_view field, std::string_view what) {
  return TableError("owned", absl::StrCat("field '", ToAbsl(field), "': ", ToAbsl(what)));
}

bool NonNegative(double v) { return std::isfinite(v) && v >= 0; }

int64_t ToMicros(double amount) { return std::llround(amount * kMicros); }

// One amount spread evenly over [start, end).
struct Spread {
  int64_t start = 0;
  int64_t end = 0;
  int64_t micros = 0;
};

// The running total of `s` at t (clamped into the period), rounded half up.
int64_t RunningMicros(const Spread& s, int64_t t) {
  const int64_t x = std::clamp(t, s.start, s.end) - s.start;
  const int64_t length = s.end - s.start;
  const absl::int128 scaled = absl::int128(s.micros) * x * 2 + length;
  return static_cast<int64_t>(scaled / (absl::int128(length) * 2));
}

// What the spreads (sorted, not overlapping) charge to [a, b).
int64_t MicrosIn(std::span<const Spread> spreads, int64_t a, int64_t b) {
  auto it = std::upper_bound(spreads.begin(), spreads.end(), a, [](int64_t t, const Spread& s) { return t < s.end; });
  int64_t out = 0;
  for (; it != spreads.end() && it->start < b; ++it) out += RunningMicros(*it, b) - RunningMicros(*it, a);
  return out;
}

// `instant` moved by whole calendar years (UTC), its time of day kept; a
// 29 February lands on the 28th in common years.
int64_t AddYears(int64_t instant, int years) {
  const int64_t days = instant / kNanosPerDay;
  const int64_t time_of_day = instant - days * kNanosPerDay;
  const CivilDate date = CivilFromDays(days);
  const int64_t year = date.year + years;
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  const unsigned day = (date.month == 2 && date.day == 29 && !leap) ? 28 : date.day;
  return DaysFromCivil(year, date.month, day) * kNanosPerDay + time_of_day;
}

int64_t NextMonth(int64_t month_start) {
  const CivilDate date = CivilFromDays(month_start / kNanosPerDay);
  return date.month == 12 ? DaysFromCivil(date.year + 1, 1, 1) * kNanosPerDay
                          : DaysFromCivil(date.year, date.month + 1, 1) * kNanosPerDay;
}

// `micros` in every calendar month that meets [start, end).
std::vector<Spread> Monthly(int64_t micros, int64_t start, int64_t end) {
  std::vector<Spread> out;
  for (int64_t m = FloorToPeriod(start, PeriodFreq::kMonthStart); m < end;) {
    const int64_t next = NextMonth(m);
    out.push_back({m, next, micros});
    m = next;
  }
  return out;
}

// `micros[k]` over service year k of a life starting at `in_service`.
std::vector<Spread> ByServiceYear(std::span<const int64_t> micros, int64_t in_service) {
  std::vector<Spread> out;
  for (size_t k = 0; k < micros.size(); ++k) {
    out.push_back({AddYears(in_service, static_cast<int>(k)), AddYears(in_service, static_cast<int>(k) + 1),
                   micros[k]});
  }
  return out;
}

// (price - residual) over the life: one straight line, or per service year
// by the schedule's fractions, rounded on their running total so the years
// add up to the whole exactly.
std::vector<Spread> Depreciation(const OwnedNodeClass& c, int64_t in_service) {
  const int64_t total = ToMicros(c.price) - ToMicros(c.residual);
  if (c.depreciation_schedule.empty()) return {{in_service, AddYears(in_service, c.life_years), total}};
  std::vector<int64_t> years;
  double cumulative = 0;
  int64_t done = 0;
  for (size_t k = 0; k < c.depreciation_schedule.size(); ++k) {
    cumulative += c.depreciation_schedule[k];
    const int64_t upto = k + 1 == c.depreciation_schedule.size()
                             ? total
                             : std::llround(static_cast<double>(total) * cumulative);
    years.push_back(upto - done);
    done = upto;
  }
  return ByServiceYear(years, in_service);
}

// ---- checks ----------------------------------------------------------------------

absl::Status CheckCurve(const OwnedNodeClass& c) {
  for (size_t i = 0; i < c.power_curve.size(); ++i) {
    const PowerCurvePoint& p = c.power_curve[i];
    if (!(p.util >= 0 && p.util <= 1)) {
      return ClassError(c.name, "power_curve", absl::StrCat("point ", i, ": util ", Num(p.util), " is outside [0, 1]"));
    }
    if (!NonNegative(p.fraction)) {
      return ClassError(c.name, "power_curve",
                        absl::StrCat("point ", i, ": fraction ", Num(p.fraction), " is not a fraction of TDP >= 0"));
    }
    if (i > 0 && !(p.util > c.power_curve[i - 1].util)) {
      return ClassError(c.name, "power_curve", absl::StrCat("point ", i, ": util ", Num(p.util),
                                                            " does not rise from the point before"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckClass(const OwnedNodeClass& c) {
  if (c.name.empty()) return ClassError("", "name", "a class needs a name");
  if (c.gpus < 0 || c.gpus > 1024) return ClassError(c.name, "gpus", absl::StrCat(c.gpus, " is not a GPU count"));
  if (!std::isfinite(c.price) || c.price <= 0) return ClassError(c.name, "price", Num(c.price) + " is not a price > 0");
  if (c.life_years < 1 || c.life_years > kMaxLifeYears) {
    return ClassError(c.name, "life_years", absl::StrCat(c.life_years, " is not a service life of 1 to ",
                                                         kMaxLifeYears, " years"));
  }
  if (!NonNegative(c.residual) || c.residual > c.price) {
    return ClassError(c.name, "residual", Num(c.residual) + " is not a value in [0, price]");
  }
  if (!c.depreciation_schedule.empty()) {
    if (c.depreciation_schedule.size() != static_cast<size_t>(c.life_years)) {
      return ClassError(c.name, "depreciation_schedule",
                        absl::StrCat(c.depreciation_schedule.size(), " fractions for a life of ", c.life_years,
                                     " years (one per service year)"));
    }
    double sum = 0;
    for (const double f : c.depreciation_schedule) {
      if (!NonNegative(f)) return ClassError(c.name, "depreciation_schedule", Num(f) + " is not a fraction >= 0");
      sum += f;
    }
    if (std::abs(sum - 1) > 1e-9) {
      return ClassError(c.name, "depreciation_schedule", "the fractions add up to " + Num(sum) + ", not 1");
    }
  }
  const std::pair<std::string_view, double> amounts[] = {
      {"support_per_year", c.support_per_year}, {"facility_per_kw_month", c.facility_per_kw_month},
      {"facility_kw", c.facility_kw},           {"facility_per_rack_month", c.facility_per_rack_month},
      {"rack_share", c.rack_share},             {"max_power_w", c.max_power_w},
      {"gpu_tdp_w", c.gpu_tdp_w},               {"base_power_w", c.base_power_w}};
  for (const auto& [field, value] : amounts) {
    if (!NonNegative(value)) return ClassError(c.name, field, Num(value) + " is not a number >= 0");
  }
  if (!std::isnan(c.fixed_power_w) && !NonNegative(c.fixed_power_w)) {
    return ClassError(c.name, "fixed_power_w", Num(c.fixed_power_w) + " is not a draw in W >= 0");
  }
  if (c.facility_per_kw_month > 0 && c.facility_per_rack_month > 0) {
    return ClassError(c.name, "facility_per_rack_month", "give facility per kW-month or per rack-month, not both");
  }
  if (c.facility_per_kw_month > 0 && c.facility_kw == 0 && c.max_power_w == 0) {
    return ClassError(c.name, "facility_kw", "facility is per kW-month but neither facility_kw nor max_power_w is set");
  }
  return CheckCurve(c);
}

absl::Status CheckTariff(const Tariff& t) {
  if (!NonNegative(t.flat_per_kwh)) return ClusterError("tariff", Num(t.flat_per_kwh) + " is not a price per kWh >= 0");
  if (!t.by_hour.empty() && t.by_hour.size() != 24) {
    return ClusterError("tariff", absl::StrCat(t.by_hour.size(), " rates by hour of day (expected 24)"));
  }
  for (size_t h = 0; h < t.by_hour.size(); ++h) {
    if (!NonNegative(t.by_hour[h])) {
      return ClusterError("tariff", absl::StrCat("hour ", h, ": ", Num(t.by_hour[h]), " is not a price per kWh >= 0"));
    }
  }
  for (size_t i = 0; i < t.series.size(); ++i) {
    const TariffPeriod& p = t.series[i];
    if (p.start % kNanosPerHour != 0 || p.end % kNanosPerHour != 0 || !(p.end > p.start)) {
      return RowError("tariff", static_cast<long long>(i), "start",
                      "a tariff period is [start, end) on whole hours with end > start");
    }
    if (!NonNegative(p.per_kwh)) {
      return RowError("tariff", static_cast<long long>(i), "per_kwh", Num(p.per_kwh) + " is not a price per kWh >= 0");
    }
  }
  return absl::OkStatus();
}

// ---- power --------------------------------------------------------------------------

// The price of a kWh in the hour starting at `hour`.
class Rates {
 public:
  explicit Rates(const Tariff& tariff) : tariff_(tariff) {
    for (size_t i = 0; i < tariff.series.size(); ++i) order_.push_back(i);
    std::sort(order_.begin(), order_.end(),
              [&](size_t a, size_t b) { return tariff.series[a].start < tariff.series[b].start; });
  }

  absl::Status CheckSeries() const {
    for (size_t i = 1; i < order_.size(); ++i) {
      if (tariff_.series[order_[i]].start < tariff_.series[order_[i - 1]].end) {
        return RowError("tariff", static_cast<long long>(order_[i]), "start", "overlaps another tariff period");
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<double> At(int64_t hour) const {
    if (!order_.empty()) {
      auto it = std::upper_bound(order_.begin(), order_.end(), hour,
                                 [&](int64_t t, size_t i) { return t < tariff_.series[i].end; });
      if (it == order_.end() || tariff_.series[*it].start > hour) {
        return ClusterError("tariff", absl::StrCat("the series has no price for the hour starting ",
                                                   hour / kNanosPerHour, " h after the epoch"));
      }
      return tariff_.series[*it].per_kwh;
    }
    if (!tariff_.by_hour.empty()) return tariff_.by_hour[static_cast<size_t>((hour / kNanosPerHour) % 24)];
    return tariff_.flat_per_kwh;
  }

 private:
  const Tariff& tariff_;
  std::vector<size_t> order_;
};

double CurveFraction(std::span<const PowerCurvePoint> curve, double util) {
  if (curve.empty()) return 1.0;
  if (util <= curve.front().util) return curve.front().fraction;
  if (util >= curve.back().util) return curve.back().fraction;
  auto hi = std::upper_bound(curve.begin(), curve.end(), util,
                             [](double u, const PowerCurvePoint& p) { return u < p.util; });
  auto lo = hi - 1;
  return lo->fraction + (hi->fraction - lo->fraction) * (util - lo->util) / (hi->util - lo->util);
}

// What the samples say about each owned node, hour by hour (hour h starts at
// first_hour + h hours): measured GPU energy (J) and, for nodes priced by
// the curve, GPU-seconds kept busy per device.
struct NodeHours {
  std::vector<double> joules;     // [hour]
  std::vector<uint8_t> measured;  // [hour]
  std::vector<double> busy;       // [hour * gpus + device]; empty: not needed
};

struct PowerSample {
  size_t node;
  int32_t device;
  int64_t instant;     // the sample's timestamp, ns: its key with node and device
  int64_t start, end;  // ns, clipped to the node's priced window
  double watts;
};

// Adds `amount` per second of [start, end) to the hours it meets.
template <typename Add>
void ByHour(int64_t first_hour, int64_t start, int64_t end, Add add) {
  for (int64_t t = start; t < end;) {
    const int64_t h = (t - first_hour) / kNanosPerHour;
    const int64_t hour_end = first_hour + (h + 1) * kNanosPerHour;
    const int64_t piece_end = std::min(end, hour_end);
    add(static_cast<size_t>(h), static_cast<double>(piece_end - t) / kNanosPerSecond);
    t = piece_end;
  }
}

struct Window {
  int64_t start, end;  // the node's priced time: [max(range start, in_service), range end)
};

absl::Status ReadSamples(const SampleColumns& s, std::span<const OwnedNode> nodes,
                         std::span<const OwnedNodeClass* const> node_class, std::span<const Window> windows,
                         int64_t first_hour, const OwnedOptions& options, std::vector<NodeHours>& out) {
  const size_t n = s.size();
  if (s.resource_id.codes.size() != n || s.device.size() != n || s.consumer.codes.size() != n ||
      s.share.size() != n || s.util.size() != n || (s.duration && s.duration->size() != n) ||
      (s.power_w && s.power_w->size() != n)) {
    return TableError("usage", "columns differ in length");
  }
  if (n == 0) return absl::OkStatus();
  absl::flat_hash_map<std::string_view, size_t> node_of;
  for (size_t i = 0; i < nodes.size(); ++i) node_of.emplace(nodes[i].resource_id, i);
  std::vector<int64_t> code_node(s.resource_id.dictionary.size(), -1);
  for (size_t c = 0; c < code_node.size(); ++c) {
    if (auto it = node_of.find(s.resource_id.dictionary[c]); it != node_of.end()) code_node[c] = static_cast<int64_t>(it->second);
  }
  const auto ticks = static_cast<int64_t>(s.time_unit);
  int64_t interval = 0;
  if (!s.duration) {
    if (!options.interval_seconds || !(*options.interval_seconds > 0) || !std::isfinite(*options.interval_seconds)) {
      return ParameterError("interval", "the samples have no duration column: give the seconds each stands for");
    }
    interval = std::llround(*options.interval_seconds * kNanosPerSecond);
  }
  std::vector<PowerSample> power;
  for (size_t i = 0; i < n; ++i) {
    const int32_t code = s.resource_id.codes[i];
    if (code < 0 || static_cast<size_t>(code) >= code_node.size() || code_node[code] < 0) continue;
    const auto node = static_cast<size_t>(code_node[code]);
    const OwnedNodeClass& c = *node_class[node];
    const auto row = static_cast<long long>(i);
    if (!InstantInRange(s.timestamp[i], s.time_unit)) return RowError("usage", row, "timestamp", "not a valid instant");
    const int32_t device = s.device[i];
    if (device < 0 || device >= c.gpus) {
      return RowError("usage", row, "device", absl::StrCat("device ", device, " of owned node '", nodes[node].resource_id,
                                                           "', whose class '", c.name, "' has ", c.gpus, " GPUs"));
    }
    int64_t length = interval;
    if (s.duration) {
      if (!DurationInRange((*s.duration)[i], s.time_unit)) return RowError("usage", row, "duration", "not a duration > 0");
      length = (*s.duration)[i] * ticks;
    }
    const int64_t t = s.timestamp[i] * ticks;
    const int64_t start = std::max(t, windows[node].start);
    const int64_t end = std::min(t + length, windows[node].end);
    if (start >= end) continue;
    if (s.power_w) {
      const double watts = (*s.power_w)[i];
      if (!std::isnan(watts)) {
        if (!NonNegative(watts)) return RowError("usage", row, "power_w", Num(watts) + " is not a draw in W >= 0");
        // The whole device's draw is repeated on each holder's row: keyed by
        // the sample's instant so that each (device, instant) counts once.
        power.push_back({node, device, t, start, end, watts});
      }
    }
    NodeHours& hours = out[node];
    const int32_t consumer = s.consumer.codes[i];
    const bool held = consumer >= 0 && !s.consumer.dictionary[consumer].empty();
    if (held && !hours.busy.empty()) {
      const double weight = s.share[i] * std::clamp(s.util[i], 0.0, 1.0);
      if (std::isfinite(weight) && weight > 0) {
        ByHour(first_hour, start, end, [&](size_t h, double seconds) {
          hours.busy[h * static_cast<size_t>(c.gpus) + static_cast<size_t>(device)] += weight * seconds;
        });
      }
    }
  }
  // One reading per (node, device, instant): the device's draw is on every
  // holder's row of that instant (SEMANTICS 9).
  std::sort(power.begin(), power.end(), [](const PowerSample& a, const PowerSample& b) {
    return std::tie(a.node, a.device, a.instant, a.end) < std::tie(b.node, b.device, b.instant, b.end);
  });
  for (size_t i = 0; i < power.size(); ++i) {
    const PowerSample& p = power[i];
    if (i > 0 && p.node == power[i - 1].node && p.device == power[i - 1].device && p.instant == power[i - 1].instant) {
      continue;
    }
    NodeHours& hours = out[p.node];
    ByHour(first_hour, p.start, p.end, [&](size_t h, double seconds) {
      hours.joules[h] += p.watts * seconds;
      hours.measured[h] = 1;
    });
  }
  return absl::OkStatus();
}

// ---- lines ---------------------------------------------------------------------------

struct LineAmount {
  double cost = 0;
  double kwh = 0;          // power lines: IT energy
  bool estimated = false;  // power lines: some hour not measured
};

LineAmount Money(int64_t micros) { return {.cost = static_cast<double>(micros) / kMicros}; }

class LineWriter {
 public:
  LineWriter(const OwnedCluster& cluster, const OwnedOptions& options)
      : currency_(cluster.currency), step_(options.freq == PeriodFreq::kDay ? kNanosPerDay : kNanosPerHour) {}

  // Calls amount(a, b) for each step [a, b) of [start, end) (UTC-aligned,
  // clipped) and writes a line of what it returns.
  template <typename Amount>
  absl::Status Write(std::string_view resource, OwnedComponent component, bool primary, int64_t start, int64_t end,
                     Amount amount) {
    for (int64_t a = start; a < end;) {
      const int64_t b = std::min(end, FloorToPeriod(a, step_ == kNanosPerDay ? PeriodFreq::kDay : PeriodFreq::kHour) + step_);
      absl::StatusOr<LineAmount> line = amount(a, b);
      if (!line.ok()) return line.status();
      Add(resource, component, primary, a, b, *line);
      a = b;
    }
    return absl::OkStatus();
  }

  OwnedCostTable Finish() {
    out_.lines.resource_id = resources_.Finish();
    out_.lines.currency = currencies_.Finish();
    return std::move(out_);
  }

 private:
  void Add(std::string_view resource, OwnedComponent component, bool primary, int64_t a, int64_t b,
           const LineAmount& line) {
    CostTable& t = out_.lines;
    resources_.AddOrNull(resource);
    currencies_.AddOrNull(currency_);
    t.start.push_back(a);
    t.end.push_back(b);
    t.cost.push_back(line.cost);
    t.list_cost.push_back(line.cost);  // nothing cheaper to compare with: no savings
    t.quantity_hours.push_back(std::numeric_limits<double>::quiet_NaN());
    t.primary.push_back(primary ? 1 : 0);
    t.purchase.push_back(Purchase::kOwned);
    t.category.push_back(ChargeCategory::kUsage);
    t.driver.push_back(static_cast<uint8_t>(component == OwnedComponent::kPower ? CostDriver::kEnergy
                                                                                 : CostDriver::kGpuTime));
    out_.component.push_back(component);
    out_.energy_kwh.push_back(line.kwh);
    out_.energy_estimated.push_back(line.estimated ? 1 : 0);
  }

  std::string currency_;
  int64_t step_;
  StringEncoder resources_, currencies_;
  OwnedCostTable out_;
};

}  // namespace

std::string_view ToString(OwnedComponent value) { return kComponentNames[static_cast<size_t>(value)]; }

absl::StatusOr<OwnedComponent> ParseOwnedComponent(std::string_view text) {
  for (size_t i = 0; i < kComponentNames.size(); ++i) {
    if (text == kComponentNames[i]) return static_cast<OwnedComponent>(i);
  }
  return ParameterError("component", absl::StrCat("unknown component '", ToAbsl(text),
                                                  "' (expected capex, power, facility, support or operations)"));
}

absl::StatusOr<OwnedCostTable> OwnedCostLines(const OwnedCluster& cluster, const OwnedOptions& options,
                                              const SampleColumns* samples) {
  if (options.start == kMissingInstant || !InstantInRange(options.start, TimeUnit::kNanosecond)) {
    return ParameterError("start", "not a valid instant");
  }
  if (options.end == kMissingInstant || !InstantInRange(options.end, TimeUnit::kNanosecond) ||
      options.end <= options.start) {
    return ParameterError("end", "not a valid instant after start");
  }
  if (options.freq == PeriodFreq::kMonthStart) return ParameterError("freq", "owned cost lines are hourly or daily");
  if (!std::isfinite(cluster.pue) || cluster.pue < 1) return ClusterError("pue", Num(cluster.pue) + " is not a PUE >= 1");
  if (!NonNegative(cluster.operations_per_month)) {
    return ClusterError("operations_per_month", Num(cluster.operations_per_month) + " is not an amount >= 0");
  }
  GPUCOST_RETURN_IF_ERROR(CheckTariff(cluster.tariff));
  const Rates rates(cluster.tariff);
  GPUCOST_RETURN_IF_ERROR(rates.CheckSeries());

  absl::flat_hash_map<std::string_view, const OwnedNodeClass*> classes;
  for (const OwnedNodeClass& c : cluster.classes) {
    GPUCOST_RETURN_IF_ERROR(CheckClass(c));
    if (!classes.emplace(c.name, &c).second) return ClassError(c.name, "name", "two classes have this name");
  }
  std::vector<const OwnedNodeClass*> node_class;
  std::vector<int64_t> in_service;
  std::vector<Window> windows;
  absl::flat_hash_map<std::string_view, size_t> seen;
  for (const OwnedNode& node : cluster.nodes) {
    if (node.resource_id.empty()) return NodeError("", "resource_id", "a node needs a resource_id");
    if (!seen.emplace(node.resource_id, node_class.size()).second) {
      return NodeError(node.resource_id, "resource_id", "listed twice");
    }
    auto it = classes.find(node.node_class);
    if (it == classes.end()) {
      return NodeError(node.resource_id, "class", absl::StrCat("no node class '", node.node_class, "'"));
    }
    const int64_t since = node.in_service != kMissingInstant ? node.in_service : it->second->in_service;
    if (since == kMissingInstant || !InstantInRange(since, TimeUnit::kNanosecond)) {
      return NodeError(node.resource_id, "in_service", "not set (on the node or its class)");
    }
    node_class.push_back(it->second);
    in_service.push_back(since);
    windows.push_back({std::max(options.start, since), options.end});
  }

  const int64_t first_hour = FloorToPeriod(options.start, PeriodFreq::kHour);
  const auto hours = static_cast<size_t>((options.end - first_hour + kNanosPerHour - 1) / kNanosPerHour);
  std::vector<NodeHours> measured(cluster.nodes.size());
  for (size_t i = 0; i < measured.size(); ++i) {
    measured[i].joules.assign(hours, 0.0);
    measured[i].measured.assign(hours, 0);
    if (std::isnan(node_class[i]->fixed_power_w) && node_class[i]->gpu_tdp_w > 0) {
      measured[i].busy.assign(hours * static_cast<size_t>(node_class[i]->gpus), 0.0);
    }
  }
  if (samples != nullptr) {
    GPUCOST_RETURN_IF_ERROR(ReadSamples(*samples, cluster.nodes, node_class, windows, first_hour, options, measured));
  }

  LineWriter out(cluster, options);
  for (size_t i = 0; i < cluster.nodes.size(); ++i) {
    const OwnedNode& node = cluster.nodes[i];
    const OwnedNodeClass& c = *node_class[i];
    const Window w = windows[i];
    const int64_t end_of_life = AddYears(in_service[i], c.life_years);
    const int64_t life_end = std::min(w.end, end_of_life);

    const std::vector<Spread> capex = Depreciation(c, in_service[i]);
    GPUCOST_RETURN_IF_ERROR(out.Write(node.resource_id, OwnedComponent::kCapex, true, w.start, life_end,
                                      [&](int64_t a, int64_t b) -> absl::StatusOr<LineAmount> {
                                        return Money(MicrosIn(capex, a, b));
                                      }));

    const NodeHours& h = measured[i];
    const bool has_curve = c.gpu_tdp_w > 0 || c.base_power_w > 0;
    auto power = [&](int64_t a, int64_t b) -> absl::StatusOr<LineAmount> {
      double cost = 0, joules = 0;
      bool estimated = false;
      for (int64_t t = a; t < b;) {
        const auto hour = static_cast<size_t>((t - first_hour) / kNanosPerHour);
        const int64_t hour_start = first_hour + static_cast<int64_t>(hour) * kNanosPerHour;
        const int64_t piece_end = std::min(b, hour_start + kNanosPerHour);
        const double seconds = static_cast<double>(piece_end - t) / kNanosPerSecond;
        double j = 0;
        if (h.measured[hour]) {
          j = h.joules[hour] + c.base_power_w * seconds;
        } else if (!std::isnan(c.fixed_power_w)) {
          j = c.fixed_power_w * seconds;
          estimated = true;
        } else if (has_curve) {
          double gpu_w = 0;
          for (int d = 0; d < c.gpus && !h.busy.empty(); ++d) {
            const double util = std::min(1.0, h.busy[hour * static_cast<size_t>(c.gpus) + static_cast<size_t>(d)] / seconds);
            gpu_w += c.gpu_tdp_w * CurveFraction(c.power_curve, util);
          }
          j = (gpu_w + c.base_power_w) * seconds;
          estimated = true;
        } else {
          return NodeError(node.resource_id, "power",
                           absl::StrCat("no power measured in the hour starting ", hour_start / kNanosPerHour,
                                        " h after the epoch, and class '", c.name,
                                        "' sets neither fixed_power_w nor gpu_tdp_w"));
        }
        absl::StatusOr<double> rate = rates.At(hour_start);
        if (!rate.ok()) return rate.status();
        cost += j / kJoulesPerKwh * cluster.pue * *rate;
        joules += j;
        t = piece_end;
      }
      return LineAmount{.cost = cost, .kwh = joules / kJoulesPerKwh, .estimated = estimated};
    };
    // After the end of life no capex line bills the node's time: the power line does.
    for (const auto& [from, to, primary] : {std::tuple{w.start, life_end, false}, std::tuple{life_end, w.end, true}}) {
      GPUCOST_RETURN_IF_ERROR(
          out.Write(node.resource_id, OwnedComponent::kPower, primary, std::max(from, w.start), to, power));
    }

    const double facility_month = c.facility_per_kw_month > 0
                                      ? c.facility_per_kw_month * (c.facility_kw > 0 ? c.facility_kw : c.max_power_w / 1000)
                                      : c.facility_per_rack_month * c.rack_share;
    if (facility_month > 0 && w.start < w.end) {
      const std::vector<Spread> monthly = Monthly(ToMicros(facility_month), w.start, w.end);
      GPUCOST_RETURN_IF_ERROR(out.Write(node.resource_id, OwnedComponent::kFacility, false, w.start, w.end,
                                        [&](int64_t a, int64_t b) -> absl::StatusOr<LineAmount> {
                                          return Money(MicrosIn(monthly, a, b));
                                        }));
    }
    if (c.support_per_year > 0) {
      const std::vector<int64_t> years(static_cast<size_t>(c.life_years), ToMicros(c.support_per_year));
      const std::vector<Spread> support = ByServiceYear(years, in_service[i]);
      GPUCOST_RETURN_IF_ERROR(out.Write(node.resource_id, OwnedComponent::kSupport, false, w.start, life_end,
                                        [&](int64_t a, int64_t b) -> absl::StatusOr<LineAmount> {
                                          return Money(MicrosIn(support, a, b));
                                        }));
    }
  }
  if (cluster.operations_per_month > 0) {
    const std::vector<Spread> monthly = Monthly(ToMicros(cluster.operations_per_month), options.start, options.end);
    GPUCOST_RETURN_IF_ERROR(out.Write("", OwnedComponent::kOperations, false, options.start, options.end,
                                      [&](int64_t a, int64_t b) -> absl::StatusOr<LineAmount> {
                                        return Money(MicrosIn(monthly, a, b));
                                      }));
  }
  return out.Finish();
}

}  // namespace gpucost
