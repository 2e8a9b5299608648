// Prometheus/DCGM, Kubernetes, nvidia-smi and sacct parsers.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gpucost/io/dcgm.h"
#include "gpucost/io/hosts.h"
#include "gpucost/io/kubernetes.h"
#include "gpucost/io/prometheus.h"
#include "gpucost/io/usage.h"
#include "gpucost/status.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace gpucost {
namespace {

using ::gpucost::testing::IsOk;
using ::gpucost::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int64_t kT = 1'772'359'200'000'000'000;  // 2026-03-01T10:00:00Z

TEST(Exposition, ParsesHelpTypeEscapesAndTimestamps) {
  const std::string text =
      "# HELP m A metric.\n# TYPE m gauge\n"
      "m{a=\"x\\\"y\\\\z\\n\", b=\"\"} 1.5 1000\n"
      "m{a=\"x\\\"y\\\\z\\n\", b=\"\"} +Inf\n"
      "other 3\n\n";
  std::vector<std::string_view> wanted = {"m"};
  GPUCOST_ASSERT_OK_AND_ASSIGN(PromSamples s, ParseExposition(text, "f.prom", kT, wanted));
  ASSERT_EQ(s.size(), 2u);
  ASSERT_EQ(s.series.size(), 1u);  // the second line reuses the interned series
  EXPECT_EQ(*s.series[0].Label("a"), "x\"y\\z\n");
  EXPECT_EQ(*s.series[0].Label("b"), "");
  EXPECT_EQ(s.timestamp_ns[0], 1000 * 1'000'000);
  EXPECT_EQ(s.timestamp_ns[1], kT);
  EXPECT_TRUE(std::isinf(s.value[1]));
  EXPECT_EQ(s.line[1], 4);
}

TEST(Exposition, BadLinesNameTheLineAndPart) {
  EXPECT_THAT(ParseExposition("m{a=\"1\"} abc\n", "f.prom", kT),
              StatusIs(absl::StatusCode::kInvalidArgument, "f.prom: line 1, column 'value': m: 'abc' is not a number"));
  EXPECT_THAT(ParseExposition("\nm{a=\"1} 1\n", "f.prom", kT),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 2, column 'labels'")));
  EXPECT_THAT(ParseExposition("m{a=\"1\",a=\"2\"} 1\n", "f.prom", kT),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("appears twice")));
  EXPECT_THAT(ParseExposition("m 1 12.5\n", "f.prom", kT),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("column 'timestamp'")));
  EXPECT_THAT(ParseExposition("m 1\n", "f.prom"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no timestamp")));
  EXPECT_THAT(ParseExposition("# TYPE m gauges\n", "f.prom", kT),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown metric type")));
}

TEST(QueryRange, ParsesMatrixAndReportsErrors) {
  const std::string body =
      R"({"status":"success","data":{"resultType":"matrix","result":[)"
      R"({"metric":{"__name__":"up","job":"a"},"values":[[1435781430.781,"1"],[1435781445.781,"NaN"]]}]}})";
  GPUCOST_ASSERT_OK_AND_ASSIGN(PromSamples s, ParseQueryRange(body, "q"));
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s.series[0].name, "up");
  EXPECT_EQ(s.timestamp_ns[0], 1435781430781LL * 1'000'000);
  EXPECT_TRUE(std::isnan(s.value[1]));
  EXPECT_THAT(ParseQueryRange(R"({"status":"error","errorType":"bad_data","error":"x"})", "q"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("(bad_data): x")));
  EXPECT_THAT(ParseQueryRange(R"({"status":"success","data":{)", "q"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not valid JSON")));
}

std::string Line(std::string_view metric, std::string_view labels, double v) {
  return std::string(metric) + "{" + std::string(labels) + "} " + std::to_string(v) + "\n";
}

TEST(Dcgm, WholeTimeSlicedAndMigSamples) {
  std::string text;
  text += Line("DCGM_FI_DEV_GPU_UTIL", R"(gpu="0",Hostname="n1",namespace="a",pod="p")", 80);
  text += Line("DCGM_FI_DEV_FB_USED", R"(gpu="0",Hostname="n1",namespace="a",pod="p")", 1024);
  text += Line("DCGM_FI_DEV_GPU_UTIL", R"(gpu="0",Hostname="n1",namespace="a",pod="q")", 80);
  text += Line("DCGM_FI_DEV_FB_USED", R"(gpu="0",Hostname="n1",namespace="a",pod="q")", 1024);
  const std::string mig = R"(gpu="1",Hostname="n1",modelName="NVIDIA A100-SXM4-40GB",GPU_I_PROFILE="3g.20gb",GPU_I_ID="1",namespace="b",pod="r")";
  text += Line("DCGM_FI_PROF_GR_ENGINE_ACTIVE", mig, 0.5);
  text += Line("DCGM_FI_DEV_FB_USED", mig, 2048);
  GPUCOST_ASSERT_OK_AND_ASSIGN(PromSamples s, ParseExposition(text, "t", kT));
  std::vector<std::string_view> nodes = {"n1"}, ids = {"i-1"};
  EncodedStrings node_col = EncodeStrings(std::span<const std::string_view>(nodes));
  EncodedStrings id_col = EncodeStrings(std::span<const std::string_view>(ids));
  DcgmOptions options;
  options.nodes_node = node_col.view();
  options.nodes_resource_id = id_col.view();
  options.mig_share = [](std::string_view, std::string_view profile) -> absl::StatusOr<double> {
    if (profile == "3g.20gb") return 3.0 / 7;
    return absl::NotFoundError("unknown");
  };
  GPUCOST_ASSERT_OK_AND_ASSIGN(DcgmUsage u, DcgmToUsage(s, options));
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u.diagnostics.units, DcgmUnits::kLegacy);
  EXPECT_EQ(u.diagnostics.samples_time_sliced, 2);
  EXPECT_DOUBLE_EQ(u.samples.share[0], 0.5);
  EXPECT_DOUBLE_EQ(u.samples.util[0], 0.8);
  EXPECT_DOUBLE_EQ(u.samples.mem_used[0], 1024.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(u.samples.share[2], 3.0 / 7);
  EXPECT_DOUBLE_EQ(u.samples.util[2], 0.5);
  EXPECT_EQ(u.samples.resource_id.values, std::vector<std::string>{"i-1"});
  EXPECT_EQ(u.samples.consumer.values[u.samples.consumer.codes[2]], "b/r");
}

// A fleet's scrapes with every rule at once: time-sliced pods, free readings
// beside them, MIG instances one pod holds two of (merged), a replica's
// duplicate series, gaps, an energy counter.
std::string ScrapesOfEveryShape(uint32_t seed) {
  std::mt19937 rng(seed);
  const auto coin = [&](int percent) { return static_cast<int>(rng() % 100) < percent; };
  std::string text;
  for (int step = 0; step < 40; ++step) {
    const std::string ts = std::to_string(1'772'359'200'000 + step * 60'000);
    const auto line = [&](const char* metric, const std::string& labels, double v) {
      absl::StrAppend(&text, metric, "{", labels, "} ", v, " ", ts, "\n");
    };
    for (int node = 0; node < 2; ++node) {
      for (int gpu = 0; gpu < 3; ++gpu) {
        if (coin(10)) continue;  // a gap
        const std::string where = absl::StrCat(R"(Hostname="n)", node, R"(",gpu=")", gpu, R"(")");
        std::vector<std::string> holders;
        if (coin(60)) holders.push_back(R"(,namespace="a",pod="p)" + std::to_string(gpu) + R"(")");
        if (coin(30)) holders.push_back(R"(,namespace="b",pod="q)" + std::to_string(gpu) + R"(")");
        if (holders.empty() || coin(30)) holders.push_back("");  // free, shadowed beside a pod
        for (const std::string& h : holders) {
          const double util = static_cast<double>(rng() % 101);
          line("DCGM_FI_DEV_GPU_UTIL", where + h, util);
          if (node == 0 && gpu == 0) line("DCGM_FI_DEV_GPU_UTIL", where + h + R"(,prometheus_replica="b")", util);
          line("DCGM_FI_DEV_FB_USED", where + h, static_cast<double>(rng() % 40000));
          line("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", where + h, 1e6 * node + 5e5 * gpu + 21000.0 * step);
        }
      }
      // MIG: one pod on two instances of GPU 3 (merged), the third free.
      for (int instance = 1; instance <= 3; ++instance) {
        std::string mig = absl::StrCat(R"(Hostname="n)", node, R"(",gpu="3",modelName="NVIDIA A100-SXM4-40GB",)",
                                       R"(GPU_I_PROFILE="2g.10gb",GPU_I_ID=")", instance, R"(")");
        if (instance < 3) mig += R"(,namespace="c",pod="m")";
        line("DCGM_FI_PROF_GR_ENGINE_ACTIVE", mig, static_cast<double>(rng() % 100) / 100);
        line("DCGM_FI_DEV_FB_USED", mig, static_cast<double>(rng() % 10000));
      }
    }
  }
  return text;
}

// The points of `s` in another order (series and their labels unchanged).
PromSamples Reordered(const PromSamples& s, const std::vector<size_t>& order) {
  PromSamples out = s;
  for (size_t i = 0; i < order.size(); ++i) {
    out.series_id[i] = s.series_id[order[i]];
    out.timestamp_ns[i] = s.timestamp_ns[order[i]];
    out.value[i] = s.value[order[i]];
    out.line[i] = s.line[order[i]];
  }
  return out;
}

void ExpectSameColumn(const std::vector<double>& a, const std::vector<double>& b, std::string_view name) {
  ASSERT_EQ(a.size(), b.size()) << name;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i])) {
      EXPECT_TRUE(std::isnan(b[i])) << name << " " << i;
    } else {
      EXPECT_EQ(a[i], b[i]) << name << " " << i;
    }
  }
}

// Points are joined by instant whatever their order in the input (a text of
// scrapes out of time order, an answer assembled by hand): the samples and
// every count are the same as for the scrapes in time order.
TEST(Dcgm, AnyPointOrderGivesTheSameSamples) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    GPUCOST_ASSERT_OK_AND_ASSIGN(PromSamples s, ParseExposition(ScrapesOfEveryShape(seed), "scrapes.prom"));
    DcgmOptions options;
    GPUCOST_ASSERT_OK_AND_ASSIGN(DcgmUsage want, DcgmToUsage(s, options));
    ASSERT_GT(want.diagnostics.samples_time_sliced, 0);
    ASSERT_GT(want.diagnostics.free_readings_shadowed, 0);
    ASSERT_GT(want.diagnostics.samples_merged, 0);
    ASSERT_GT(want.diagnostics.duplicate_points, 0);
    ASSERT_GT(want.diagnostics.samples_power_from_energy, 0);
    std::vector<size_t> order(s.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::vector<std::vector<size_t>> orders;
    orders.push_back(std::vector<size_t>(order.rbegin(), order.rend()));  // newest scrape first
    std::shuffle(order.begin(), order.end(), std::mt19937(seed));
    orders.push_back(order);
    for (const std::vector<size_t>& o : orders) {
      GPUCOST_ASSERT_OK_AND_ASSIGN(DcgmUsage got, DcgmToUsage(Reordered(s, o), options));
      const UsageSamples &w = want.samples, &g = got.samples;
      EXPECT_EQ(g.timestamp, w.timestamp);
      EXPECT_EQ(g.device, w.device);
      EXPECT_EQ(g.duration, w.duration);
      EXPECT_EQ(g.resource_id.codes, w.resource_id.codes);
      EXPECT_EQ(g.resource_id.values, w.resource_id.values);
      EXPECT_EQ(g.consumer.codes, w.consumer.codes);
      EXPECT_EQ(g.consumer.values, w.consumer.values);
      EXPECT_EQ(got.gpu_uuid.codes, want.gpu_uuid.codes);
      EXPECT_EQ(got.mig_profile.values, want.mig_profile.values);
      ExpectSameColumn(g.share, w.share, "share");
      ExpectSameColumn(g.util, w.util, "util");
      ExpectSameColumn(g.mem_used, w.mem_used, "mem_used");
      ExpectSameColumn(got.power_w, want.power_w, "power_w");
      ExpectSameColumn(got.mem_free, want.mem_free, "mem_free");
      const DcgmDiagnostics &dw = want.diagnostics, &dg = got.diagnostics;
      EXPECT_EQ(dg.samples_time_sliced, dw.samples_time_sliced);
      EXPECT_EQ(dg.free_readings_shadowed, dw.free_readings_shadowed);
      EXPECT_EQ(dg.samples_merged, dw.samples_merged);
      EXPECT_EQ(dg.duplicate_points, dw.duplicate_points);
      // (Which replica's series is the duplicate depends on the order: not compared.)
      EXPECT_EQ(dg.duplicate_labels, dw.duplicate_labels);
      EXPECT_EQ(dg.samples_power_from_energy, dw.samples_power_from_energy);
      EXPECT_EQ(dg.gaps, dw.gaps);
      EXPECT_EQ(dg.spacing_ns, dw.spacing_ns);
    }
  }
}

// Two values for one GPU and instant from one series: the error names the
// point the input order meets second and the first, whatever order the
// join runs in.
TEST(Dcgm, SecondValueErrorNamesTheInputsFirstAndSecondPoints) {
  std::string text;
  const std::string gpu = R"(Hostname="n1",gpu="0",namespace="a",pod="p")";
  for (int step = 0; step < 3; ++step) {
    absl::StrAppend(&text, "DCGM_FI_DEV_GPU_UTIL{", gpu, "} 50 ", 1'772'359'200'000 + step * 60'000, "\n");
  }
  absl::StrAppend(&text, "DCGM_FI_DEV_GPU_UTIL{", gpu, "} 60 1772359260000\n");  // line 4: instant 2 again
  absl::StrAppend(&text, "DCGM_FI_DEV_GPU_UTIL{", gpu, "} 70 1772359200000\n");  // line 5: instant 1 again
  GPUCOST_ASSERT_OK_AND_ASSIGN(PromSamples s, ParseExposition(text, "twice.prom"));
  EXPECT_THAT(DcgmToUsage(s, DcgmOptions()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("twice.prom"), HasSubstr("line 4"), HasSubstr("a second value"),
                             HasSubstr("2026-03-01T10:01:00Z"))));
}

TEST(Dcgm, MigSharesComeFromTheCatalogByDefault) {
  const std::string mig =
      R"(gpu="1",Hostname="n1",modelName="NVIDIA A100-SXM4-80GB",GPU_I_PROFILE="1g.10gb",GPU_I_ID="9",namespace="b",pod="r")";
  GPUCOST_ASSERT_OK_AND_ASSIGN(
      PromSamples s, ParseExposition(Line("DCGM_FI_PROF_GR_ENGINE_ACTIVE", mig, 0.5) + Line("DCGM_FI_DEV_FB_USED", mig, 10),
                                     "t", kT));
  DcgmOptions options;  // no resolver, no table: the embedded catalog
  GPUCOST_ASSERT_OK_AND_ASSIGN(DcgmUsage compute, DcgmToUsage(s, options));
  EXPECT_DOUBLE_EQ(compute.samples.share[0], 1.0 / 7);
  options.mig_basis = MigBasis::kMemory;
  GPUCOST_ASSERT_OK_AND_ASSIGN(DcgmUsage memory, DcgmToUsage(s, options));
  EXPECT_DOUBLE_EQ(memory.samples.share[0], 1.0 / 8);
  options.mig_shares.push_back({"A100 80GB", "1g.10gb", 0.25});  // the caller's row wins
  GPUCOST_ASSERT_OK_AND_ASSIGN(DcgmUsage own, DcgmToUsage(s, options));
  EXPECT_DOUBLE_EQ(own.samples.share[0], 0.25);
}

TEST(Dcgm, AmdPartitionsAreSharesOfTheGpuTheirSerialNames) {
  // Two MI300X in CPX (8 partitions each, gpu_id not derived from the GPU):
  // GPU "S1" has partitions at gpu_id 9 and 3 held by one pod, GPU "S0" one
  // partition at gpu_id 5 held by another.
  auto amd = [](int gpu_id, int partition, const char* serial, const char* pod) {
    return absl::StrCat(R"(card_series="AMD Instinct MI300X OAM",gpu_compute_partition_type="cpx",gpu_id=")", gpu_id,
                        R"(",gpu_partition_id=")", partition, R"(",hostname="n1",namespace="ml",pod=")", pod,
                        R"(",serial_number=")", serial, "\"");
  };
  std::string text;
  for (auto [id, part, serial, pod, util] : {std::tuple{9, 1, "S1", "a", 40}, {3, 0, "S1", "a", 80}, {5, 0, "S0", "b", 10}}) {
    text += Line("gpu_gfx_activity", amd(id, part, serial, pod), util);
    text += Line("gpu_used_vram", amd(id, part, serial, pod), 1024);
  }
  GPUCOST_ASSERT_OK_AND_ASSIGN(PromSamples s, ParseExposition(text, "t", kT));
  GPUCOST_ASSERT_OK_AND_ASSIGN(DcgmUsage u, DcgmToUsage(s, DcgmOptions{}));
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u.diagnostics.samples_merged, 1);
  for (size_t i = 0; i < u.size(); ++i) {
    const std::string_view consumer = u.samples.consumer.values[u.samples.consumer.codes[i]];
    // Physical GPUs numbered by their lowest gpu_id: S1 (3) is 0, S0 (5) is 1.
    EXPECT_EQ(u.samples.device[i], consumer == "ml/a" ? 0 : 1);
    EXPECT_DOUBLE_EQ(u.samples.share[i], consumer == "ml/a" ? 2.0 / 8 : 1.0 / 8);
    EXPECT_DOUBLE_EQ(u.samples.util[i], consumer == "ml/a" ? 0.6 : 0.1);  // share-weighted
    EXPECT_DOUBLE_EQ(u.samples.mem_used[i], (consumer == "ml/a" ? 2048.0 : 1024.0) * 1024 * 1024);
  }
  EXPECT_EQ(u.mig_profile.values[u.mig_profile.codes[0]], "CPX");
  const std::string no_serial = Line("gpu_gfx_activity",
      R"(gpu_compute_partition_type="dpx",gpu_id="0",gpu_partition_id="1",hostname="n1")", 5);
  GPUCOST_ASSERT_OK_AND_ASSIGN(PromSamples bad, ParseExposition(no_serial, "t", kT));
  EXPECT_THAT(DcgmToUsage(bad, DcgmOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'serial_number'")));
}

TEST(Dcgm, BadValuesAreErrors) {
  auto run = [](const std::string& text) {
    absl::StatusOr<PromSamples> s = ParseExposition(text, "t", kT);
    EXPECT_THAT(s, IsOk());
    return DcgmToUsage(*s, DcgmOptions{});
  };
  EXPECT_THAT(run(Line("DCGM_FI_DEV_GPU_UTIL", R"(gpu="0",Hostname="n")", 140)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("outside [0, 100]")));
  EXPECT_THAT(run("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"n\"} NaN\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("NaN utilisation")));
  EXPECT_THAT(run(Line("DCGM_FI_DEV_FB_USED", R"(gpu="0",Hostname="n")", -1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a memory size")));
  EXPECT_THAT(run(Line("DCGM_FI_DEV_GPU_UTIL", R"(gpu="0")", 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no node label")));
  const std::string twice = Line("DCGM_FI_DEV_GPU_UTIL", R"(gpu="0",Hostname="n")", 1) +
                            Line("DCGM_FI_DEV_GPU_UTIL_RATIO", R"(gpu="0",Hostname="n")", 0.01);
  EXPECT_THAT(run(twice), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a second value")));
}

TEST(Kubernetes, ProviderIds) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(ProviderId aws, ParseProviderId("aws:///us-east-1a/i-0abc", "n"));
  EXPECT_EQ(aws.resource_id, "i-0abc");
  EXPECT_EQ(aws.zone, "us-east-1a");
  GPUCOST_ASSERT_OK_AND_ASSIGN(ProviderId gce, ParseProviderId("gce://proj/us-central1-a/vm-1", "n"));
  EXPECT_EQ(gce.resource_id, "projects/proj/zones/us-central1-a/instances/vm-1");
  EXPECT_EQ(gce.zone, "us-central1-a");
  GPUCOST_ASSERT_OK_AND_ASSIGN(
      ProviderId vmss,
      ParseProviderId("azure:///subscriptions/S/resourceGroups/MC_rg/providers/Microsoft.Compute/"
                      "virtualMachineScaleSets/aks-gpu-vmss/virtualMachines/3",
                      "n"));
  EXPECT_EQ(vmss.resource_id,
            "/subscriptions/s/resourcegroups/mc_rg/providers/microsoft.compute/virtualmachinescalesets/aks-gpu-vmss/"
            "virtualmachines/3");
  EXPECT_THAT(ParseProviderId("gce://proj/vm-1", "n"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("gce://")));
  GPUCOST_ASSERT_OK_AND_ASSIGN(ProviderId bare, ParseProviderId("", "dgx-1"));
  EXPECT_EQ(bare.resource_id, "dgx-1");
  EXPECT_THAT(ParseProviderId("nonsense", "n"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("providerID")));
  EXPECT_EQ(KubeStateMetricsLabel("app.kubernetes.io/team-id"), "label_app_kubernetes_io_team_id");
}

TEST(Kubernetes, PodsWithMissingLabels) {
  const std::string json =
      R"({"items":[{"metadata":{"namespace":"a","name":"p","labels":{"team-id":"t1"}}},)"
      R"({"metadata":{"namespace":"a","name":"q"}}]})";
  GPUCOST_ASSERT_OK_AND_ASSIGN(WorkloadTable w, ParseKubectlPods(json, "pods.json", DefaultLabelKeys()));
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w.label_names[1], "team");
  EXPECT_EQ(w.labels[1].values[w.labels[1].codes[0]], "t1");
  EXPECT_EQ(w.labels[1].codes[1], kNullCode);
  EXPECT_THAT(ParseKubectlPods("{}", "pods.json", DefaultLabelKeys()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no \"items\"")));
}

TEST(Hosts, LocalTimesAndDaylightSaving) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(int64_t utc, ParseLocalTime("2026/03/01 10:00:00.250", "UTC"));
  EXPECT_EQ(utc, kT + 250'000'000);
  // 2026-10-25 02:30 happens twice in Paris; the log order picks the second.
  GPUCOST_ASSERT_OK_AND_ASSIGN(int64_t first, ParseLocalTime("2026/10/25 02:30:00.000", "Europe/Paris"));
  GPUCOST_ASSERT_OK_AND_ASSIGN(int64_t second,
                               ParseLocalTime("2026/10/25 02:30:00.000", "Europe/Paris", first + 1));
  EXPECT_EQ(second - first, 3600LL * 1'000'000'000);
  EXPECT_THAT(ParseLocalTime("2026/03/29 02:30:00", "Europe/Paris"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("skipped")));
  EXPECT_THAT(ParseLocalTime("2026/02/30 02:30:00", "UTC"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a valid date")));
}

TEST(Hosts, PmonProcessesHoldTheirGpuAndDmonNeedsDateTime) {
  const std::string pmon =
      "# Date       Time        gpu         pid   type     fb   ccpm     sm    mem    command\n"
      "# YYYYMMDD   HH:MM:SS    Idx           #    C/G     MB     MB      %      %    name\n"
      " 20260301   10:00:00      0         11     C    100      0     60     10    python\n"
      " 20260301   10:00:00      0         12     C     50      0     50      5    python\n"
      " 20260301   10:00:00      1          -     -      -      -      -      -    -\n";
  GPUCOST_ASSERT_OK_AND_ASSIGN(NvidiaSmiMon mon, ParseNvidiaSmiMon(pmon, "p.log", "UTC"));
  EXPECT_TRUE(mon.pmon);
  EXPECT_TRUE(mon.has_memory);
  ASSERT_EQ(mon.gpus.size(), 2u);
  EXPECT_DOUBLE_EQ(mon.gpus.util[0], 1.0);  // 60 % + 50 %, capped
  EXPECT_DOUBLE_EQ(mon.gpus.mem_used[0], 150.0 * 1024 * 1024);
  EXPECT_EQ(mon.gpus.timestamp[0], kT);
  ASSERT_EQ(mon.apps.size(), 2u);
  EXPECT_EQ(mon.apps.pid[1], 12);
  EXPECT_THAT(ParseNvidiaSmiMon("# gpu sm mem\n# Idx % %\n 0 5 1\n", "d.log", "UTC"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("d.log: line 1, column 'Date'")));
  EXPECT_THAT(ParseNvidiaSmiMon("# Date Time gpu sm\n 20260301 10:00:00 0 abc\n", "d.log", "UTC"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 2, column 'sm': 'abc' is not a number")));
}

TEST(Hosts, HostList) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(std::vector<std::string> h, ExpandHostList("gpu[01-03,07],login1,r[1-2]n[1-2]"));
  EXPECT_THAT(h, ::testing::ElementsAre("gpu01", "gpu02", "gpu03", "gpu07", "login1", "r1n1", "r1n2", "r2n1",
                                        "r2n2"));
  EXPECT_THAT(ExpandHostList("gpu[1-"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unbalanced")));
}

TEST(Hosts, SacctIndicesFromGres) {
  const std::string text =
      "JobID|User|Account|Start|End|NodeList|AllocTRES|AllocGRES\n"
      "7|u|p|2026-03-01T10:00:00|2026-03-01T11:00:00|n1|gres/gpu=2|gpu:2(IDX:2-3)\n";
  GPUCOST_ASSERT_OK_AND_ASSIGN(SacctResult r, ParseSacct(text, "s.txt", SacctOptions{}));
  EXPECT_THAT(r.samples.device, ::testing::ElementsAre(2, 3));
  EXPECT_EQ(r.gpus_assigned_in_order, 0);
  EXPECT_THAT(ParseSacct("JobID|User\n", "s.txt", SacctOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 1, column 'Account'")));
}

// Durations from the data (issue 20 item 4).
TEST(Durations, JitterCountsWholeGapsAreMissingAndTheLastGetsTheSpacing) {
  constexpr int64_t kS = 1'000'000'000;
  // Series 0: 0, 59, 121, 180, 420 (a gap), 480; series 1: one sample.
  const std::vector<int32_t> series = {0, 0, 0, 0, 0, 0, 1};
  const std::vector<int64_t> t = {0, 59 * kS, 121 * kS, 180 * kS, 420 * kS, 480 * kS, 7 * kS};
  std::vector<int64_t> d;
  auto describe = [](int32_t s) { return absl::StrCat("f: series ", s); };
  GPUCOST_ASSERT_OK_AND_ASSIGN(SeriesSpacing sp, DurationsFromSeries(series, t, std::nullopt, 60 * kS, "interval",
                                                                     describe, &d));
  EXPECT_EQ(sp.spacing_ns, 60 * kS);  // lower median of 59, 62, 59, 240, 60 (and no gap for series 1)
  EXPECT_EQ(sp.series, 2);
  EXPECT_EQ(sp.gaps, 1);
  EXPECT_EQ(d, (std::vector<int64_t>{59 * kS, 62 * kS, 59 * kS, 60 * kS, 60 * kS, 60 * kS, 60 * kS}));
  for (size_t i = 0; i + 1 < 6; ++i) EXPECT_LE(t[i] + d[i], t[i + 1]);
  // A stated interval within 2x is fine; beyond, an error naming the series, spacing and value.
  EXPECT_THAT(DurationsFromSeries(series, t, 100 * kS, 60 * kS, "interval", describe, &d), IsOk());
  EXPECT_THAT(DurationsFromSeries(series, t, 300 * kS, 60 * kS, "step", describe, &d),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("f: series 0: the data's spacing is 60 s but step=300 s was given")));
  // One instant only: the stated interval, else the fallback.
  const std::vector<int32_t> one = {0, 1};
  const std::vector<int64_t> same = {5, 5};
  GPUCOST_ASSERT_OK_AND_ASSIGN(sp, DurationsFromSeries(one, same, 30 * kS, 60 * kS, "interval", describe, &d));
  EXPECT_EQ(sp.spacing_ns, 0);
  EXPECT_EQ(d, (std::vector<int64_t>{30 * kS, 30 * kS}));
}

TEST(Exposition, UnusedFieldsAreSkippedWhateverTheirValue) {
  const std::string text =
      "DCGM_FI_DEV_COMPUTE_PIDS{gpu=\"0\"} ERROR - FAILED TO CONVERT TO STRING\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 5\n"
      "DCGM_FI_DEV_COMPUTE_PIDS{gpu=\"1\"} ERROR - FAILED TO CONVERT TO STRING\n";
  std::vector<std::string_view> wanted = {"DCGM_FI_DEV_GPU_UTIL"};
  GPUCOST_ASSERT_OK_AND_ASSIGN(PromSamples s, ParseExposition(text, "f.prom", kT, wanted));
  EXPECT_EQ(s.size(), 1u);
  ASSERT_EQ(s.skipped.size(), 1u);
  EXPECT_EQ(s.skipped[0].first, "DCGM_FI_DEV_COMPUTE_PIDS");
  EXPECT_EQ(s.skipped[0].second, 2);
  EXPECT_THAT(ParseExposition(text, "f.prom", kT),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "f.prom: line 1, column 'value': DCGM_FI_DEV_COMPUTE_PIDS: "
                       "'ERROR - FAILED TO CONVERT TO STRING' is not a number"));
}

TEST(Dcgm, ExporterOwnLabelsAreAFreeGpu) {
  const std::string text =
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"n1\",pod=\"train-0\",namespace=\"ml\",container=\"t\"} 90\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",Hostname=\"n1\",pod=\"nvidia-dcgm-exporter-wqqqn\","
      "namespace=\"gpu-operator\",container=\"nvidia-dcgm-exporter\"} 0\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"2\",Hostname=\"n1\",pod=\"my-gpu-metrics-x7\",namespace=\"mon\","
      "job=\"mon/my-gpu-metrics\"} 0\n";
  GPUCOST_ASSERT_OK_AND_ASSIGN(PromSamples s, ParseExposition(text, "f.prom", kT));
  GPUCOST_ASSERT_OK_AND_ASSIGN(DcgmUsage u, DcgmToUsage(s, DcgmOptions{}));
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u.diagnostics.exporter_series_freed, 2);
  EXPECT_EQ(u.diagnostics.samples_without_memory, 3);
  int free = 0;
  for (size_t i = 0; i < u.size(); ++i) free += u.samples.consumer.view().dictionary[u.samples.consumer.codes[i]].empty();
  EXPECT_EQ(free, 2);
}

TEST(Dcgm, MigSlicesOfAnA800) {
  const std::string text =
      "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"0\",Hostname=\"n\",modelName=\"NVIDIA A800-SXM4-80GB\","
      "GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"1\",pod=\"p\",namespace=\"ns\"} 0.5\n";
  GPUCOST_ASSERT_OK_AND_ASSIGN(PromSamples s, ParseExposition(text, "f.prom", kT));
  GPUCOST_ASSERT_OK_AND_ASSIGN(DcgmUsage u, DcgmToUsage(s, DcgmOptions{}));
  ASSERT_EQ(u.size(), 1u);
  EXPECT_DOUBLE_EQ(u.samples.share[0], 3.0 / 7.0);
}

TEST(Hosts, SacctFreeGpusOverTheRange) {
  const std::string text =
      "JobID|User|Account|Start|End|NodeList|AllocTRES\n"
      "7|a|p|2026-03-01T10:15:00|2026-03-01T10:30:00|g1|gres/gpu=1\n";
  SacctOptions options;
  options.range_start_ns = kT;
  options.range_end_ns = kT + 3'600'000'000'000;
  options.node_gpus = {{"g1", 2}};
  GPUCOST_ASSERT_OK_AND_ASSIGN(SacctResult r, ParseSacct(text, "sacct.txt", options));
  EXPECT_EQ(r.free_samples, 3);  // GPU 0 before and after the job, GPU 1 all hour
  int64_t total = 0;
  for (int64_t d : r.samples.duration) total += d;
  EXPECT_EQ(total, 2 * 3'600'000'000'000);  // every GPU-second of the range, held or free
  options.node_gpus = {{"g1", 0}};
  EXPECT_THAT(ParseSacct(text, "sacct.txt", options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("node g1 has 0 GPUs (node_gpus)")));
}

// hosts_fuzzer: a pmon header with `sm` last let a row without it (pmon rows
// may omit the command) be read past its end.
TEST(Hosts, MonRowsMustReachEveryColumnRead) {
  EXPECT_THAT(ParseNvidiaSmiMon("# Date Time gpu pid sm\n 20260301 10:00:00 0 123\n", "p.log", "UTC"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("4 fields where the header has 5")));
}

}  // namespace
}  // namespace gpucost
