// Inputs the fuzz targets found crashing parsers (fuzz/regressions/), as
// unit tests: each now ends in an error naming the problem.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gpucost/catalog.h"
#include "gpucost/io/csv.h"
#include "gpucost/io/hosts.h"
#include "gpucost/io/prometheus.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace gpucost {
namespace {

using ::gpucost::testing::IsOk;
using ::gpucost::testing::StatusIs;
using ::testing::HasSubstr;

// hosts_fuzzer: a year far in the future overflowed int64 nanoseconds.
TEST(FuzzRegressions, NvidiaSmiTimeOutsideTheInstantRange) {
  EXPECT_THAT(ParseLocalTime("3604/03/01 10:00:00.123", "UTC").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("outside 1970-01-01..2200-01-01")));
  EXPECT_THAT(ParseLocalTime("1969/12/31 23:59:59", "UTC").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("outside")));
  EXPECT_THAT(ParseLocalTime("2026/03/01 10:00:00.123", "UTC"), IsOk());
  const std::string gpus =
      "timestamp, index, uuid, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n"
      "3604/03/01 10:00:00.123, 0, GPU-1, NVIDIA A100-SXM4-40GB, 97 %, 38211 MiB, 40960 MiB\n";
  EXPECT_THAT(ParseNvidiaSmiGpus(gpus, "gpu.csv", "UTC").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("gpu.csv")));
}

// hosts_fuzzer (under ASan): sacct rows grouped by JobIDRaw kept pointers to
// the keys of a flat_hash_map, which move when it grows; read after free.
TEST(FuzzRegressions, SacctRowsOfManyJobsReadTwice) {
  std::string text = "JobIDRaw|JobID|User|Account|Start|End|NodeList|AllocTRES\n";
  for (int i = 0; i < 64; ++i) {
    absl::StrAppend(&text, i, "|", i, "|u|p|2026-03-01T10:00:00|2026-03-01T11:00:00|n", i, "|gres/gpu=1\n");
  }
  absl::StatusOr<SacctResult> r = ParseSacct(text + text.substr(text.find('\n') + 1), "s.txt", SacctOptions{});
  ASSERT_THAT(r.status(), IsOk());
  EXPECT_EQ(r->rows_repeated, 64);
  EXPECT_EQ(r->samples.size(), 64u);
}

// hosts_fuzzer: brackets in one host name multiply; 5107 x 5107 names ran
// out of memory.
TEST(FuzzRegressions, HostListThatMultipliesBeyondBounds) {
  EXPECT_THAT(ExpandHostList("gpu-[01-05107]x[01-05107]").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expands to more than 100000 hosts")));
  absl::StatusOr<std::vector<std::string>> hosts = ExpandHostList("gpu-[01-02]x[1-3],cpu9");
  ASSERT_THAT(hosts.status(), IsOk());
  EXPECT_EQ(hosts->size(), 7u);
}

// A range ending at INT64_MAX stepped past it after its last host (UB).
TEST(FuzzRegressions, HostListRangeEndingAtInt64Max) {
  absl::StatusOr<std::vector<std::string>> hosts = ExpandHostList("gpu-[9223372036854775806-9223372036854775807]");
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  EXPECT_EQ(*hosts, (std::vector<std::string>{"gpu-9223372036854775806", "gpu-9223372036854775807"}));
}

// prometheus_fuzzer: a query_range timestamp of 1.7e15 s overflowed int64
// nanoseconds.
TEST(FuzzRegressions, QueryRangeTimestampOutOfRange) {
  const std::string body =
      R"({"status":"success","data":{"resultType":"matrix","result":[)"
      R"({"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0"},"values":[[1772359320359320.064,"97"]]}]}})";
  EXPECT_THAT(ParseQueryRange(body, "q").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("out of range")));
  const std::string ok =
      R"({"status":"success","data":{"resultType":"matrix","result":[)"
      R"({"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0"},"values":[[1772359320.064,"97"]]}]}})";
  EXPECT_THAT(ParseQueryRange(ok, "q"), IsOk());
}

// billing_fuzzer: a bill date in year 0 overflowed int64 nanoseconds.
TEST(FuzzRegressions, InstantsBeyondInt64NanosecondsAreNotInstants) {
  int64_t ns = 0;
  EXPECT_FALSE(io::ParseInstant("0000-01-01", &ns));
  EXPECT_FALSE(io::ParseInstant("9999-12-31T23:59:59Z", &ns));
  EXPECT_TRUE(io::ParseInstant("2026-03-01T00:00:00Z", &ns));
  EXPECT_EQ(ns, 20513LL * kNanosPerDay);
}

// csv_fuzzer: a lone CR after a quoted field ended the record but not the
// line, so the next record had the same line number.
TEST(FuzzRegressions, LoneCarriageReturnEndsTheLine) {
  io::CsvTokenizer csv("x.csv");
  std::vector<int64_t> lines;
  auto on_record = [&](const io::CsvRecord& r) -> absl::Status {
    lines.push_back(r.line);
    return absl::OkStatus();
  };
  ASSERT_THAT(csv.Feed("a,\"b\"\rc,d\ne,f\n", on_record), IsOk());
  ASSERT_THAT(csv.Finish(on_record), IsOk());
  EXPECT_EQ(lines, (std::vector<int64_t>{1, 2, 3}));
}

// catalog_fuzzer: a GPU name with "22222222222222GB" converted a huge double
// to int (undefined); such a token is not a memory size.
TEST(FuzzRegressions, AbsurdMemoryInAGpuName) {
  EXPECT_EQ(CanonicalGpuModel("A100 22222222222222GB"), CanonicalGpuModel("A100"));
}

}  // namespace
}  // namespace gpucost
