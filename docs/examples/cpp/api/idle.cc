// gpucost/analyses/idle.h by example: idle spans and the idle-termination
// policy on a node whose GPUs go quiet (run by ctest as cpp_example_idle).
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "example_check.h"
#include "gpucost/analyses/idle.h"
#include "gpucost/columns.h"

int main() {
  // i-1 (2 GPUs) billed 00:00-06:00. Job "train" holds GPU 0 all along,
  // busy for 2 hours then idle; GPU 1 is free and idle throughout. Samples
  // every 10 minutes.
  constexpr int64_t kMin = 60 * gpucost::kNanosPerSecond;
  const int64_t t0 = 0;
  std::vector<std::string_view> res_rows, who_rows;
  std::vector<int64_t> ts;
  std::vector<int32_t> device;
  std::vector<double> share, util, mem;
  for (int64_t t = t0; t < t0 + 6 * gpucost::kNanosPerHour; t += 10 * kMin) {
    for (int32_t d : {0, 1}) {
      res_rows.push_back("i-1");
      who_rows.push_back(d == 0 ? "train" : "");
      ts.push_back(t);
      device.push_back(d);
      share.push_back(1);
      util.push_back(d == 0 && t < t0 + 2 * gpucost::kNanosPerHour ? 0.9 : 0.0);
      mem.push_back(0);
    }
  }
  const std::vector<std::string_view> one = {"i-1"}, two = {"i-1", "i-1"};
  const gpucost::EncodedStrings resource = gpucost::EncodeStrings(std::span<const std::string_view>(one));
  const gpucost::EncodedStrings inv_resource = gpucost::EncodeStrings(std::span<const std::string_view>(two));
  const gpucost::EncodedStrings sample_resource = gpucost::EncodeStrings(std::span<const std::string_view>(res_rows));
  const gpucost::EncodedStrings consumer = gpucost::EncodeStrings(std::span<const std::string_view>(who_rows));
  const std::vector<int64_t> start = {t0}, end = {t0 + 6 * gpucost::kNanosPerHour};
  const std::vector<double> cost = {60.0}, capacity = {80e9, 80e9};
  const std::vector<int32_t> devices = {0, 1};
  const gpucost::CostColumns costs{.resource_id = resource.view(), .start = start, .end = end, .cost = cost};
  const gpucost::InventoryColumns inventory{.resource_id = inv_resource.view(), .device = devices,
                                            .mem_capacity = capacity};
  const gpucost::SampleColumns samples{.timestamp = ts, .resource_id = sample_resource.view(), .device = device,
                                       .consumer = consumer.view(), .share = share, .util = util, .mem_used = mem};

  // [FindIdle]
  // Idle below 5 % over 2-hour windows, on a 1-minute grid; samples stand
  // for 10 minutes.
  gpucost::IdleOptions options;
  options.interval_seconds = 600;
  absl::StatusOr<gpucost::IdleResult> idle = gpucost::FindIdle(costs, samples, inventory, /*exempt=*/{}, options);
  CHECK_OK(idle);
  const gpucost::IdleSpans& spans = idle->spans;
  CHECK(idle->resource_names == std::vector<std::string>{"i-1"} && idle->resource_devices[0] == 2);
  for (size_t i = 0; i < spans.size(); ++i) {
    std::printf("%s device %d: %s, %.1f h\n", idle->resource_names[spans.resource[i]].c_str(), spans.device[i],
                std::string(gpucost::IdleKindName(static_cast<gpucost::IdleKind>(spans.kind[i]))).c_str(),
                static_cast<double>(spans.end[i] - spans.start[i]) / gpucost::kNanosPerHour);
  }
  // Idle GPU 0 held by "train": release it; idle free GPU 1 next to a held one: right-size.
  bool release = false, right_size = false;
  for (size_t i = 0; i < spans.size(); ++i) {
    release |= spans.kind[i] == static_cast<int8_t>(gpucost::IdleKind::kRelease) && spans.device[i] == 0;
    right_size |= spans.kind[i] == static_cast<int8_t>(gpucost::IdleKind::kRightSize) && spans.device[i] == 1;
  }
  CHECK(release && right_size);
  const gpucost::IdleHolders& holders = idle->holders;
  CHECK(holders.size() >= 1 && idle->consumer_names[holders.consumer[0]] == "train");
  const gpucost::IdleDiagnostics& diagnostics = idle->diagnostics;
  CHECK(diagnostics.devices == 2 && diagnostics.devices_billed == 2 && diagnostics.samples_no_consumer == 36);
  // [FindIdle]

  // [PolicyDecisions]
  // The policy replayed: the node idle from 02:00 gives an alert once its
  // mean over the window is below 5 % (03:48 here, the edges trimmed) and a
  // terminate recommendation after the 30-minute grace, unless "train" is
  // exempt (an active job waiting on data).
  const gpucost::PolicyDecisions& decisions = idle->decisions;
  bool terminate = false;
  for (size_t i = 0; i < decisions.size(); ++i) {
    const auto decision = static_cast<gpucost::PolicyDecision>(decisions.decision[i]);
    std::printf("%s at %.1f h\n", std::string(gpucost::PolicyDecisionName(decision)).c_str(),
                static_cast<double>(decisions.time[i]) / gpucost::kNanosPerHour);
    terminate |= decision == gpucost::PolicyDecision::kTerminate;
  }
  CHECK(terminate);
  const std::vector<std::string_view> exempt = {"train"};
  absl::StatusOr<gpucost::IdleResult> exempted = gpucost::FindIdle(costs, samples, inventory, exempt, options);
  CHECK_OK(exempted);
  for (size_t i = 0; i < exempted->decisions.size(); ++i)
    CHECK(exempted->decisions.decision[i] != static_cast<int8_t>(gpucost::PolicyDecision::kTerminate));
  // [PolicyDecisions]

  // [IdleStream]
  // The same samples a chunk at a time (a day each, in a month's run), in
  // time order: the first three hours, then the last three. Bins are
  // decided as no later chunk can reach them; the spans are FindIdle's.
  const size_t half = ts.size() / 2;  // the rows before 03:00
  auto rows = [&](size_t from, size_t to) {
    return gpucost::SampleColumns{
        .timestamp = std::span<const int64_t>(ts).subspan(from, to - from),
        .resource_id = {std::span<const int32_t>(sample_resource.codes).subspan(from, to - from),
                        sample_resource.value_views},
        .device = std::span<const int32_t>(device).subspan(from, to - from),
        .consumer = {std::span<const int32_t>(consumer.codes).subspan(from, to - from), consumer.value_views},
        .share = std::span<const double>(share).subspan(from, to - from),
        .util = std::span<const double>(util).subspan(from, to - from),
        .mem_used = std::span<const double>(mem).subspan(from, to - from)};
  };
  absl::StatusOr<gpucost::IdleStream> stream = gpucost::IdleStream::Create(costs, inventory, /*exempt=*/{}, options);
  CHECK_OK(stream);
  CHECK_OK(stream->Add(rows(0, half)));
  CHECK_OK(stream->Add(rows(half, ts.size())));
  absl::StatusOr<gpucost::IdleResult> streamed = std::move(*stream).Finish();
  CHECK_OK(streamed);
  CHECK(streamed->spans.start == spans.start && streamed->spans.end == spans.end &&
        streamed->spans.kind == spans.kind && streamed->decisions.time == decisions.time);
  // A chunk that goes back in time is refused, naming its row.
  absl::StatusOr<gpucost::IdleStream> backwards = gpucost::IdleStream::Create(costs, inventory, {}, options);
  CHECK_OK(backwards);
  CHECK_OK(backwards->Add(rows(half, ts.size())));
  CHECK(!backwards->Add(rows(0, half)).ok());
  // [IdleStream]
  return 0;
}
