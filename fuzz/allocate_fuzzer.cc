// libFuzzer target: the engine's validation and proration fed random tables.
//
// Bytes become small cost, inventory, sample and workload tables (ids from a
// pool that includes the reserved names, nulls and empty strings; instants,
// durations and amounts anywhere in their types' ranges, NaN and infinity
// included) and a random policy. Allocate() must return a status, never
// crash; when it succeeds, the diagnostics must add up, money must be
// conserved, and the streaming Allocator fed the samples in two chunks must
// agree with the one-shot call.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "fuzzer/FuzzedDataProvider.h"
#include "gpucost/allocate.h"
#include "gpucost/columns.h"

namespace {

using gpucost::AllocationPolicy;
using gpucost::kNullCode;

constexpr const char* kIds[] = {"", "r0", "r1", "r2", "__idle__", "__unattributed__", "__unlabelled__"};
constexpr const char* kConsumers[] = {"", "a", "b", "c", "__idle__", "__unlabelled__", "__unobserved__"};
constexpr const char* kCurrencies[] = {"", "USD", "EUR"};
constexpr int64_t kHour = 3'600'000'000'000;
constexpr int64_t kT0 = 1'772'323'200'000'000'000;  // 2026-03-01T00:00Z

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "allocate_fuzzer: invariant violated: %s\n", what);
    std::abort();
  }
}

// Mostly realistic values, sometimes anything the type can hold.
int64_t Instant(FuzzedDataProvider& in) {
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) return in.ConsumeIntegral<int64_t>();
  return kT0 + in.ConsumeIntegralInRange<int64_t>(-2, 12) * kHour / 4;
}
double Amount(FuzzedDataProvider& in, double lo, double hi) {
  switch (in.ConsumeIntegralInRange<int>(0, 15)) {
    case 0: return in.ConsumeFloatingPoint<double>();
    case 1: return std::nan("");
    case 2: return INFINITY;
    case 3: return 0.0;
    default: return in.ConsumeFloatingPointInRange<double>(lo, hi);
  }
}

// A string column built from a pool, with nulls.
struct Strings {
  std::vector<int32_t> codes;
  std::vector<std::string_view> dictionary;
  void Init(const char* const* pool, size_t n) {
    for (size_t i = 0; i < n; ++i) dictionary.emplace_back(pool[i]);
  }
  void Add(FuzzedDataProvider& in) {
    const int32_t n = static_cast<int32_t>(dictionary.size());
    codes.push_back(in.ConsumeIntegralInRange<int32_t>(-1, n - 1));
  }
  gpucost::StringColumn view() const { return {codes, dictionary}; }
};

struct Tables {
  Strings cost_ids, inv_ids, sample_ids, consumers, wl_consumers, teams, currencies;
  std::vector<int64_t> start, end, timestamp, duration;
  std::vector<double> cost, list_cost, quantity_hours, mem_capacity, share, util, mem_used;
  std::vector<uint8_t> primary;
  std::vector<int32_t> inv_device, device;
  bool has_list_cost = false, has_duration = false, has_workloads = false;
  bool has_currency = false, has_primary = false, has_quantity = false;
  gpucost::TimeUnit cost_unit = gpucost::TimeUnit::kNanosecond, sample_unit = gpucost::TimeUnit::kNanosecond;
};

gpucost::TimeUnit Unit(FuzzedDataProvider& in) {
  constexpr gpucost::TimeUnit kUnits[] = {gpucost::TimeUnit::kNanosecond, gpucost::TimeUnit::kMicrosecond,
                                          gpucost::TimeUnit::kMillisecond, gpucost::TimeUnit::kSecond};
  // Mostly ns, so realistic instants stay realistic.
  return in.ConsumeIntegralInRange<int>(0, 7) < 5 ? kUnits[0] : kUnits[in.ConsumeIntegralInRange<int>(0, 3)];
}

void Build(FuzzedDataProvider& in, Tables& t) {
  t.cost_ids.Init(kIds, std::size(kIds));
  t.inv_ids.Init(kIds, std::size(kIds));
  t.sample_ids.Init(kIds, std::size(kIds));
  t.consumers.Init(kConsumers, std::size(kConsumers));
  t.wl_consumers.Init(kConsumers, std::size(kConsumers));
  constexpr const char* kTeams[] = {"x", "y", "__idle__"};
  t.teams.Init(kTeams, std::size(kTeams));
  t.currencies.Init(kCurrencies, std::size(kCurrencies));
  t.has_currency = in.ConsumeBool();
  t.has_primary = in.ConsumeBool();
  t.has_quantity = in.ConsumeBool();
  t.has_list_cost = in.ConsumeBool();
  t.has_duration = in.ConsumeBool();
  t.has_workloads = in.ConsumeBool();
  t.cost_unit = Unit(in);
  t.sample_unit = Unit(in);

  const int lines = in.ConsumeIntegralInRange<int>(0, 6);
  for (int i = 0; i < lines; ++i) {
    t.cost_ids.Add(in);
    const int64_t s = Instant(in);
    t.start.push_back(s);
    t.end.push_back(in.ConsumeBool() ? static_cast<int64_t>(static_cast<uint64_t>(s) + kHour) : Instant(in));
    t.cost.push_back(Amount(in, -10, 100));
    t.list_cost.push_back(Amount(in, 0, 150));
    t.currencies.Add(in);
    t.primary.push_back(in.ConsumeIntegral<uint8_t>() % 3);  // 0, 1 or another nonzero byte
    t.quantity_hours.push_back(Amount(in, 0, 30));
  }
  const int devices = in.ConsumeIntegralInRange<int>(0, 6);
  for (int i = 0; i < devices; ++i) {
    t.inv_ids.Add(in);
    t.inv_device.push_back(in.ConsumeIntegralInRange<int32_t>(-1, 3));
    t.mem_capacity.push_back(Amount(in, 1, 80.0 * (1 << 30)));
  }
  const int samples = in.ConsumeIntegralInRange<int>(0, 48);
  for (int i = 0; i < samples; ++i) {
    t.timestamp.push_back(Instant(in));
    t.sample_ids.Add(in);
    t.device.push_back(in.ConsumeIntegralInRange<int32_t>(-1, 3));
    t.consumers.Add(in);
    t.share.push_back(Amount(in, 0, 1));
    t.util.push_back(Amount(in, 0, 1));
    t.mem_used.push_back(Amount(in, 0, 40.0 * (1 << 30)));
    t.duration.push_back(in.ConsumeIntegralInRange<int>(0, 15) == 0 ? in.ConsumeIntegral<int64_t>()
                                                                    : in.ConsumeIntegralInRange<int64_t>(1, 4) * kHour / 8);
  }
  // Rows read twice (SEMANTICS 1.3): copies of some rows, anywhere after them.
  const int copies = t.timestamp.empty() ? 0 : in.ConsumeIntegralInRange<int>(0, 4);
  for (int c = 0; c < copies; ++c) {
    const size_t k = in.ConsumeIntegralInRange<size_t>(0, t.timestamp.size() - 1);
    t.timestamp.push_back(t.timestamp[k]);
    t.sample_ids.codes.push_back(t.sample_ids.codes[k]);
    t.device.push_back(t.device[k]);
    t.consumers.codes.push_back(t.consumers.codes[k]);
    t.share.push_back(t.share[k]);
    t.util.push_back(t.util[k]);
    t.mem_used.push_back(t.mem_used[k]);
    t.duration.push_back(t.duration[k]);
  }
  const int workloads = in.ConsumeIntegralInRange<int>(0, 4);
  for (int i = 0; i < workloads; ++i) {
    t.wl_consumers.Add(in);
    t.teams.Add(in);
  }
}

AllocationPolicy Policy(FuzzedDataProvider& in) {
  AllocationPolicy p;
  p.basis = static_cast<gpucost::Basis>(in.ConsumeIntegralInRange<int>(0, 2));
  p.idle = static_cast<gpucost::IdleMode>(in.ConsumeIntegralInRange<int>(0, 1));
  p.alpha = in.ConsumeIntegralInRange<int>(0, 7) == 0 ? Amount(in, -1, 2) : in.ConsumeProbability<double>();
  p.interval_seconds = in.ConsumeIntegralInRange<int>(0, 7) == 0 ? Amount(in, -60, 1e12) : 60.0;
  p.by.clear();
  constexpr const char* kBy[] = {"consumer", "resource_id", "period", "team"};
  const int keys = in.ConsumeIntegralInRange<int>(0, 3);
  for (int i = 0; i < keys; ++i) p.by.emplace_back(kBy[in.ConsumeIntegralInRange<int>(0, 3)]);
  if (in.ConsumeBool()) p.freq = static_cast<gpucost::PeriodFreq>(in.ConsumeIntegralInRange<int>(0, 2));
  p.threads = 1;
  return p;
}

// With GPUCOST_FUZZ_DUMP set, a replayed input prints its tables: the way to
// read what a crash input means (`GPUCOST_FUZZ_DUMP=1 allocate_fuzzer FILE`).
const char* Name(const Strings& s, size_t row) {
  const int32_t c = s.codes[row];
  return c < 0 ? "<null>" : s.dictionary[static_cast<size_t>(c)].data();
}
void Dump(const Tables& t, const AllocationPolicy& p, size_t split) {
  if (std::getenv("GPUCOST_FUZZ_DUMP") == nullptr) return;
  std::fprintf(stderr, "policy: basis %d idle %d alpha %g interval %g by", static_cast<int>(p.basis),
               static_cast<int>(p.idle), p.alpha, p.interval_seconds.value_or(-1));
  for (const std::string& k : p.by) std::fprintf(stderr, " %s", k.c_str());
  std::fprintf(stderr, " freq %d; split %zu; units cost %d sample %d\n", p.freq ? static_cast<int>(*p.freq) : -1,
               split, static_cast<int>(t.cost_unit), static_cast<int>(t.sample_unit));
  std::fprintf(stderr, "has: currency %d primary %d quantity %d list %d duration %d workloads %d\n",
               t.has_currency, t.has_primary, t.has_quantity, t.has_list_cost, t.has_duration, t.has_workloads);
  for (size_t i = 0; i < t.start.size(); ++i)
    std::fprintf(stderr, "line %zu: %s [%lld, %lld) cost %.17g list %g %s primary %d qh %g\n", i,
                 Name(t.cost_ids, i), static_cast<long long>(t.start[i]), static_cast<long long>(t.end[i]),
                 t.cost[i], t.list_cost[i], Name(t.currencies, i), t.primary[i], t.quantity_hours[i]);
  for (size_t i = 0; i < t.inv_device.size(); ++i)
    std::fprintf(stderr, "device %zu: %s/%d mem %g\n", i, Name(t.inv_ids, i), t.inv_device[i], t.mem_capacity[i]);
  for (size_t i = 0; i < t.timestamp.size(); ++i)
    std::fprintf(stderr, "sample %zu: t %lld %s/%d %s share %g util %g mem %g dur %lld\n", i,
                 static_cast<long long>(t.timestamp[i]), Name(t.sample_ids, i), t.device[i], Name(t.consumers, i),
                 t.share[i], t.util[i], t.mem_used[i], static_cast<long long>(t.duration[i]));
  for (size_t i = 0; i < t.wl_consumers.codes.size(); ++i)
    std::fprintf(stderr, "workload %zu: %s team %s\n", i, Name(t.wl_consumers, i), Name(t.teams, i));
}

double Sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

bool Close(double a, double b) {
  return std::fabs(a - b) <= 1e-6 * std::max({1.0, std::fabs(a), std::fabs(b)});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Tables t;
  Build(in, t);
  const AllocationPolicy policy = Policy(in);
  const size_t split = t.timestamp.empty() ? 0 : in.ConsumeIntegralInRange<size_t>(0, t.timestamp.size());
  Dump(t, policy, split);

  gpucost::CostColumns costs{t.cost_ids.view(), t.start, t.end, t.cost, std::nullopt, t.cost_unit,
                             std::nullopt, std::nullopt, std::nullopt};
  if (t.has_list_cost) costs.list_cost = std::span<const double>(t.list_cost);
  if (t.has_currency) costs.currency = t.currencies.view();
  if (t.has_primary) costs.primary = std::span<const uint8_t>(t.primary);
  if (t.has_quantity) costs.quantity_hours = std::span<const double>(t.quantity_hours);
  const gpucost::InventoryColumns inventory{t.inv_ids.view(), t.inv_device, t.mem_capacity};
  gpucost::SampleColumns samples{t.timestamp, t.sample_ids.view(), t.device, t.consumers.view(),
                                 t.share,     t.util,               t.mem_used, std::nullopt, t.sample_unit};
  if (t.has_duration) samples.duration = std::span<const int64_t>(t.duration);
  gpucost::WorkloadColumns workloads{t.wl_consumers.view(), {{"team", t.teams.view()}}};
  const gpucost::WorkloadColumns* wl = t.has_workloads ? &workloads : nullptr;

  absl::StatusOr<gpucost::Allocation> one_shot = gpucost::Allocate(costs, samples, inventory, wl, policy);

  // The same samples in two chunks through the streaming allocator.
  absl::StatusOr<gpucost::Allocation> streamed = absl::UnknownError("not run");
  auto allocator = gpucost::Allocator::Create(costs, inventory, wl, policy);
  if (allocator.ok()) {
    absl::Status added = (*allocator)->AddSamples(samples.Slice(0, split));
    if (added.ok()) added = (*allocator)->AddSamples(samples.Slice(split, t.timestamp.size() - split));
    streamed = (*allocator)->Finish();
    if (!added.ok()) Check(!streamed.ok(), "Finish() succeeded after a rejected chunk");
  }
  Check(one_shot.ok() == streamed.ok(), "one-shot and streaming disagree on accepting the input");
  if (!one_shot.ok()) return 0;

  const gpucost::Allocation& a = *one_shot;
  if (std::getenv("GPUCOST_FUZZ_DUMP") != nullptr) {
    for (size_t i = 0; i < a.cost.size(); ++i) std::fprintf(stderr, "result %zu: cost %.17g\n", i, a.cost[i]);
  }
  const gpucost::Diagnostics& d = a.diagnostics;
  Check(d.samples_total == static_cast<int64_t>(t.timestamp.size()), "samples_total");
  Check(d.samples_duplicate + d.samples_no_consumer + d.samples_unknown_resource + d.samples_outside_lines +
                d.samples_used ==
            d.samples_total,
        "sample counts add up");
  Check(d.samples_duplicate == streamed->diagnostics.samples_duplicate, "streaming finds the same duplicates");
  Check(d.lines_unattributed + d.lines_unobserved <= d.lines_total, "line counts");
  Check(d.lines_total == static_cast<int64_t>(t.start.size()), "lines_total");
  bool moderate = true;
  for (double c : t.cost) moderate = moderate && std::fabs(c) < 1e9;
  if (moderate) Check(Close(Sum(a.cost), Sum(t.cost)), "conservation: result cost == input cost");
  Check(a.cost.size() == streamed->cost.size(), "streaming result has the same groups");
  for (size_t i = 0; i < a.cost.size(); ++i) {
    if (moderate) Check(Close(a.cost[i], streamed->cost[i]), "streaming result equals one-shot");
  }
  return 0;
}
