// File: io/usage.h
//
// Owning usage samples (SEMANTICS 1.3) as the telemetry readers return them;
// `columns()` gives the engine's view.
#ifndef GPUCOST_IO_USAGE_H_
#define GPUCOST_IO_USAGE_H_

#include <cstdint>
#include <vector>

#include "gpucost/columns.h"

namespace gpucost {

struct UsageSamples {
  std::vector<int64_t> timestamp;  // ns since the epoch, UTC
  EncodedStrings resource_id;
  std::vector<int32_t> device;
  EncodedStrings consumer;
  std::vector<double> share, util, mem_used;
  std::vector<int64_t> duration;  // ns

  [[nodiscard]] size_t size() const { return timestamp.size(); }
  [[nodiscard]] SampleColumns columns() const {
    return {.timestamp = timestamp, .resource_id = resource_id.view(), .device = device,
            .consumer = consumer.view(), .share = share, .util = util, .mem_used = mem_used,
            .duration = duration};
  }
};

// A workloads table (SEMANTICS 1.4): consumer plus label columns; a label
// value with code kNullCode is missing.
struct WorkloadTable {
  EncodedStrings consumer;
  std::vector<std::string> label_names;
  std::vector<EncodedStrings> labels;

  [[nodiscard]] size_t size() const { return consumer.codes.size(); }
};

}  // namespace gpucost

#endif  // GPUCOST_IO_USAGE_H_
