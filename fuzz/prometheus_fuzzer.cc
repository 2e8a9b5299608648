// libFuzzer target: Prometheus exposition text, query_range JSON and amd-smi metric JSON
// (io/prometheus.h), and DCGM series to usage samples (io/dcgm.h) on what
// they accept. Every input must give a status, never a crash; accepted
// samples have one value per series index.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzzer/FuzzedDataProvider.h"
#include "gpucost/io/dcgm.h"
#include "gpucost/io/prometheus.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "prometheus_fuzzer: invariant violated: %s\n", what);
    std::abort();
  }
}

void CheckSamples(const gpucost::PromSamples& s) {
  Check(s.series_id.size() == s.size() && s.timestamp_ns.size() == s.size(), "one series and time per value");
  for (int32_t id : s.series_id) Check(id >= 0 && static_cast<size_t>(id) < s.series.size(), "series id");
}

void ToUsage(const gpucost::PromSamples& samples) {
  gpucost::DcgmOptions options;
  auto usage = gpucost::DcgmToUsage(samples, options);
  if (usage.ok()) Check(usage->columns().size() == usage->size(), "usage size");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const bool json = in.ConsumeBool();
  const bool with_default = in.ConsumeBool();
  const int64_t default_ns = in.ConsumeIntegral<int64_t>();
  const std::string text = in.ConsumeRemainingBytesAsString();
  if (json && with_default) {  // amd-smi metric --json (query answers keep with_default unset)
    auto parsed = gpucost::ParseAmdSmiMetric(text, "fuzz amd-smi", default_ns, "h");
    if (parsed.ok()) {
      CheckSamples(*parsed);
      ToUsage(*parsed);
    }
  } else if (json) {
    auto parsed = gpucost::ParseQueryRange(text, "fuzz query_range", "DCGM_FI_DEV_GPU_UTIL");
    if (parsed.ok()) {
      CheckSamples(*parsed);
      ToUsage(*parsed);
    }
  } else {
    auto parsed = gpucost::ParseExposition(text, "fuzz.prom",
                                           with_default ? std::optional<int64_t>(default_ns) : std::nullopt);
    if (parsed.ok()) {
      CheckSamples(*parsed);
      ToUsage(*parsed);
    }
  }
  return 0;
}
