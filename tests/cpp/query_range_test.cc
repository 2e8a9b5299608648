// ParseQueryRange's columnar parser and ReadQueryRangeFiles: the same
// columns as the reference (DOM) reading, errors that name the file and the
// place, warnings, NaN/Inf strings, empty answers, the metric filter, the
// step checked on the first file, file order whatever the thread count;
// QueryRangeSpans (times only) and ReadQueryRangeEach (files kept apart).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gpucost/io/prometheus.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace gpucost {
namespace {

using ::gpucost::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

std::string Answer(const std::string& result, const std::string& extra = "") {
  return R"({"status":"success","data":{"resultType":"matrix","result":[)" + result + "]}" + extra + "}";
}

constexpr char kUtil[] =
    R"({"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0","Hostname":"n1","pod":"p"},)"
    R"("values":[[1772359200,"90"],[1772359260.5,"NaN"],[1772359320.123,"+Inf"],[1772359380,"-Inf"],)"
    R"([1772359440,"1e-3"]]})";
constexpr char kMemory[] =
    R"({"metric":{"__name__":"DCGM_FI_DEV_FB_USED","gpu":"0","Hostname":"n1","pod":"p"},)"
    R"("values":[[1772359200,"38211"]]})";

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gpucost_query_range_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(ParseQueryRange, ValuesAsPrometheusWritesThem) {
  auto s = ParseQueryRange(Answer(kUtil), "util.json");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), 5u);
  ASSERT_EQ(s->series.size(), 1u);
  EXPECT_EQ(s->series[0].name, "DCGM_FI_DEV_GPU_UTIL");
  EXPECT_THAT(s->series[0].labels, ElementsAre(Pair("gpu", "0"), Pair("Hostname", "n1"), Pair("pod", "p")));
  EXPECT_EQ(s->value[0], 90.0);
  EXPECT_TRUE(std::isnan(s->value[1]));
  EXPECT_EQ(s->value[2], INFINITY);
  EXPECT_EQ(s->value[3], -INFINITY);
  EXPECT_EQ(s->value[4], 1e-3);
  EXPECT_EQ(s->timestamp_ns[1], 1772359260500000000);
  EXPECT_EQ(s->timestamp_ns[2], 1772359320123000000);
  EXPECT_THAT(s->line, ElementsAre(0, 0, 0, 0, 0));
  EXPECT_EQ(s->source_is_instant[0], 0);
}

TEST(ParseQueryRange, OtherShapesReadAsBefore) {
  // Keys in another order, an instant vector, a series without __name__.
  auto reordered = ParseQueryRange(
      R"({"data":{"result":[{"values":[[1,"2"]],"metric":{"gpu":"0"}}],"resultType":"matrix"},"status":"success"})",
      "r.json", "DCGM_FI_DEV_GPU_UTIL");
  ASSERT_TRUE(reordered.ok()) << reordered.status();
  EXPECT_EQ(reordered->series[0].name, "DCGM_FI_DEV_GPU_UTIL");
  EXPECT_EQ(reordered->value[0], 2.0);
  auto vector = ParseQueryRange(
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"gpu":"1"},"value":[5,"7"]}]}})", "v");
  ASSERT_TRUE(vector.ok());
  EXPECT_EQ(vector->source_is_instant[0], 1);
  EXPECT_EQ(vector->value[0], 7.0);
}

TEST(ParseQueryRange, EmptyResult) {
  auto s = ParseQueryRange(Answer(""), "empty.json");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->size(), 0u);
  EXPECT_TRUE(s->series.empty());
}

TEST(ParseQueryRange, MalformedJsonNamesFileByteAndLine) {
  EXPECT_THAT(ParseQueryRange("{\"status\":\"success\",\n\"data\":{\"resultType\":\"matrix\",\"result\":[}}", "bad.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bad.json: byte 61 (line 2, column 41): not valid JSON")));
  EXPECT_THAT(ParseQueryRange(Answer(kUtil).substr(0, 80), "cut.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cut.json: byte 80 (line 1, column 81)")));
  EXPECT_THAT(ParseQueryRange(Answer(kUtil).substr(0, 80), "cut.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the text ends early")));
  EXPECT_THAT(ParseQueryRange(Answer(kUtil) + " x", "tail.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tail.json: byte ")));
}

TEST(ParseQueryRange, BadPointsNameSeriesAndPoint) {
  EXPECT_THAT(ParseQueryRange(Answer(R"({"metric":{},"values":[[1,"1"],[2,"x"]]})"), "a.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a.json: series 0, point 1: 'x' is not a number")));
  EXPECT_THAT(ParseQueryRange(Answer(R"({"metric":{},"values":[[1,2]]})"), "b.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("series 0, point 0: value is not a string")));
  EXPECT_THAT(ParseQueryRange(Answer(R"({"metric":{},"values":[[1,"2",3]]})"), "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected [<unix seconds>, \"<value>\"]")));
}

TEST(ParseQueryRange, ErrorAnswerCarriesPrometheusMessage) {
  EXPECT_THAT(ParseQueryRange(R"({"status":"error","errorType":"bad_data","error":"parse error"})", "e.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("e.json: Prometheus answered status 'error' (bad_data): parse error")));
}

TEST(ParseQueryRange, WarningsAreKept) {
  auto s = ParseQueryRange(Answer(kMemory, R"(,"warnings":["store down","replica gone"])"), "w.json");
  ASSERT_TRUE(s.ok());
  EXPECT_THAT(s->warnings, ElementsAre(Pair(0, "store down"), Pair(0, "replica gone")));
}

TEST(ReadQueryRangeFiles, FileOrderWhateverTheThreads) {
  std::vector<std::string> paths;
  for (int i = 0; i < 6; ++i) {
    paths.push_back(WriteFile(absl::StrCat("order", i, ".json"),
                              Answer(absl::StrCat(R"({"metric":{"__name__":"m","gpu":")", i,
                                                  R"("},"values":[[1,")", i, R"("],[61,"1"]]})"))));
  }
  for (int threads : {1, 2, 4}) {
    QueryRangeFilesOptions o;
    o.threads = threads;
    auto s = ReadQueryRangeFiles(paths, o);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_EQ(s->sources, paths);
    ASSERT_EQ(s->size(), 12u);
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(s->value[2 * i], i);
      EXPECT_EQ(s->series[s->series_id[2 * i]].source, i);
    }
  }
}

TEST(ReadQueryRangeFiles, MetricsNotAskedForAreSkipped) {
  const std::string path = WriteFile("both.json", Answer(absl::StrCat(kUtil, ",", kMemory)));
  QueryRangeFilesOptions o;
  o.metrics = {"DCGM_FI_DEV_GPU_UTIL"};
  auto s = ReadQueryRangeFiles(std::vector<std::string>{path}, o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->series.size(), 1u);
  EXPECT_EQ(s->size(), 5u);
  EXPECT_THAT(s->skipped, ElementsAre(Pair("DCGM_FI_DEV_FB_USED", 1)));
  // Unless the series carries the label that keeps it (a MIG instance's memory).
  const std::string mig = WriteFile(
      "mig.json", Answer(R"({"metric":{"__name__":"DCGM_FI_DEV_FB_USED","GPU_I_ID":"3"},"values":[[1,"5"]]})"));
  o.keep_label = "GPU_I_ID";
  auto kept = ReadQueryRangeFiles(std::vector<std::string>{mig}, o);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->size(), 1u);
}

TEST(ReadQueryRangeFiles, FirstFailureInFileOrder) {
  const std::string good = WriteFile("good.json", Answer(kUtil));
  const std::string bad1 = WriteFile("bad1.json", "{");
  const std::string bad2 = WriteFile("bad2.json", "[");
  QueryRangeFilesOptions o;
  o.threads = 2;
  EXPECT_THAT(ReadQueryRangeFiles(std::vector<std::string>{good, good, bad1, good, bad2}, o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad1.json: byte 1 (line 1, column 2)")));
  EXPECT_THAT(ReadQueryRangeFiles(std::vector<std::string>{good, WriteFile("none", "") + ".missing"}, o),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("cannot open")));
}

TEST(ReadQueryRangeFiles, PartialAnswersRefusedUnlessAllowed) {
  const std::string path = WriteFile("partial.json", Answer(kMemory, R"(,"warnings":["No StoreAPIs matched"])"));
  QueryRangeFilesOptions o;
  EXPECT_THAT(ReadQueryRangeFiles(std::vector<std::string>{path}, o),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("partial.json: Prometheus answered with warnings, a partial answer whose series or "
                                 "points may be missing: 'No StoreAPIs matched'; pass allow_partial=True")));
  o.allow_partial = true;
  auto s = ReadQueryRangeFiles(std::vector<std::string>{path}, o);
  ASSERT_TRUE(s.ok());
  EXPECT_THAT(s->warnings, ElementsAre(Pair(0, "No StoreAPIs matched")));
}

TEST(ReadQueryRangeFiles, WrongStepRefusedOnTheFirstFile) {
  std::string points;
  for (int i = 0; i < 10; ++i) absl::StrAppend(&points, i ? "," : "", "[", 1772359200 + 300 * i, ",\"1\"]");
  const std::string first =
      WriteFile("step300.json", Answer(absl::StrCat(R"({"metric":{"__name__":"m","gpu":"0"},"values":[)", points, "]}")));
  QueryRangeFilesOptions o;
  o.step_seconds = 60;
  // The second file is not JSON: the step error comes first, as the first file shows it.
  EXPECT_THAT(ReadQueryRangeFiles(std::vector<std::string>{first, WriteFile("junk.json", "junk")}, o),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("step300.json: series m{gpu=\"0\"}: the data's spacing is 300 s but step=60 s was "
                                 "given (more than 2x apart)")));
  o.step_seconds = 300;
  EXPECT_TRUE(ReadQueryRangeFiles(std::vector<std::string>{first}, o).ok());
}

// The time walk finds what the full read's points span, whatever path the
// answer takes (the fast walk, the reference parser for an instant vector),
// with series not asked for left out, and a file without points as none.
TEST(QueryRangeSpans, AsTheFullReadFindsThem) {
  const std::string util = WriteFile("span_util.json", Answer(absl::StrCat(kMemory, ",", kUtil)));
  const std::string vector = WriteFile(
      "span_vector.json",
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"m"},"value":[1772359201.5,"3"]}]}})");
  const std::string memory = WriteFile("span_memory.json", Answer(kMemory));
  // Points out of time order: the range is the least and greatest instant, not the first and last point.
  const std::string shuffled = WriteFile(
      "span_shuffled.json",
      Answer(R"({"metric":{"__name__":"m","gpu":"0"},"values":[[1772359260,"1"],[1772359200,"1"],[1772359500,"1"],)"
             R"([1772359320,"1"]]},{"metric":{"__name__":"m","gpu":"1"},"values":[[1772359140,"1"]]})"));
  const std::vector<std::string> paths{util, vector, shuffled, memory};
  for (int threads : {1, 2}) {
    QueryRangeFilesOptions o;
    o.threads = threads;
    o.metrics = {"DCGM_FI_DEV_GPU_UTIL", "m"};
    auto spans = QueryRangeSpans(paths, o);
    ASSERT_TRUE(spans.ok()) << spans.status();
    auto each = ReadQueryRangeEach(paths, o);
    ASSERT_TRUE(each.ok()) << each.status();
    ASSERT_EQ(spans->size(), 4u);
    ASSERT_EQ(each->size(), 4u);
    for (size_t i = 0; i < 3; ++i) {
      const std::vector<int64_t>& t = (*each)[i].timestamp_ns;
      ASSERT_TRUE((*spans)[i].has_value()) << paths[i];
      EXPECT_EQ((*spans)[i]->first_ns, *std::min_element(t.begin(), t.end()));
      EXPECT_EQ((*spans)[i]->last_ns, *std::max_element(t.begin(), t.end()));
    }
    EXPECT_EQ((*spans)[0]->last_ns, 1772359440'000'000'000);
    EXPECT_EQ((*spans)[2]->first_ns, 1772359140'000'000'000);
    EXPECT_EQ((*spans)[2]->last_ns, 1772359500'000'000'000);
    EXPECT_FALSE((*spans)[3].has_value());  // memory only, not asked for
  }
}

TEST(QueryRangeSpans, PartialAnswersAndBadJsonRefused) {
  const std::string partial = WriteFile("span_partial.json", Answer(kMemory, R"(,"warnings":["store down"])"));
  QueryRangeFilesOptions o;
  EXPECT_THAT(QueryRangeSpans(std::vector<std::string>{partial}, o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("span_partial.json: Prometheus answered")));
  EXPECT_THAT(QueryRangeSpans(std::vector<std::string>{WriteFile("span_bad.json", "{")}, o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("span_bad.json: byte 1")));
}

// Each file read alone is checked against the step, not only the first.
TEST(ReadQueryRangeEach, StepCheckedOnEveryFile) {
  std::string points;
  for (int i = 0; i < 10; ++i) absl::StrAppend(&points, i ? "," : "", "[", 1772359200 + 300 * i, ",\"1\"]");
  const std::string wide =
      WriteFile("each300.json", Answer(absl::StrCat(R"({"metric":{"__name__":"m","gpu":"0"},"values":[)", points, "]}")));
  const std::string fine = WriteFile("each60.json", Answer(R"({"metric":{"__name__":"m"},"values":[[0,"1"],[60,"1"]]})"));
  QueryRangeFilesOptions o;
  o.step_seconds = 60;
  EXPECT_TRUE(ReadQueryRangeFiles(std::vector<std::string>{fine, wide}, o).ok());
  EXPECT_THAT(ReadQueryRangeEach(std::vector<std::string>{fine, wide}, o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("each300.json: series m{gpu=\"0\"}")));
  auto each = ReadQueryRangeEach(std::vector<std::string>{fine, fine}, o);
  ASSERT_TRUE(each.ok());
  EXPECT_EQ((*each)[1].size(), 2u);
}

// Appending a kept answer by copy gives what appending it by move gives.
TEST(PromSamples, AppendCopyIsAppendMove) {
  const std::string util = WriteFile("copy_util.json", Answer(kUtil, R"(,"warnings":["w"])"));
  const std::string memory = WriteFile("copy_memory.json", Answer(kMemory));
  QueryRangeFilesOptions o;
  o.allow_partial = true;
  auto each = ReadQueryRangeEach(std::vector<std::string>{util, memory}, o);
  ASSERT_TRUE(each.ok());
  PromSamples copied, moved;
  for (const PromSamples& s : *each) copied.Append(s);
  for (PromSamples s : *each) moved.Append(std::move(s));
  EXPECT_EQ(copied.sources, moved.sources);
  EXPECT_EQ(copied.warnings, moved.warnings);
  EXPECT_EQ(copied.series_id, moved.series_id);
  EXPECT_EQ(copied.timestamp_ns, moved.timestamp_ns);
  EXPECT_EQ(copied.line, moved.line);
  ASSERT_EQ(copied.series.size(), moved.series.size());
  for (size_t i = 0; i < copied.series.size(); ++i) {
    EXPECT_EQ(copied.series[i].ToString(), moved.series[i].ToString());
    EXPECT_EQ(copied.series[i].source, moved.series[i].source);
  }
  EXPECT_EQ(copied.series[1].source, 1);
  EXPECT_EQ((*each)[0].size(), 5u);  // the kept answers are whole
}

}  // namespace
}  // namespace gpucost
