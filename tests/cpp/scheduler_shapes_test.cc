// Real scheduler shapes (issue 15): sacct times with SLURM_TIME_FORMAT
// offsets and epoch seconds; the GPUs a pod holds (MIG, time-slicing, DRA).
#include <cmath>
#include <string>

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

}  // namespace
}  // namespace gpucost
