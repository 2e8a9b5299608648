// Real scheduler shapes (issue 15): sacct times with SLURM_TIME_FORMAT
// offsets and epoch seconds; the GPUs a pod holds (MIG, time-slicing, DRA).
// Slurm (issue 30): shared GPUs (gres/shard, gres/mps), repeated and
// overlapping sacct exports, node events (sacctmgr show event) as down time.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gpucost/io/hosts.h"
#include "gpucost/io/kubernetes.h"
#include "gpucost/status.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace gpucost {
namespace {

using ::gpucost::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kS = 1'000'000'000;

TEST(SacctTimes, OffsetWinsOverTzAndEpochSeconds) {
  const std::string text =
      "JobID|User|Account|Start|End|NodeList|AllocTRES\n"
      "1|u|p|2025-03-30T01:30:00+0100|2025-03-30T03:30:00+02:00|n1|gres/gpu=1\n"
      "2|u|p|1740823200|1740826800|n2|gres/gpu:a100=1\n"
      "3|u|p|2025-03-01T10:00:00Z|2025-03-01T10:30:00.5Z|n3|gres/gpu=1\n";
  SacctOptions options;
  options.tz = "America/New_York";
  GPUCOST_ASSERT_OK_AND_ASSIGN(SacctResult r, ParseSacct(text, "s.txt", options));
  ASSERT_EQ(r.samples.timestamp.size(), 3u);
  // Samples in start order: job 1 (2025-03-30T00:30Z) comes last.
  EXPECT_EQ(r.samples.timestamp[0], 1740823200 * kS);
  EXPECT_EQ(r.samples.duration[0], 3600 * kS);
  EXPECT_EQ(r.samples.timestamp[1], 1740823200 * kS);
  EXPECT_EQ(r.samples.duration[1], 1800 * kS + kS / 2);
  EXPECT_EQ(r.samples.timestamp[2], 1743294600 * kS);
  EXPECT_EQ(r.samples.duration[2], 3600 * kS);  // clocks went forward in between
  EXPECT_THAT(ParseSacct("JobID|User|Account|Start|End|NodeList|AllocTRES\n"
                         "1|u|p|2025-03-01T10:00:00+2400|2025-03-01T11:00:00|n1|gres/gpu=1\n",
                         "s.txt", options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 2, column 'Start'")));
}

TEST(PodGpus, MigTimeSlicingInitContainersAndDra) {
  const std::string pods = R"({"items": [
    {"metadata": {"namespace": "a", "name": "p"}, "spec": {"nodeName": "n1",
      "initContainers": [{"name": "i", "resources": {"limits": {"nvidia.com/gpu": "3"}}}],
      "containers": [{"name": "c1", "resources": {"limits": {"nvidia.com/gpu": "1"}}},
                     {"name": "c2", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
     "status": {"phase": "Succeeded", "startTime": "2025-03-01T10:00:00Z",
       "containerStatuses": [{"state": {"terminated": {"finishedAt": "2025-03-01T11:00:00Z"}}}]}},
    {"metadata": {"namespace": "a", "name": "m"}, "spec": {"nodeName": "n1",
      "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/mig-2g.20gb": "1", "cpu": "2"}}}]},
     "status": {}},
    {"metadata": {"namespace": "a", "name": "t"}, "spec": {"nodeName": "n2",
      "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}, "status": {}},
    {"metadata": {"namespace": "a", "name": "d"}, "spec": {"nodeName": "n1",
      "resourceClaims": [{"name": "g", "resourceClaimTemplateName": "tpl"}],
      "containers": [{"name": "c", "resources": {"claims": [{"name": "g"}]}}]},
     "status": {"resourceClaimStatuses": [{"name": "g", "resourceClaimName": "d-g-1"}]}}]})";
  const std::string nodes = R"({"items": [{"metadata": {"name": "n2", "labels": {"nvidia.com/gpu.replicas": "4"}}}]})";
  const std::string claims = R"({"items": [{"metadata": {"namespace": "a", "name": "d-g-1"},
    "status": {"allocation": {"devices": {"results": [{"driver": "gpu.nvidia.com", "pool": "n1", "device": "gpu-0"}]}},
               "reservedFor": [{"resource": "pods", "name": "d"}]}}]})";
  GPUCOST_ASSERT_OK_AND_ASSIGN(PodGpuTable t, ParseKubectlPodGpus(pods, "pods.json", nodes, "nodes.json", claims,
                                                                  "claims.json"));
  ASSERT_EQ(t.size(), 4u);
  EXPECT_THAT(t.count, ElementsAre(3.0, 1.0, 2.0, 1.0));  // max(1 + 1, 3) for the init container
  EXPECT_THAT(t.share, ElementsAre(1.0, 2.0 / 7, 0.25, 1.0));
  EXPECT_EQ(t.start[0], 1740823200 * kS);
  EXPECT_EQ(t.end[0], 1740826800 * kS);
  EXPECT_EQ(t.end[1], kUnknownInstant);
  EXPECT_EQ(t.kind.value_views[t.kind.codes[2]], "time-slicing");
  EXPECT_EQ(t.device.value_views[t.device.codes[3]], "gpu.nvidia.com/n1/gpu-0");
  EXPECT_THAT(ParseKubectlPodGpus(R"({"items": [{"metadata": {"namespace": "a", "name": "p"}, "spec": {
      "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "0.5"}}}]}}]})",
                                  "pods.json", "", "", "", ""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("row 0, column 'spec.containers[c].resources.limits.nvidia.com/gpu'")));
}

// kubernetes_fuzzer: a MIG profile of 400000000 slices overflowed 6 * slices.
TEST(PodGpus, AMigProfileNoGpuHasIsNoShare) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(PodGpuTable t, ParseKubectlPodGpus(R"({"items": [{"metadata": {"namespace": "a",
      "name": "p"}, "spec": {"containers": [{"name": "c", "resources": {"limits":
      {"nvidia.com/mig-400000000g.10gb": "1"}}}]}}]})", "pods.json", "", "", "", ""));
  ASSERT_EQ(t.share.size(), 1u);
  EXPECT_TRUE(std::isnan(t.share[0]));
}

// ---- Slurm: shared GPUs, repeated exports, node events (issue 30) ----

constexpr int64_t kT = 1'772'359'200'000'000'000;  // 2026-03-01T10:00:00Z

std::string ConsumerOf(const UsageSamples& u, size_t i) {
  return std::string(u.consumer.view().dictionary[u.consumer.codes[i]]);
}

TEST(SlurmGres, TresTotalsGresPerNodeTypedAndIndices) {
  GPUCOST_ASSERT_OK_AND_ASSIGN(SlurmGres g, ParseSlurmGres("billing=8,cpu=8,gres/gpu:a100=2,gres/gpu=2,mem=64G"));
  EXPECT_EQ(g.gpus, 2);  // untyped wins over the typed count of the same GPUs
  EXPECT_FALSE(g.per_node);
  GPUCOST_ASSERT_OK_AND_ASSIGN(g, ParseSlurmGres("gres/gpu:a100=1,gres/gpu:v100=2"));
  EXPECT_EQ(g.gpus, 3);  // typed only: summed
  GPUCOST_ASSERT_OK_AND_ASSIGN(g, ParseSlurmGres("cpu=4,gres/shard=2,mem=8G,node=1"));
  EXPECT_EQ(g.shards, 2);
  EXPECT_EQ(g.gpus, 0);
  GPUCOST_ASSERT_OK_AND_ASSIGN(g, ParseSlurmGres("gres/mps=50"));
  EXPECT_EQ(g.mps, 50);
  GPUCOST_ASSERT_OK_AND_ASSIGN(g, ParseSlurmGres("gpu:a100:2(IDX:0-1,3),gres/gpumem:40G"));
  EXPECT_EQ(g.gpus, 2);
  EXPECT_TRUE(g.per_node);
  EXPECT_THAT(g.indices, ElementsAre(0, 1, 3));
  GPUCOST_ASSERT_OK_AND_ASSIGN(g, ParseSlurmGres("gres/shard:2"));  // TresPerNode form
  EXPECT_EQ(g.shards, 2);
  EXPECT_TRUE(g.per_node);
  GPUCOST_ASSERT_OK_AND_ASSIGN(g, ParseSlurmGres("gpu"));  // --gres=gpu: one per node
  EXPECT_EQ(g.gpus, 1);
  GPUCOST_ASSERT_OK_AND_ASSIGN(g, ParseSlurmGres("cpu=4,mem=8G,license/matlab=1"));
  EXPECT_FALSE(g.any());
  EXPECT_THAT(ParseSlurmGres("gres/shard=two"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                         HasSubstr("'gres/shard=two' is not a count")));
  EXPECT_THAT(ParseSlurmGres("gres/gpu=1,gpu:1"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("mixes")));
  EXPECT_THAT(ParseSlurmGres("gpu:2(IDX:0-)"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad IDX")));
}

TEST(SacctShares, ShardsAndMpsAreAShareOfOneGpu) {
  // n1 has 4 shards per GPU. 10 (shard:2) and 11 (mps:50) share GPU 0 from
  // 10:00; 12 (a whole GPU) cannot use GPU 0 and gets GPU 1; 13 (shard:2)
  // finds no room left on GPU 0 (0.5 + 0.5 held) and none on GPU 1 (whole),
  // so GPU 2.
  const std::string text =
      "JobID|User|Account|Partition|Start|End|NodeList|AllocTRES\n"
      "10|a|p|gpu|2026-03-01T10:00:00|2026-03-01T11:00:00|n1|cpu=2,gres/shard=2,node=1\n"
      "11|b|p|gpu|2026-03-01T10:00:00|2026-03-01T10:30:00|n1|cpu=2,gres/mps=50,node=1\n"
      "12|c|p|gpu|2026-03-01T10:10:00|2026-03-01T11:00:00|n1|cpu=2,gres/gpu=1,node=1\n"
      "13|d|p|gpu|2026-03-01T10:20:00|2026-03-01T10:40:00|n1|cpu=2,gres/shard=2,node=1\n";
  SacctOptions options;
  options.shards_per_gpu = {{"n1", 4}};
  GPUCOST_ASSERT_OK_AND_ASSIGN(SacctResult r, ParseSacct(text, "s.txt", options));
  ASSERT_EQ(r.samples.size(), 4u);
  EXPECT_THAT(r.samples.share, ElementsAre(0.5, 0.5, 1.0, 0.5));
  EXPECT_THAT(r.samples.device, ElementsAre(0, 0, 1, 2));
  EXPECT_EQ(r.shared_jobs, 3);
  EXPECT_EQ(ConsumerOf(r.samples, 3), "13");
  // mps:50 over 200 MPS units per GPU (partition gpu) is a quarter.
  options.mps_per_gpu = {{"gpu", 200}};
  GPUCOST_ASSERT_OK_AND_ASSIGN(r, ParseSacct(text, "s.txt", options));
  EXPECT_DOUBLE_EQ(r.samples.share[1], 0.25);
  // The count by partition, by a host list, or for every node.
  for (auto counts : std::vector<std::vector<std::pair<std::string, int32_t>>>{
           {{"gpu", 4}}, {{"n[0-3]", 4}}, {{"*", 4}}, {{"*", 8}, {"gpu", 4}}, {{"gpu", 8}, {"n1", 4}}}) {
    options.shards_per_gpu = counts;
    GPUCOST_ASSERT_OK_AND_ASSIGN(r, ParseSacct(text, "s.txt", options));
    EXPECT_DOUBLE_EQ(r.samples.share[0], 0.5) << counts[0].first;
  }
}

TEST(SacctShares, AShardJobOnANodeWithoutACountIsAnErrorNamingIt) {
  const std::string text =
      "JobID|User|Account|Partition|Start|End|NodeList|AllocTRES\n"
      "4242|a|p|shared|2026-03-01T10:00:00|2026-03-01T11:00:00|dgx01|cpu=2,gres/shard=2,node=1\n";
  EXPECT_THAT(ParseSacct(text, "s.txt", SacctOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("s.txt: line 2, column 'AllocTRES': job 4242 holds 2 shard(s) (gres/shard) on node "
                                 "dgx01, which has no shards-per-GPU count: give shards_per_gpu for node dgx01, "
                                 "partition shared or every node")));
  SacctOptions options;
  options.shards_per_gpu = {{"dgx01", 1}};  // 2 shards of a 1-shard GPU: more than one GPU
  EXPECT_THAT(ParseSacct(text, "s.txt", options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("job 4242 holds 2 GPUs' worth")));
  options.shards_per_gpu = {{"dgx01", 0}};
  EXPECT_THAT(ParseSacct(text, "s.txt", options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("parameter 'shards_per_gpu'")));
}

TEST(SacctShares, ReqTresAndGresColumnsWhenAllocTresHasNoGpus) {
  // AccountingStorageTRES without gres/shard: AllocTRES has none, ReqTRES or a Gres column does.
  const std::string text =
      "JobID|User|Account|Start|End|NodeList|AllocTRES|ReqTRES|AllocGRES\n"
      "1|a|p|2026-03-01T10:00:00|2026-03-01T11:00:00|n[1-2]|cpu=4,node=2|cpu=4,gres/shard=4,node=2|\n"
      "2|a|p|2026-03-01T10:00:00|2026-03-01T11:00:00|n3|cpu=4,node=1||mps:25\n";
  SacctOptions options;
  options.shards_per_gpu = {{"*", 8}};
  GPUCOST_ASSERT_OK_AND_ASSIGN(SacctResult r, ParseSacct(text, "s.txt", options));
  ASSERT_EQ(r.samples.size(), 3u);
  EXPECT_THAT(r.samples.share, ElementsAre(0.25, 0.25, 0.25));  // 4 shards over 2 nodes: 2 of 8 each
}

TEST(SacctExports, RepeatedRowsAcrossExportsAreDroppedAndCounted) {
  const std::string a =
      "JobIDRaw|JobID|User|Account|Start|End|State|NodeList|AllocTRES\n"
      "101|101|a|p|2026-03-01T10:00:00|2026-03-01T11:00:00|COMPLETED|dgx01|gres/gpu=8\n"
      "102|102|b|q|2026-03-01T11:00:00|Unknown|RUNNING|dgx01|gres/gpu=8\n";
  // The second export, taken later, repeats 101 and finds 102 finished.
  const std::string b =
      "JobIDRaw|JobID|User|Account|Start|End|State|NodeList|AllocTRES\n"
      "101|101|a|p|2026-03-01T10:00:00|2026-03-01T11:00:00|COMPLETED|dgx01|gres/gpu=8\n"
      "102|102|b|q|2026-03-01T11:00:00|2026-03-01T12:00:00|COMPLETED|dgx01|gres/gpu=8\n";
  SacctOptions options;
  options.now_ns = kT + 5 * 3600 * kS;
  options.node_gpus = {{"dgx01", 8}};
  const std::vector<SacctInput> inputs = {{a, "a.txt"}, {b, "b.txt"}};
  GPUCOST_ASSERT_OK_AND_ASSIGN(SacctResult r, ParseSacct(inputs, options));
  EXPECT_EQ(r.rows_repeated, 1);
  EXPECT_EQ(r.rows_superseded, 1);
  EXPECT_THAT(r.repeated_jobs, ElementsAre("101"));
  EXPECT_THAT(r.superseded_jobs, ElementsAre("102"));
  ASSERT_EQ(r.samples.size(), 16u);
  int64_t gpu_seconds = 0;
  for (int64_t d : r.samples.duration) gpu_seconds += d;
  EXPECT_EQ(gpu_seconds, 16 * 3600 * kS);  // each job once: 8 GPUs x 1 h each
  EXPECT_EQ(r.workloads.size(), 2u);
  // The same export appended to itself (its header line again): read once, no device 8.
  const std::string twice = a + a;
  GPUCOST_ASSERT_OK_AND_ASSIGN(r, ParseSacct(twice, "twice.txt", options));
  EXPECT_EQ(r.rows_repeated, 2);
  int32_t top = 0;
  for (int32_t d : r.samples.device) top = std::max(top, d);
  EXPECT_EQ(top, 7);
}

TEST(SacctExports, ARequeuedJobsRunsAreKeptAndCutAtTheNextStart) {
  // sacct --duplicates: 77 ran 10:00-10:40 and was requeued, ran again 11:00-12:00. An
  // older export saw the first run still going (End Unknown, charged to `now` 12:00): cut at 11:00.
  const std::string text =
      "JobIDRaw|JobID|User|Account|Start|End|NodeList|AllocTRES\n"
      "77|77|a|p|2026-03-01T10:00:00|Unknown|n1|gres/gpu=1\n"
      "77|77|a|p|2026-03-01T11:00:00|2026-03-01T12:00:00|n1|gres/gpu=1\n";
  SacctOptions options;
  options.now_ns = kT + 2 * 3600 * kS;
  GPUCOST_ASSERT_OK_AND_ASSIGN(SacctResult r, ParseSacct(text, "s.txt", options));
  EXPECT_EQ(r.runs_cut, 1);
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_THAT(r.samples.timestamp, ElementsAre(kT, kT + 3600 * kS));
  EXPECT_THAT(r.samples.duration, ElementsAre(3600 * kS, 3600 * kS));
  EXPECT_EQ(r.workloads.size(), 1u);
}

TEST(SacctExports, JobsBeyondANodesGpusNameTheJobs) {
  // Two different jobs claim all 8 GPUs of dgx01 at once (a node under two clusters' names).
  const std::string text =
      "JobID|User|Account|Start|End|NodeList|AllocTRES\n"
      "501|a|p|2026-03-01T10:00:00|2026-03-01T11:00:00|dgx01|gres/gpu=8\n"
      "502|b|p|2026-03-01T10:30:00|2026-03-01T11:00:00|dgx01|gres/gpu=2\n";
  SacctOptions options;
  options.node_gpus = {{"dgx01", 8}};
  EXPECT_THAT(ParseSacct(text, "s.txt", options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("s.txt: line 3, column 'AllocTRES': job 502 needs 2 GPU(s) of node dgx01 at "
                                 "2026-03-01 10:30:00 UTC, but node dgx01 has 8 GPUs (node_gpus), held then by job(s) "
                                 "501")));
}

TEST(SacctExports, JobsOnGpuNodesWithoutGpusAreListed) {
  const std::string text =
      "JobID|User|Account|Partition|Start|End|NodeList|AllocTRES\n"
      "900|a|p|gpu|2026-03-01T10:00:00|2026-03-01T12:00:00|dgx01|cpu=8,mem=64G,node=1\n"
      "901|a|p|cpu|2026-03-01T10:00:00|2026-03-01T12:00:00|cpu01|cpu=8,mem=64G,node=1\n";
  SacctOptions options;
  options.node_gpus = {{"dgx01", 8}};
  GPUCOST_ASSERT_OK_AND_ASSIGN(SacctResult r, ParseSacct(text, "s.txt", options));
  EXPECT_EQ(r.jobs_without_gpus, 2);
  ASSERT_EQ(r.jobs_unknown_gpus.size(), 1u);
  EXPECT_EQ(r.jobs_unknown_gpus[0].job, "900");
  EXPECT_EQ(r.jobs_unknown_gpus[0].line, 2);
  EXPECT_EQ(r.jobs_unknown_gpus[0].end - r.jobs_unknown_gpus[0].start, 2 * 3600 * kS);
}

TEST(SlurmEvents, HostListsLocalTimesOngoingAndClusterEvents) {
  // The default format of `sacctmgr show event -P`, Chicago time (UTC-6 in March before the 8th).
  const std::string text =
      "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n"
      "ohare||2026-03-01T00:00:00|Unknown|||\n"
      "ohare|gpu[01-03]|2026-03-02T08:00:00|2026-03-05T08:00:00|MAINT|rack 4 | PSU swap|root(0)\n"
      "ohare|gpu04|2026-03-06T22:00:00|Unknown|DRAIN|xid 79|slurm(64030)\n"
      "ohare|gpu05|2026-03-06T22:00:00|2026-03-06T22:00:00|DOWN*|not responding|slurm(64030)\n";
  SlurmEventsOptions options;
  options.tz = "America/Chicago";
  options.now_ns = kT + 7 * 24 * 3600 * kS;  // 2026-03-08T10:00Z
  GPUCOST_ASSERT_OK_AND_ASSIGN(SlurmEvents e, ParseSlurmEvents(text, "events.txt", options));
  EXPECT_THAT(e.node, ElementsAre("gpu01", "gpu02", "gpu03", "gpu04"));
  EXPECT_EQ(e.start[0], kT + 24 * 3600 * kS + 4 * 3600 * kS);  // 08:00 CST is 14:00Z
  EXPECT_EQ(e.end[0] - e.start[0], 3 * 24 * 3600 * kS);
  EXPECT_EQ(e.reason[1], "rack 4 | PSU swap");  // a '|' in the reason
  EXPECT_EQ(e.state[3], "DRAIN");
  EXPECT_EQ(e.end[3], options.now_ns);
  EXPECT_EQ(e.cluster_events, 1);
  EXPECT_EQ(e.ongoing, 1);
  EXPECT_EQ(e.empty, 1);
  EXPECT_THAT(e.line, ElementsAre(3, 3, 3, 4));
  // Only the states asked for.
  options.states = {"maint"};
  GPUCOST_ASSERT_OK_AND_ASSIGN(e, ParseSlurmEvents(text, "events.txt", options));
  EXPECT_EQ(e.size(), 3u);
  EXPECT_EQ(e.other_states, 2);
  // An ongoing event without `now`, a bad host list, a header without NodeName.
  EXPECT_THAT(ParseSlurmEvents(text, "events.txt", SlurmEventsOptions{.tz = "America/Chicago"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("events.txt: line 4, column 'TimeEnd': the event is still going on")));
  EXPECT_THAT(ParseSlurmEvents("NodeName|TimeStart|TimeEnd\ngpu[1-|2026-03-01T00:00:00|2026-03-02T00:00:00\n",
                               "e.txt", SlurmEventsOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 2, column 'NodeName': host list")));
  EXPECT_THAT(ParseSlurmEvents("Cluster|TimeStart\n", "e.txt", SlurmEventsOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 1, column 'NodeName'")));
}

}  // namespace
}  // namespace gpucost
