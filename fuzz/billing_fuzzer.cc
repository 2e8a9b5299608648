// libFuzzer target: the billing readers (io/billing.h: FOCUS, AWS CUR, GCP
// CSV and JSON lines, Azure cost details), fed whole and in random chunks,
// and the engine on what they accept.
//
// Both feeds must agree (same lines, same total, or both an error); an
// accepted bill's costs are finite, and allocating it with no samples
// conserves its money.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzzer/FuzzedDataProvider.h"
#include "gpucost/allocate.h"
#include "gpucost/io/billing.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "billing_fuzzer: invariant violated: %s\n", what);
    std::abort();
  }
}

absl::StatusOr<gpucost::io::CostLines> Read(gpucost::io::BillingFormat format, bool json_lines,
                                            std::string_view text, const std::vector<size_t>& cuts) {
  gpucost::io::BillingOptions options;
  options.source = "bill";
  auto reader = gpucost::io::BillingReader::Create(format, options);
  if (!reader.ok()) return reader.status();
  size_t begin = 0;
  for (size_t cut : cuts) {
    if (cut < begin || cut > text.size()) continue;
    const std::string_view chunk = text.substr(begin, cut - begin);
    absl::Status fed = json_lines ? (*reader)->FeedJsonLines(chunk) : (*reader)->FeedCsv(chunk);
    if (!fed.ok()) return fed;
    begin = cut;
  }
  const std::string_view rest = text.substr(begin);
  absl::Status fed = json_lines ? (*reader)->FeedJsonLines(rest) : (*reader)->FeedCsv(rest);
  if (!fed.ok()) return fed;
  return (*reader)->Finish();
}

double Sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const auto format = static_cast<gpucost::io::BillingFormat>(in.ConsumeIntegralInRange<int>(0, 3));
  const bool json_lines = format == gpucost::io::BillingFormat::kGcp && in.ConsumeBool();
  std::vector<size_t> cuts;
  const int n = in.ConsumeIntegralInRange<int>(0, 6);
  for (int i = 0; i < n; ++i) cuts.push_back(in.ConsumeIntegralInRange<size_t>(0, 8192));
  std::sort(cuts.begin(), cuts.end());
  const std::string text = in.ConsumeRemainingBytesAsString();

  const auto whole = Read(format, json_lines, text, {});
  const auto chunked = Read(format, json_lines, text, cuts);
  Check(whole.ok() == chunked.ok(), "chunking changes acceptance");
  if (!whole.ok()) return 0;
  Check(whole->size() == chunked->size(), "chunking changes the number of lines");
  Check(whole->cost == chunked->cost, "chunking changes the amounts");
  for (double c : whole->cost) Check(std::isfinite(c), "a cost is not finite");
  Check(whole->primary == chunked->primary, "chunking changes the primary lines");
  for (size_t i = 0; i < whole->size(); ++i) {
    const double q = whole->quantity_hours[i];
    if (std::isnan(q)) continue;
    Check(whole->primary[i] != 0, "a quantity on a line that is not primary");
    Check(q > 0 && q * 3600.0 * 1e9 <= static_cast<double>(whole->end[i] - whole->start[i]) * (1 + 1e-9),
          "a quantity outside (0, the period]");
  }

  // Money in equals money out, with no usage at all (all idle or unattributed).
  gpucost::SampleColumns no_samples;
  gpucost::InventoryColumns no_inventory;
  auto allocation = gpucost::Allocate(whole->columns(), no_samples, no_inventory, nullptr, {});
  if (allocation.ok()) {
    const double in_total = Sum(whole->cost), out_total = Sum(allocation->cost);
    Check(std::fabs(in_total - out_total) <= 1e-6 * std::max(1.0, std::fabs(in_total)),
          "allocating the bill loses money");
  }
  return 0;
}
