// Scheduler jobs joined to their GPUs' telemetry (io/job_join.h), and the
// DCGM reader's hpc_job label (dcgm-exporter's HPC job mapping).
#include <string>
#include <string_view>
#include <vector>

#include "gmock/gmock.h"
#include "gpucost/io/dcgm.h"
#include "gpucost/io/job_join.h"
#include "gpucost/io/prometheus.h"
#include "gpucost/status.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace gpucost {
namespace {

using ::gpucost::testing::StatusIs;
using ::testing::HasSubstr;

constexpr int64_t kT = 1'772'359'200'000'000'000;  // 2026-03-01T10:00:00Z
constexpr int64_t kS = kNanosPerSecond;

// Owning usage rows for a test.
struct Rows {
  std::vector<int64_t> timestamp, duration;
  std::vector<std::string> resource, consumer;
  std::vector<int32_t> device;
  std::vector<double> share, util, mem;
  EncodedStrings r, c;

  void Add(int64_t t, std::string_view res, int32_t dev, std::string_view who, double s, double u, double m,
           int64_t d) {
    timestamp.push_back(t);
    resource.emplace_back(res);
    device.push_back(dev);
    consumer.emplace_back(who);
    share.push_back(s);
    util.push_back(u);
    mem.push_back(m);
    duration.push_back(d);
  }
  SampleColumns View() {
    r = EncodeStrings(std::span<const std::string>(resource));
    c = EncodeStrings(std::span<const std::string>(consumer));
    return {.timestamp = timestamp, .resource_id = r.view(), .device = device, .consumer = c.view(),
            .share = share, .util = util, .mem_used = mem, .duration = std::span<const int64_t>(duration)};
  }
};

std::string Consumer(const JobJoin& j, size_t i) {
  return j.samples.consumer.values[j.samples.consumer.codes[i]];
}

TEST(DcgmJobLabel, HpcJobIsTheConsumerOnBareMetal) {
  std::string text;
  text += "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"n1\",hpc_job=\"4101\"} 80\n";
  text += "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"n1\",hpc_job=\"4102\"} 80\n";  // two jobs: one series each
  text += "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",Hostname=\"n1\"} 0\n";
  GPUCOST_ASSERT_OK_AND_ASSIGN(PromSamples s, ParseExposition(text, "t", kT));
  GPUCOST_ASSERT_OK_AND_ASSIGN(DcgmUsage u, DcgmToUsage(s, DcgmOptions{}));
  ASSERT_EQ(u.size(), 3u);
  std::vector<std::string> consumers;
  for (size_t i = 0; i < u.size(); ++i) consumers.push_back(u.samples.consumer.values[u.samples.consumer.codes[i]]);
  EXPECT_THAT(consumers, ::testing::UnorderedElementsAre("4101", "4102", ""));
  for (size_t i = 0; i < u.size(); ++i) {
    if (u.samples.device[i] == 0) {
      EXPECT_DOUBLE_EQ(u.samples.share[i], 0.5);
    }
  }
  DcgmOptions none;
  none.job_labels.clear();  // a caller that reads no job label sees free GPUs
  GPUCOST_ASSERT_OK_AND_ASSIGN(DcgmUsage free, DcgmToUsage(s, none));
  for (size_t i = 0; i < free.size(); ++i) EXPECT_EQ(free.samples.consumer.values[free.samples.consumer.codes[i]], "");
}

TEST(JobJoin, UnlabelledReadingsGoToTheJobHoldingTheGpu) {
  Rows tel, jobs;
  tel.Add(kT, "n1", 0, "", 1.0, 0.6, 8e9, 600 * kS);
  jobs.Add(kT + 240 * kS, "n1", 0, "7", 1.0, 1.0, 0.0, 3600 * kS);
  GPUCOST_ASSERT_OK_AND_ASSIGN(JobJoin j, JoinJobsToTelemetry(tel.View(), jobs.View(), {}));
  ASSERT_EQ(j.samples.size(), 3u);
  // The reading cut at the job's start: 240 s free, 360 s the job's (measured); the job's remaining 3240 s assumed.
  EXPECT_EQ(Consumer(j, 0), "");
  EXPECT_EQ(j.samples.duration[0], 240 * kS);
  EXPECT_EQ(Consumer(j, 1), "7");
  EXPECT_EQ(j.samples.timestamp[1], kT + 240 * kS);
  EXPECT_DOUBLE_EQ(j.samples.util[1], 0.6);
  EXPECT_EQ(j.origin[2], 1);
  EXPECT_EQ(j.samples.timestamp[2], kT + 600 * kS);
  EXPECT_EQ(j.samples.duration[2], 3240 * kS);
  ASSERT_EQ(j.jobs.held_seconds.size(), 1u);
  EXPECT_DOUBLE_EQ(j.jobs.held_seconds[0], 3600);
  EXPECT_DOUBLE_EQ(j.jobs.measured_seconds[0], 360);
  EXPECT_DOUBLE_EQ(j.jobs.assumed_seconds[0], 3240);
  EXPECT_EQ(j.diagnostics.samples_placed, 1);
  EXPECT_EQ(j.diagnostics.samples_free, 1);
  EXPECT_EQ(j.diagnostics.samples_assumed, 1);
}

TEST(JobJoin, ALabelPlacesTheJobAndItsNodesTelemetryCoversIt) {
  Rows tel, jobs;
  // DCGM: job 7 on GPU 1 (label); GPU 0 free. sacct's start order put job 7 on GPU 0.
  tel.Add(kT, "n1", 1, "7", 1.0, 0.9, 0, 600 * kS);
  tel.Add(kT, "n1", 0, "", 1.0, 0.0, 0, 600 * kS);
  jobs.Add(kT, "n1", 0, "7", 1.0, 1.0, 0, 600 * kS);
  GPUCOST_ASSERT_OK_AND_ASSIGN(JobJoin j, JoinJobsToTelemetry(tel.View(), jobs.View(), {}));
  ASSERT_EQ(j.samples.size(), 2u);  // the label's sample and GPU 0's free reading: nothing assumed
  EXPECT_EQ(Consumer(j, 0), "7");
  EXPECT_EQ(j.samples.device[0], 1);
  EXPECT_EQ(Consumer(j, 1), "");
  EXPECT_EQ(j.jobs.labelled[0], 1);
  EXPECT_TRUE(j.mismatches.device.empty());  // start order is a guess: only the node is compared
  // Slurm's own index (IDX) says GPU 0: the label on GPU 1 is a mismatch naming the job and the GPU.
  JobJoinOptions exact;
  exact.exact_devices = true;
  GPUCOST_ASSERT_OK_AND_ASSIGN(JobJoin k, JoinJobsToTelemetry(tel.View(), jobs.View(), exact));
  ASSERT_EQ(k.mismatches.device.size(), 1u);
  EXPECT_EQ(k.mismatches.consumer.values[k.mismatches.consumer.codes[0]], "7");
  EXPECT_EQ(k.mismatches.device[0], 1);
  EXPECT_EQ(k.mismatches.last_ns[0], kT + 600 * kS);
  EXPECT_DOUBLE_EQ(k.mismatches.seconds[0], 600);
}

TEST(JobJoin, ShiftedJobsAndBadInput) {
  Rows tel, jobs;
  tel.Add(kT, "n1", 0, "", 1.0, 0.5, 0, 600 * kS);
  jobs.Add(kT - 3600 * kS, "n1", 0, "7", 1.0, 1.0, 0, 600 * kS);
  JobJoinOptions shifted;
  shifted.job_shift_ns = 3600 * kS;  // read an hour early: shifted, the job meets the reading
  GPUCOST_ASSERT_OK_AND_ASSIGN(JobJoin j, JoinJobsToTelemetry(tel.View(), jobs.View(), shifted));
  ASSERT_EQ(j.samples.size(), 1u);
  EXPECT_EQ(Consumer(j, 0), "7");
  jobs.duration[0] = 0;
  EXPECT_THAT(JoinJobsToTelemetry(tel.View(), jobs.View(), {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("jobs: row 0, column 'duration'")));
}

}  // namespace
}  // namespace gpucost
