#include "gpucost/io/usage_csv.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "gpucost/time.h"
#include "testing/status_matchers.h"

namespace gpucost::io {
namespace {

using ::gpucost::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::vector<std::string> kNames = {"timestamp", "resource_id", "device", "consumer", "share"};

// The dictionary's values, in code order.
std::vector<std::string> Dictionary(const UsageCsvColumn& c) {
  std::vector<std::string> out;
  for (size_t i = 0; i + 1 < c.dictionary_offsets.size(); ++i) {
    out.push_back(c.dictionary_data.substr(c.dictionary_offsets[i], c.dictionary_offsets[i + 1] - c.dictionary_offsets[i]));
  }
  return out;
}

bool Valid(const UsageCsvColumn& c, size_t row) {
  return c.validity.empty() || ((c.validity[row / 8] >> (row % 8)) & 1) != 0;
}

absl::Status ErrorOf(std::string_view text, std::vector<std::string> names = kNames) {
  return ParseUsageCsvBlock(text, names, "u.csv", 2).status();
}

TEST(UsageCsv, ColumnsAsArrowLaysThemOut) {
  // Node-scrape order: the instant and the resource repeat; CRLF and an empty line.
  const std::string text =
      "2026-03-01T00:00:00Z,node-a,0,\"team/a\",1\r\n"
      "2026-03-01T00:00:00Z,node-a,1,\"team/b\",0.5\r\n"
      "\r\n"
      "2026-03-01 00:01:00.5,node-b,0,team/a,0.25";
  absl::StatusOr<UsageCsvBlock> block = ParseUsageCsvBlock(text, kNames, "u.csv", 2);
  ASSERT_TRUE(block.ok()) << block.status();
  EXPECT_EQ(block->rows, 3);
  EXPECT_EQ(block->lines, 4);
  const auto& c = block->columns;
  ASSERT_EQ(c.size(), 5u);
  constexpr int64_t t0 = 1'772'323'200 * kNanosPerSecond;  // 2026-03-01T00:00:00Z
  EXPECT_THAT(c[0].instants, ElementsAre(t0, t0, t0 + 60 * kNanosPerSecond + kNanosPerSecond / 2));
  EXPECT_THAT(c[1].ints, ElementsAre(0, 0, 1));
  EXPECT_THAT(Dictionary(c[1]), ElementsAre("node-a", "node-b"));
  EXPECT_THAT(c[2].ints, ElementsAre(0, 1, 0));
  EXPECT_THAT(c[3].ints, ElementsAre(0, 1, 0));
  EXPECT_THAT(Dictionary(c[3]), ElementsAre("team/a", "team/b"));
  EXPECT_THAT(c[4].doubles, ElementsAre(1.0, 0.5, 0.25));
  for (const UsageCsvColumn& column : c) EXPECT_TRUE(column.validity.empty());
}

TEST(UsageCsv, NullSpellingsAreNullOnlyUnquotedAndNeverInStrings) {
  const std::string text =
      "2026-03-01T00:00:00Z,r,,NA,nan\n"
      ",r,NA,c,\n"
      "2026-03-01T00:00:00Z,r,3,c,-nan\n";
  absl::StatusOr<UsageCsvBlock> block = ParseUsageCsvBlock(text, kNames, "u.csv", 2);
  ASSERT_TRUE(block.ok()) << block.status();
  const auto& c = block->columns;
  EXPECT_TRUE(Valid(c[0], 0) && !Valid(c[0], 1) && Valid(c[0], 2));
  EXPECT_EQ(c[0].instants[1], kMissingInstant);
  EXPECT_TRUE(!Valid(c[2], 0) && !Valid(c[2], 1) && Valid(c[2], 2));
  EXPECT_EQ(c[2].ints[2], 3);
  EXPECT_THAT(Dictionary(c[3]), ElementsAre("NA", "c"));  // a string, not a null
  EXPECT_TRUE(c[3].validity.empty());
  EXPECT_TRUE(!Valid(c[4], 0) && !Valid(c[4], 1) && !Valid(c[4], 2));
  // Quoted, a null spelling is a value to read: here not a number.
  EXPECT_THAT(ErrorOf("2026-03-01T00:00:00Z,r,0,c,\"\"\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("u.csv: line 2, column 'share': '' is not a number")));
}

TEST(UsageCsv, QuotedValuesWithQuotesAndCommasKeepTheirText) {
  // Two escaped values in turn: each dictionary key must outlive the scratch it was unescaped in.
  const std::string text =
      "2026-03-01T00:00:00Z,r,0,\"a \"\"x\"\", b\",0.5\n"
      "2026-03-01T00:00:00Z,r,1,\"c\"\"\",0.5\n"
      "2026-03-01T00:00:00Z,r,2,\"a \"\"x\"\", b\",\"0.5\"\n"
      "2026-03-01T00:00:00Z,\"\",3,\"c\"\"\",0.5\n"
      "2026-03-01T00:00:00Z,r,4,\"\",0.5\n";
  absl::StatusOr<UsageCsvBlock> block = ParseUsageCsvBlock(text, kNames, "u.csv", 2);
  ASSERT_TRUE(block.ok()) << block.status();
  EXPECT_THAT(block->columns[3].ints, ElementsAre(0, 1, 0, 1, 2));
  EXPECT_THAT(Dictionary(block->columns[3]), ElementsAre("a \"x\", b", "c\"", ""));  // a consumer may be empty
  // A resource may not: an empty resource_id is missing (the engine refuses the sample).
  EXPECT_THAT(Dictionary(block->columns[1]), ElementsAre("r"));
  EXPECT_TRUE(Valid(block->columns[1], 2) && !Valid(block->columns[1], 3) && Valid(block->columns[1], 4));
  EXPECT_THAT(block->columns[4].doubles, ElementsAre(0.5, 0.5, 0.5, 0.5, 0.5));
}

TEST(UsageCsv, NumbersAsArrowReadsThem) {
  const std::vector<std::string> names = {"timestamp", "device", "share"};
  const std::string text =
      "2026-03-01T00:00:00+02:00, 7 ,+0.25\n"
      "2026-03-01T00:00:00,0x1F,.5\n"
      "2026-03-01,-3,1e400\n"
      "2026-03-01,01,-inf\n"
      "2026-03-01,2147483647,4.9e-330\n"
      "2026-03-01,3.0,1\n"
      "2026-03-01,4.,1\n";
  absl::StatusOr<UsageCsvBlock> block = ParseUsageCsvBlock(text, names, "u.csv", 2);
  ASSERT_TRUE(block.ok()) << block.status();
  const auto& c = block->columns;
  constexpr int64_t t0 = 1'772'323'200 * kNanosPerSecond;
  EXPECT_THAT(c[0].instants, ElementsAre(t0 - 2 * kNanosPerHour, t0, t0, t0, t0, t0, t0));
  EXPECT_THAT(c[1].ints, ElementsAre(7, 31, -3, 1, 2147483647, 3, 4));
  EXPECT_EQ(c[2].doubles[0], 0.25);
  EXPECT_EQ(c[2].doubles[1], 0.5);
  EXPECT_EQ(c[2].doubles[2], std::numeric_limits<double>::infinity());
  EXPECT_EQ(c[2].doubles[3], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(c[2].doubles[4], 0.0);
  for (const char* bad : {"+1", "1.5", "1.0e0", ".0", "2147483648", "0x80000000", "-0x1", "one"}) {
    EXPECT_THAT(ErrorOf(std::string("2026-03-01,") + bad + ",0.5\n", names),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(std::string("line 2, column 'device': '") + bad + "' is not an integer")))
        << bad;
  }
  for (const char* bad : {"+-1", "0x1p-1", "1_0", "1,5x", "nan(", "1.5.2"}) {
    EXPECT_THAT(ErrorOf(std::string("2026-03-01,0,") + bad + "\n", names),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 2")))
        << bad;
  }
}

TEST(UsageCsv, BadLinesNameTheirLineAndColumn) {
  const std::string good = "2026-03-01T00:00:00Z,r,0,c,0.5\n";
  EXPECT_THAT(ErrorOf(good + good + "2026-03-01T00:00:00Z,r,x,c,0.5\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("u.csv: line 4, column 'device': 'x' is not an integer")));
  EXPECT_THAT(ErrorOf(good + "\n2026-13-01T00:00:00Z,r,0,c,0.5\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line 4, column 'timestamp': '2026-13-01T00:00:00Z' is not an ISO 8601 instant")));
  EXPECT_THAT(ErrorOf("2026-03-01T00:00:00Z,r,0,c\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("u.csv: line 2: expected 5 fields, found 4")));
  EXPECT_THAT(ErrorOf("2026-03-01T00:00:00Z,r,0,c,0.5,\"x,y\",z\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 2: expected 5 fields, found 7")));
  EXPECT_THAT(ErrorOf("2026-03-01T00:00:00Z,\"r,0,c,0.5\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 2, column 'resource_id': unterminated quote")));
  EXPECT_THAT(ErrorOf("2026-03-01T00:00:00Z,\"r\"x,0,c,0.5\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line 2, column 'resource_id': text after a closing quote")));
  EXPECT_THAT(ErrorOf("2026-03-01T00:00:00Z,r\xC3,0,c,0.5\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("column 'resource_id'")));
  EXPECT_THAT(ErrorOf(good, {"timestamp", "gpu"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("column 'gpu': not a usage column")));
}

TEST(UsageCsv, KnowsTheUsageColumnsOnly) {
  EXPECT_EQ(UsageCsvColumnKind("timestamp"), UsageCsvKind::kInstant);
  EXPECT_EQ(UsageCsvColumnKind("consumer"), UsageCsvKind::kString);
  EXPECT_EQ(UsageCsvColumnKind("device"), UsageCsvKind::kInt32);
  EXPECT_EQ(UsageCsvColumnKind("duration"), UsageCsvKind::kFloat64);
  EXPECT_EQ(UsageCsvColumnKind("power_w"), std::nullopt);
}

// Each piece parsed from a buffer overwritten before the next, as the
// Python reader's pieces are: the block equals the one-call parse, every
// value, code and line, empty strings and quoted ones included.
TEST(UsageCsv, PiecesGiveTheBlockOfOneCall) {
  std::string text;
  for (int i = 0; i < 300; ++i) {
    const std::string minute = std::to_string(10 + i % 50);
    text += "2026-03-01T00:" + minute + ":00Z,node-" + std::to_string(i % 7) + "," + std::to_string(i % 3) + "," +
            (i % 5 == 0 ? "" : i % 5 == 1 ? "\"te\"\"am\"" : "pod-" + std::to_string(i % 11)) + "," +
            (i % 9 == 0 ? "NA" : "0.5") + (i % 13 == 0 ? "\r\n\n" : "\n");
  }
  absl::StatusOr<UsageCsvBlock> whole = ParseUsageCsvBlock(text, kNames, "u.csv", 2);
  ASSERT_TRUE(whole.ok()) << whole.status();
  for (size_t piece : {1u, 40u, 977u}) {  // lines to a piece: whole lines, cut wherever a piece ends
    UsageCsvParser parser(kNames, "u.csv", 2, piece == 1 ? 0 : text.size());
    std::string buffer;
    size_t at = 0;
    while (at < text.size()) {
      size_t end = at;
      for (size_t lines = 0; lines < piece && end < text.size(); ++lines) end = text.find('\n', end) + 1;
      buffer.assign(text, at, end - at);
      ASSERT_TRUE(parser.Add(buffer).ok());
      buffer.assign(buffer.size(), '#');  // the piece's bytes gone
      at = end;
    }
    absl::StatusOr<UsageCsvBlock> pieces = parser.Finish();
    ASSERT_TRUE(pieces.ok()) << pieces.status();
    EXPECT_EQ(pieces->rows, whole->rows);
    EXPECT_EQ(pieces->lines, whole->lines);
    ASSERT_EQ(pieces->columns.size(), whole->columns.size());
    for (size_t c = 0; c < whole->columns.size(); ++c) {
      const UsageCsvColumn& got = pieces->columns[c];
      const UsageCsvColumn& want = whole->columns[c];
      EXPECT_EQ(got.instants, want.instants) << c;
      EXPECT_EQ(got.ints, want.ints) << c;
      EXPECT_EQ(got.doubles, want.doubles) << c;
      EXPECT_EQ(got.validity, want.validity) << c;
      EXPECT_EQ(Dictionary(got), Dictionary(want)) << c;
    }
    EXPECT_THAT(Dictionary(pieces->columns[3]), ::testing::Contains("te\"am"));
    EXPECT_FALSE(parser.Finish().ok());  // once
  }
}

// A bad value in a later piece names its line counted over the pieces
// before; the error is kept.
TEST(UsageCsv, AnErrorInALaterPieceNamesItsLineAndSticks) {
  UsageCsvParser parser(kNames, "u.csv", 2);
  ASSERT_TRUE(parser.Add("2026-03-01T00:00:00Z,node-a,0,a,1\n\n").ok());
  EXPECT_THAT(parser.Add("2026-03-01T00:00:00Z,node-a,x,a,1\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("u.csv: line 4, column 'device'")));
  EXPECT_THAT(parser.Add("2026-03-01T00:00:00Z,node-a,0,a,1\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 4")));
  EXPECT_THAT(parser.Finish().status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 4")));
}

}  // namespace
}  // namespace gpucost::io
