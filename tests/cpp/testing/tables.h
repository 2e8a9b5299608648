// Owning row-wise tables for tests, turned into the engine's column views.
#ifndef GPUCOST_TESTS_TESTING_TABLES_H_
#define GPUCOST_TESTS_TESTING_TABLES_H_

#include <string>
#include <vector>

#include "gpucost/gpucost.h"

namespace gpucost::testing {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr int64_t kMinute = 60 * kNanosPerSecond;
// 2026-03-01T00:00Z, a fixed origin for test instants.
// ThreadSanitizer runs the engine's tests about twenty times slower
// (make test builds them with it): the large ones there take fewer samples
// and split them between threads from fewer samples per worker, so threads
// still share the work the same ways.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif
#else
inline constexpr bool kThreadSanitizer = false;
#endif

inline constexpr int64_t kT0 = 20513LL * kNanosPerDay;
inline int64_t At(int hour, int minute = 0) { return kT0 + hour * kNanosPerHour + minute * kMinute; }

struct CostTable {
  std::vector<std::string> resource_id;
  std::vector<int64_t> start, end;
  std::vector<double> cost;
  std::optional<std::vector<double>> list_cost;
  // Optional columns: set them to a vector with one value per line.
  std::optional<std::vector<std::string>> currency;
  std::optional<std::vector<uint8_t>> primary;
  std::optional<std::vector<double>> quantity_hours;
  std::optional<std::vector<uint8_t>> driver;  // CostDriver values
  EncodedStrings ids, currencies;

  void Add(std::string r, int64_t s, int64_t e, double c) {
    resource_id.push_back(std::move(r));
    start.push_back(s);
    end.push_back(e);
    cost.push_back(c);
  }
  CostColumns columns() {
    ids = EncodeStrings(resource_id);
    CostColumns out{.resource_id = ids.view(), .start = start, .end = end, .cost = cost};
    if (list_cost) out.list_cost = *list_cost;
    if (currency) {
      currencies = EncodeStrings(*currency);
      out.currency = currencies.view();
    }
    if (primary) out.primary = *primary;
    if (quantity_hours) out.quantity_hours = *quantity_hours;
    if (driver) out.driver = *driver;
    return out;
  }
};

struct InventoryTable {
  std::vector<std::string> resource_id;
  std::vector<int32_t> device;
  std::vector<double> mem_capacity;
  EncodedStrings ids;

  void AddResource(const std::string& r, int devices, double mem = 40 * kGiB) {
    for (int d = 0; d < devices; ++d) {
      resource_id.push_back(r);
      device.push_back(d);
      mem_capacity.push_back(mem);
    }
  }
  InventoryColumns columns() {
    ids = EncodeStrings(resource_id);
    return {.resource_id = ids.view(), .device = device, .mem_capacity = mem_capacity};
  }
};

struct SampleTable {
  std::vector<int64_t> timestamp;
  std::vector<std::string> resource_id, consumer;
  std::vector<int32_t> device;
  std::vector<double> share, util, mem_used;
  std::optional<std::vector<int64_t>> duration;
  std::optional<std::vector<double>> power_w;  // set to one value per sample
  EncodedStrings ids, consumers;

  void Add(int64_t t, const std::string& r, int d, const std::string& c, double s, double u, double m) {
    timestamp.push_back(t);
    resource_id.push_back(r);
    device.push_back(d);
    consumer.push_back(c);
    share.push_back(s);
    util.push_back(u);
    mem_used.push_back(m);
  }
  // Samples every minute over [from, to).
  void AddSeries(int64_t from, int64_t to, const std::string& r, int d, const std::string& c, double s,
                 double u, double m) {
    for (int64_t t = from; t < to; t += kMinute) Add(t, r, d, c, s, u, m);
  }
  SampleColumns columns() {
    ids = EncodeStrings(resource_id);
    consumers = EncodeStrings(consumer);
    return {.timestamp = timestamp, .resource_id = ids.view(), .device = device,
            .consumer = consumers.view(), .share = share, .util = util, .mem_used = mem_used,
            .duration = duration ? std::optional<std::span<const int64_t>>(*duration) : std::nullopt,
            .power_w = power_w ? std::optional<std::span<const double>>(*power_w) : std::nullopt};
  }
};

// Looks up the row of `value` in the first key column; -1 when absent.
inline int RowOf(const Allocation& a, const std::string& value) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (a.keys[0].dictionary[a.keys[0].codes[i]] == value) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace gpucost::testing

#endif  // GPUCOST_TESTS_TESTING_TABLES_H_
