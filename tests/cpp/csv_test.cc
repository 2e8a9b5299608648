#include "gpucost/io/csv.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "gpucost/time.h"
#include "testing/status_matchers.h"

namespace gpucost::io {
namespace {

using ::gpucost::testing::IsOk;
using ::gpucost::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Row {
  std::vector<std::string> fields;
  int64_t line;
};

// Tokenizes `text` fed in chunks of `chunk` bytes.
absl::Status Tokenize(std::string_view text, size_t chunk, std::vector<Row>* rows,
                      std::vector<std::string> names = {}) {
  CsvTokenizer csv("t.csv");
  auto on_record = [&](const CsvRecord& r) -> absl::Status {
    rows->push_back({std::vector<std::string>(r.fields.begin(), r.fields.end()), r.line});
    return absl::OkStatus();
  };
  for (size_t i = 0; i < text.size(); i += chunk) {
    absl::Status s = csv.Feed(text.substr(i, chunk), on_record);
    if (!s.ok()) return s;
  }
  return csv.Finish(on_record, names);
}

TEST(CsvTokenizer, Rfc4180QuotingInAnyChunking) {
  const std::string text =
      "a,b,c\r\n"
      "1,\"x,y\",\"he said \"\"hi\"\"\"\r\n"
      "2,\"multi\nline\",\n"
      "\n"
      "3,,\"\"\n"
      "4,last,no-newline";
  for (size_t chunk : {1, 2, 3, 7, 1000}) {
    std::vector<Row> rows;
    ASSERT_THAT(Tokenize(text, chunk, &rows), IsOk()) << chunk;
    ASSERT_EQ(rows.size(), 5u) << chunk;
    EXPECT_THAT(rows[0].fields, ElementsAre("a", "b", "c"));
    EXPECT_THAT(rows[1].fields, ElementsAre("1", "x,y", "he said \"hi\""));
    EXPECT_THAT(rows[2].fields, ElementsAre("2", "multi\nline", ""));
    EXPECT_THAT(rows[3].fields, ElementsAre("3", "", ""));
    EXPECT_THAT(rows[4].fields, ElementsAre("4", "last", "no-newline"));
    // Line numbers: the record's first line; the empty line 5 is skipped.
    EXPECT_EQ(rows[0].line, 1);
    EXPECT_EQ(rows[1].line, 2);
    EXPECT_EQ(rows[2].line, 3);
    EXPECT_EQ(rows[3].line, 6);
    EXPECT_EQ(rows[4].line, 7);
  }
}

TEST(CsvTokenizer, SkipsByteOrderMark) {
  std::vector<Row> rows;
  ASSERT_THAT(Tokenize("\xEF\xBB\xBF" "date,cost\n2025-03-01,1\n", 1, &rows), IsOk());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].fields[0], "date");
}

TEST(CsvTokenizer, TrailingDelimiterIsAnEmptyField) {
  std::vector<Row> rows;
  ASSERT_THAT(Tokenize("a,b\n1,", 1, &rows), IsOk());
  EXPECT_THAT(rows[1].fields, ElementsAre("1", ""));
}

TEST(CsvTokenizer, UnterminatedQuoteNamesLineAndColumn) {
  std::vector<Row> rows;
  EXPECT_THAT(Tokenize("a,b,c\n1,2,3\n4,\"open,5\n6,7,8\n", 4, &rows, {"a", "b", "c"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("t.csv: line 3, column 'b': unterminated quote")));
}

TEST(CsvTokenizer, CallbackErrorsStopTheInput) {
  CsvTokenizer csv("t.csv");
  int calls = 0;
  auto on_record = [&](const CsvRecord&) -> absl::Status {
    return ++calls == 2 ? absl::InvalidArgumentError("stop") : absl::OkStatus();
  };
  EXPECT_THAT(csv.Feed("a\nb\nc\n", on_record), StatusIs(absl::StatusCode::kInvalidArgument, "stop"));
  EXPECT_EQ(calls, 2);
}

TEST(CsvTokenizer, PendingPositionForStreamErrors) {
  CsvTokenizer csv("t.csv");
  auto ignore = [](const CsvRecord&) { return absl::OkStatus(); };
  ASSERT_THAT(csv.Feed("a,b,c\n1,2,3\n4,5", ignore), IsOk());
  EXPECT_TRUE(csv.has_pending_record());
  EXPECT_EQ(csv.pending_line(), 3);
  EXPECT_EQ(csv.pending_column(), 1);
}

TEST(ParseDouble, AcceptsDecimalsRejectsTheRest) {
  double v = 0;
  EXPECT_TRUE(ParseDouble("32.7726", &v));
  EXPECT_DOUBLE_EQ(v, 32.7726);
  EXPECT_TRUE(ParseDouble(" -1.5e-3 ", &v));
  EXPECT_DOUBLE_EQ(v, -0.0015);
  EXPECT_TRUE(ParseDouble("+2", &v));
  EXPECT_DOUBLE_EQ(v, 2);
  EXPECT_TRUE(ParseDouble(".5", &v));
  EXPECT_DOUBLE_EQ(v, 0.5);
  for (const char* bad : {"", "abc", "1,234.5", "$3", "nan", "NaN", "inf", "-inf", "1e999", "1.2.3", "-"}) {
    EXPECT_FALSE(ParseDouble(bad, &v)) << bad;
  }
}

int64_t Ns(int64_t days, int64_t seconds, int64_t nanos = 0) {
  return days * kNanosPerDay + seconds * kNanosPerSecond + nanos;
}

TEST(ParseInstant, Iso8601Forms) {
  const int64_t day = DaysFromCivil(2025, 3, 1);
  int64_t ns = 0;
  ASSERT_TRUE(ParseInstant("2025-03-01T10:00:00Z", &ns));
  EXPECT_EQ(ns, Ns(day, 36000));
  ASSERT_TRUE(ParseInstant("2025-03-01T10:00:00.123Z", &ns));
  EXPECT_EQ(ns, Ns(day, 36000, 123'000'000));
  ASSERT_TRUE(ParseInstant("2025-03-01T10:00:00.123456789Z", &ns));
  EXPECT_EQ(ns, Ns(day, 36000, 123'456'789));
  ASSERT_TRUE(ParseInstant("2025-03-01 10:00:00 UTC", &ns));  // BigQuery
  EXPECT_EQ(ns, Ns(day, 36000));
  ASSERT_TRUE(ParseInstant("2025-03-01T12:00:00+02:00", &ns));
  EXPECT_EQ(ns, Ns(day, 36000));
  ASSERT_TRUE(ParseInstant("2025-03-01T05:30:00-0430", &ns));
  EXPECT_EQ(ns, Ns(day, 36000));
  ASSERT_TRUE(ParseInstant("2025-03-01T10:00Z", &ns));
  EXPECT_EQ(ns, Ns(day, 36000));
  ASSERT_TRUE(ParseInstant("2025-03-01", &ns));
  EXPECT_EQ(ns, Ns(day, 0));
  ASSERT_TRUE(ParseInstant("2025-03-01T10:00:00", &ns));  // no zone = UTC
  EXPECT_EQ(ns, Ns(day, 36000));
  ASSERT_TRUE(ParseInstant("2025-02-28T24:00:00Z", &ns));  // end of day
  EXPECT_EQ(ns, Ns(day, 0));
  ASSERT_TRUE(ParseInstant("2024-02-29T00:00:00Z", &ns));  // leap day
}

TEST(ParseInstant, RejectsInvalidFields) {
  int64_t ns = 0;
  for (const char* bad : {"2023-02-01T30:00:00Z", "2025-13-01T00:00:00Z", "2025-02-29T00:00:00Z",
                          "2025-03-01T10:60:00Z", "2025-03-01T24:00:01Z", "2025-03-01T10:00:00X",
                          "2025-3-1", "03/01/2025", "", "null", "2025-03-01T10:00:00.Z"}) {
    EXPECT_FALSE(ParseInstant(bad, &ns)) << bad;
  }
}

TEST(ParseUsDate, MonthFirst) {
  int64_t ns = 0;
  ASSERT_TRUE(ParseUsDate("03/01/2025", &ns));
  EXPECT_EQ(ns, Ns(DaysFromCivil(2025, 3, 1), 0));
  ASSERT_TRUE(ParseUsDate("3/1/2025", &ns));
  EXPECT_EQ(ns, Ns(DaysFromCivil(2025, 3, 1), 0));
  EXPECT_FALSE(ParseUsDate("13/01/2025", &ns));
  EXPECT_FALSE(ParseUsDate("2025-03-01", &ns));
}

}  // namespace
}  // namespace gpucost::io
