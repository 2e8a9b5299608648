// libFuzzer target: user catalog files (instance types and MIG profiles
// CSV, catalog.h). Every input must give a status, never a crash; an
// accepted catalog answers lookups.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzzer/FuzzedDataProvider.h"
#include "gpucost/catalog.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const std::string types = in.ConsumeRandomLengthString(16384);
  const std::string profiles = in.ConsumeRemainingBytesAsString();
  auto catalog = gpucost::Catalog::FromCsv(types, profiles);
  if (catalog.ok()) {
    (void)catalog->FindInstanceType("p4d.24xlarge");
    (void)catalog->MigShare("A100 40GB", "3g.20gb", gpucost::MigBasis::kCompute);
  }
  return 0;
}
