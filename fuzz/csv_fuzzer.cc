// libFuzzer target: the streaming RFC 4180 tokenizer and the field parsers
// every billing reader shares (io/csv.h).
//
// The input is fed twice, whole and in random chunks: both must give the
// same records (or the same error), and every field goes through
// ParseDouble, ParseInstant and ParseUsDate, whose accepted instants must be
// floorable. The same text as usage CSV lines (io/usage_csv.h) parses whole
// or cut into two blocks at a line end to the same values, or fails both ways,
// and given to a UsageCsvParser in pieces freed as they are added.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzzer/FuzzedDataProvider.h"
#include "gpucost/io/csv.h"
#include "gpucost/io/usage_csv.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "csv_fuzzer: invariant violated: %s\n", what);
    std::abort();
  }
}

struct Tokenized {
  absl::Status status;
  std::vector<std::vector<std::string>> records;
  std::vector<int64_t> lines;
};

Tokenized Tokenize(std::string_view text, char delimiter, const std::vector<size_t>& cuts) {
  Tokenized out;
  gpucost::io::CsvTokenizer csv("fuzz.csv", delimiter);
  auto on_record = [&](const gpucost::io::CsvRecord& r) -> absl::Status {
    std::vector<std::string> fields(r.fields.begin(), r.fields.end());
    Check(r.quoted.size() == r.fields.size(), "one quoted flag per field");
    for (std::string_view f : r.fields) {
      double d = 0;
      int64_t ns = 0;
      (void)gpucost::io::ParseDouble(f, &d);
      (void)gpucost::io::ParseInstant(f, &ns);
      (void)gpucost::io::ParseUsDate(f, &ns);
      (void)gpucost::io::IsNullText(f);
      (void)gpucost::io::TrimSpaces(f);
    }
    out.records.push_back(std::move(fields));
    out.lines.push_back(r.line);
    return absl::OkStatus();
  };
  size_t begin = 0;
  for (size_t cut : cuts) {
    if (cut < begin || cut > text.size()) continue;
    out.status = csv.Feed(text.substr(begin, cut - begin), on_record);
    if (!out.status.ok()) return out;
    begin = cut;
  }
  out.status = csv.Feed(text.substr(begin), on_record);
  if (out.status.ok()) out.status = csv.Finish(on_record);
  return out;
}

// A parsed block's rows as text, strings through their dictionaries, nulls
// as "<null>": what two parses of the same lines must agree on.
std::vector<std::string> Values(const gpucost::io::UsageCsvBlock& block) {
  std::vector<std::string> out;
  for (int64_t row = 0; row < block.rows; ++row) {
    std::string line;
    for (const gpucost::io::UsageCsvColumn& c : block.columns) {
      const auto r = static_cast<size_t>(row);
      if (!c.validity.empty() && ((c.validity[r / 8] >> (r % 8)) & 1) == 0) {
        line += "<null>|";
        continue;
      }
      switch (c.kind) {
        case gpucost::io::UsageCsvKind::kInstant: line += std::to_string(c.instants[r]); break;
        case gpucost::io::UsageCsvKind::kInt32: line += std::to_string(c.ints[r]); break;
        case gpucost::io::UsageCsvKind::kFloat64: line += std::to_string(c.doubles[r]); break;
        case gpucost::io::UsageCsvKind::kString: {
          const auto code = static_cast<size_t>(c.ints[r]);
          Check(code + 1 < c.dictionary_offsets.size(), "a code within the dictionary");
          line += c.dictionary_data.substr(c.dictionary_offsets[code],
                                           c.dictionary_offsets[code + 1] - c.dictionary_offsets[code]);
          break;
        }
      }
      line += "|";
    }
    out.push_back(std::move(line));
  }
  return out;
}

void CheckUsageBlocks(std::string_view text, size_t cut) {
  static const std::vector<std::string> kNames = {"timestamp", "resource_id", "device", "consumer", "share"};
  const absl::StatusOr<gpucost::io::UsageCsvBlock> whole = gpucost::io::ParseUsageCsvBlock(text, kNames, "f", 2);
  const size_t newline = text.find('\n', std::min(cut, text.size()));
  const size_t split = newline == std::string_view::npos ? text.size() : newline + 1;
  const absl::StatusOr<gpucost::io::UsageCsvBlock> first =
      gpucost::io::ParseUsageCsvBlock(text.substr(0, split), kNames, "f", 2);
  const int64_t second_line = first.ok() ? 2 + first->lines : 2;
  const absl::StatusOr<gpucost::io::UsageCsvBlock> second =
      gpucost::io::ParseUsageCsvBlock(text.substr(split), kNames, "f", second_line);
  Check(whole.ok() == (first.ok() && second.ok()), "cutting at a line end changes acceptance");
  if (!whole.ok()) {
    Check(!first.ok() ? whole.status() == first.status() : whole.status() == second.status(),
          "cutting at a line end changes the error");
    return;
  }
  std::vector<std::string> both = Values(*first);
  for (std::string& row : Values(*second)) both.push_back(std::move(row));
  Check(Values(*whole) == both, "cutting at a line end changes the values");
  Check(whole->lines == first->lines + second->lines, "cutting at a line end changes the line count");
}

// The text given to a UsageCsvParser in pieces cut at the line ends after
// `cuts`, each a copy freed once added (ASan finds a value still read from
// it): the same block, or the same error, as one call.
void CheckUsagePieces(std::string_view text, const std::vector<size_t>& cuts) {
  static const std::vector<std::string> kNames = {"timestamp", "resource_id", "device", "consumer", "share"};
  const absl::StatusOr<gpucost::io::UsageCsvBlock> whole = gpucost::io::ParseUsageCsvBlock(text, kNames, "f", 2);
  gpucost::io::UsageCsvParser parser(kNames, "f", 2);
  size_t begin = 0;
  absl::Status added;
  for (size_t cut : cuts) {
    const size_t newline = text.find('\n', std::max(cut, begin));
    if (newline == std::string_view::npos) break;
    auto piece = std::make_unique<std::string>(text.substr(begin, newline + 1 - begin));
    added = parser.Add(*piece);
    begin = newline + 1;
    if (!added.ok()) break;
  }
  if (added.ok()) added = parser.Add(std::string(text.substr(begin)));
  const absl::StatusOr<gpucost::io::UsageCsvBlock> pieces = parser.Finish();
  Check(whole.ok() == pieces.ok(), "parsing in pieces changes acceptance");
  if (!whole.ok()) {
    Check(whole.status() == pieces.status() && whole.status() == added, "parsing in pieces changes the error");
    return;
  }
  Check(Values(*whole) == Values(*pieces), "parsing in pieces changes the values");
  Check(whole->lines == pieces->lines, "parsing in pieces changes the line count");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const char delimiter = in.ConsumeBool() ? ',' : (in.ConsumeBool() ? ';' : '\t');
  std::vector<size_t> cuts;
  const int n = in.ConsumeIntegralInRange<int>(0, 8);
  for (int i = 0; i < n; ++i) cuts.push_back(in.ConsumeIntegralInRange<size_t>(0, 4096));
  std::sort(cuts.begin(), cuts.end());
  const std::string text = in.ConsumeRemainingBytesAsString();

  CheckUsageBlocks(text, cuts.empty() ? 0 : cuts.front());
  CheckUsagePieces(text, cuts);
  const Tokenized whole = Tokenize(text, delimiter, {});
  const Tokenized chunked = Tokenize(text, delimiter, cuts);
  Check(whole.status.ok() == chunked.status.ok(), "chunking changes acceptance");
  if (!whole.status.ok()) {
    Check(whole.status.message() == chunked.status.message(), "chunking changes the error");
    return 0;
  }
  Check(whole.records == chunked.records, "chunking changes the records");
  Check(whole.lines == chunked.lines, "chunking changes the line numbers");
  for (size_t i = 1; i < whole.lines.size(); ++i) Check(whole.lines[i] > whole.lines[i - 1], "lines increase");
  return 0;
}
