// Parsing throughput of DCGM telemetry, in samples (points) per second:
// exposition text as the exporter prints it (many scrapes with timestamps,
// 8 GPUs x 4 fields per scrape) and Prometheus query_range JSON.
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "gpucost/io/dcgm.h"
#include "gpucost/io/prometheus.h"

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

}  // namespace
