// libFuzzer target: the streaming RFC 4180 tokenizer and the field parsers
// every billing reader shares (io/csv.h).
//
// The input is fed twice, whole and in random chunks: both must give the
// same records (or the same error), and every field goes through
// ParseDouble, ParseInstant and ParseUsDate, whose accepted instants must be
// floorable.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "fuzzer/FuzzedDataProvider.h"
#include "gpucost/io/csv.h"

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const char delimiter = in.ConsumeBool() ? ',' : (in.ConsumeBool() ? ';' : '\t');
  std::vector<size_t> cuts;
  const int n = in.ConsumeIntegralInRange<int>(0, 8);
  for (int i = 0; i < n; ++i) cuts.push_back(in.ConsumeIntegralInRange<size_t>(0, 4096));
  std::sort(cuts.begin(), cuts.end());
  const std::string text = in.ConsumeRemainingBytesAsString();

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
