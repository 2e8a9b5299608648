// Parsing throughput of DCGM telemetry, in samples (points) per second:
// exposition text as the exporter prints it (many scrapes with timestamps,
// 8 GPUs x 4 fields per scrape) and Prometheus query_range JSON; and of
// usage CSV lines as pyarrow.csv.write_csv writes a fleet's samples.
#include <algorithm>
#include <charconv>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "gpucost/io/dcgm.h"
#include "gpucost/io/prometheus.h"
#include "gpucost/io/usage_csv.h"

namespace {

constexpr int kGpus = 8;
const char* kFields[] = {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE",
                         "DCGM_FI_DEV_POWER_USAGE"};

std::string Labels(int gpu) {
  return absl::StrCat("gpu=\"", gpu, "\",UUID=\"GPU-6f1c2a3b-0d4e-5f60-7182-93a4b5c6d7e", gpu,
                      "\",pci_bus_id=\"00000000:10:1C.0\",device=\"nvidia", gpu,
                      "\",modelName=\"NVIDIA A100-SXM4-40GB\",Hostname=\"ip-10-0-1-17\",DCGM_FI_DRIVER_VERSION=\"550.54.15\",",
                      "container=\"trainer\",namespace=\"ml\",pod=\"train-", gpu, "\"");
}

std::string Exposition(int scrapes) {
  std::string text;
  for (int s = 0; s < scrapes; ++s) {
    const long long ts = 1772359200000LL + s * 30000LL;
    for (const char* field : kFields) {
      absl::StrAppend(&text, "# HELP ", field, " help.\n# TYPE ", field, " gauge\n");
      for (int g = 0; g < kGpus; ++g) {
        absl::StrAppend(&text, field, "{", Labels(g), "} ", 40 + (s * 7 + g) % 60, " ", ts, "\n");
      }
    }
  }
  return text;
}

std::string QueryRange(int series, int points) {
  std::string body = R"({"status":"success","data":{"resultType":"matrix","result":[)";
  for (int i = 0; i < series; ++i) {
    if (i) body += ",";
    absl::StrAppend(&body, R"({"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":")", i % kGpus,
                    R"(","Hostname":"node-)", i / kGpus,
                    R"(","modelName":"NVIDIA A100-SXM4-40GB","namespace":"ml","pod":"p)", i,
                    R"(","instance":"10.0.0.1:9400","job":"dcgm"},"values":[)");
    for (int p = 0; p < points; ++p) {
      if (p) body += ",";
      absl::StrAppend(&body, "[", 1772359200 + p * 60, ",\"", (i + p) % 100, "\"]");
    }
    body += "]}";
  }
  return body + "]}}";
}

void BM_ParseExposition(benchmark::State& state) {
  const std::string text = Exposition(static_cast<int>(state.range(0)));
  size_t points = 0;
  for (auto _ : state) {
    auto s = gpucost::ParseExposition(text, "bench.prom");
    if (!s.ok()) state.SkipWithError("parse failed");
    points = s->size();
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * points));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_ParseExposition)->Arg(2000)->Unit(benchmark::kMillisecond);

void BM_ParseQueryRange(benchmark::State& state) {
  const std::string body = QueryRange(static_cast<int>(state.range(0)), 1440);
  size_t points = 0;
  for (auto _ : state) {
    auto s = gpucost::ParseQueryRange(body, "bench.json");
    if (!s.ok()) state.SkipWithError("parse failed");
    points = s->size();
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * points));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_ParseQueryRange)->Arg(64)->Unit(benchmark::kMillisecond);

void BM_DcgmToUsage(benchmark::State& state) {
  auto s = gpucost::ParseExposition(Exposition(2000), "bench.prom");
  gpucost::DcgmOptions options;
  for (auto _ : state) {
    auto u = gpucost::DcgmToUsage(*s, options);
    if (!u.ok()) state.SkipWithError("mapping failed");
    benchmark::DoNotOptimize(u);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * s->size()));
}
BENCHMARK(BM_DcgmToUsage)->Unit(benchmark::kMillisecond);

// One day of issue 29's month (benchmarks/prometheus_month.py's shape): 32
// nodes x 8 GPUs, 1,440 steps of 60 s; per GPU pods of 2-30 h with free time
// between (the exporter's pod on a free GPU), each ended pod's series
// lingering 0-5 steps beside the next holder (time-sliced minutes), each
// node missing 0-2 stretches of 2-6 steps. `fields` answers appended:
// DCGM_FI_DEV_GPU_UTIL (the allocated basis reads only it), then FB_USED.
std::string MonthDay(const char* metric) {
  uint64_t rng = 0x9e3779b97f4a7c15ULL;
  const auto next = [&](int lo, int hi) {  // [lo, hi)
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + static_cast<int>((rng >> 33) % static_cast<uint64_t>(hi - lo));
  };
  constexpr int kSteps = 1440;
  std::string body = R"({"status":"success","data":{"resultType":"matrix","result":[)";
  bool first_series = true;
  for (int n = 0; n < 32; ++n) {
    std::vector<bool> gap(kSteps, false);
    for (int g = next(0, 3); g > 0; --g) {
      const int at = next(0, kSteps - 6);
      for (int i = at, e = at + next(2, 7); i < e; ++i) gap[i] = true;
    }
    for (int gpu = 0; gpu < 8; ++gpu) {
      // Runs (begin, end, pod); pod "" is the exporter's (free).
      std::vector<std::tuple<int, int, std::string>> runs;
      for (int t = 0, k = 0; t < kSteps; ++k) {
        const int free_for = next(10, 360);
        const int linger = runs.empty() ? 0 : next(0, 4);
        runs.emplace_back(std::max(t - linger, 0), std::min(t + free_for, kSteps), "");
        t += free_for;
        if (t >= kSteps) break;
        const int length = next(120, 1800);
        const int tail = next(0, 6);
        runs.emplace_back(t, std::min(t + length + tail, kSteps), absl::StrCat("train-", n, "-", gpu, "-", k));
        t += length;
      }
      for (const auto& [b, e, pod] : runs) {
        if (!first_series) body += ",";
        first_series = false;
        absl::StrAppend(&body, R"({"metric":{"__name__":")", metric,
                        R"(","DCGM_FI_DRIVER_VERSION":"570.124.06","Hostname":"ip-10-0-)", n / 8, "-", 10 + n,
                        R"(.ec2.internal","UUID":"GPU-)", n, "-", gpu,
                        R"(-3b4d-4e5f-8a6b-7c8d9e0f1a2b","container":")", pod.empty() ? "" : "trainer",
                        R"(","device":"nvidia)", gpu, R"(","endpoint":"gpu-metrics","gpu":")", gpu,
                        R"(","instance":"10.0.0.1:9400","job":"nvidia-dcgm-exporter","modelName":"NVIDIA H100 80GB HBM3",)",
                        R"("namespace":")", pod.empty() ? "gpu-operator" : "vision", R"(","pod":")",
                        pod.empty() ? absl::StrCat("nvidia-dcgm-exporter-x", n) : pod,
                        R"(","service":"nvidia-dcgm-exporter"},"values":[)");
        bool first_point = true;
        for (int i = b; i < e; ++i) {
          if (gap[i]) continue;
          if (!first_point) body += ",";
          first_point = false;
          absl::StrAppend(&body, "[", 1790812800 + i * 60, ".250,\"", (i * 7 + gpu) % 101, "\"]");
        }
        body += "]}";
      }
    }
  }
  return body + "]}}";
}

void BM_DcgmToUsageMonthDay(benchmark::State& state) {
  auto s = gpucost::ParseQueryRange(MonthDay("DCGM_FI_DEV_GPU_UTIL"), "util.json");
  if (state.range(0) > 1) {
    auto memory = gpucost::ParseQueryRange(MonthDay("DCGM_FI_DEV_FB_USED"), "fb_used.json");
    s->Append(std::move(*memory));
  }
  gpucost::DcgmOptions options;
  options.interval_seconds = 60;
  size_t samples = 0;
  for (auto _ : state) {
    auto u = gpucost::DcgmToUsage(*s, options);
    if (!u.ok()) state.SkipWithError(std::string(u.status().message()).c_str());
    samples = u.ok() ? u->size() : 0;
    benchmark::DoNotOptimize(u);
  }
  state.counters["points"] = static_cast<double>(s->size());
  state.counters["samples"] = static_cast<double>(samples);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * s->size()));
}
BENCHMARK(BM_DcgmToUsageMonthDay)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

// A block of usage CSV in time order as pyarrow writes it (quoted strings,
// nanosecond instants, 17-digit utilisations): 3,000 GPUs of 375 instances,
// `scrapes` instants, a pod per GPU that changes every 100 scrapes.
std::string UsageCsvLines(int scrapes) {
  std::string text;
  uint64_t state = 88172645463325252ULL;
  for (int s = 0; s < scrapes; ++s) {
    const std::string instant = absl::StrCat("2026-03-02 ", s / 60 % 24 < 10 ? "0" : "", s / 60 % 24, ":",
                                             s % 60 < 10 ? "0" : "", s % 60, ":00.011000000Z");
    for (int gpu = 0; gpu < 3000; ++gpu) {
      state ^= state << 13, state ^= state >> 7, state ^= state << 17;
      const double util = static_cast<double>(state % 1'000'000'007ULL) / 1'000'000'007.0;
      char digits[32];
      const auto written = std::to_chars(digits, digits + sizeof(digits), util);  // shortest, as pyarrow writes
      absl::StrAppend(&text, instant, ",\"i-0", 2818000 + gpu / 8, "ae8fb4d4e652\",", gpu % 8, ",\"team",
                      gpu % 17, "/train-", gpu, "-", s / 100, "-5e38d\",1,",
                      absl::string_view(digits, static_cast<size_t>(written.ptr - digits)), ",5.1539607552e+10\n");
    }
  }
  return text;
}

void BM_ParseUsageCsv(benchmark::State& state) {
  const std::string text = UsageCsvLines(static_cast<int>(state.range(0)));
  const std::vector<std::string> names = {"timestamp", "resource_id", "device", "consumer", "share", "util",
                                          "mem_used"};
  int64_t rows = 0;
  for (auto _ : state) {
    auto block = gpucost::io::ParseUsageCsvBlock(text, names, "usage.csv", 2);
    if (!block.ok()) state.SkipWithError(std::string(block.status().message()).c_str());
    rows = block.ok() ? block->rows : 0;
    benchmark::DoNotOptimize(block);
  }
  state.counters["rows"] = static_cast<double>(rows);
  state.SetItemsProcessed(state.iterations() * rows);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_ParseUsageCsv)->Arg(200)->Unit(benchmark::kMillisecond);

}  // namespace
