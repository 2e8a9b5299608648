// libFuzzer target: nvidia-smi CSV (GPUs and compute apps), dmon/pmon logs, sacct
// --parsable2 (shards and MPS included), Slurm host lists, TRES/GRES cells and
// node events (sacctmgr show event -P) (io/hosts.h). Every input must give a
// status, never a crash; accepted nvidia-smi tables become usage samples.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzzer/FuzzedDataProvider.h"
#include "gpucost/io/hosts.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const int which = in.ConsumeIntegralInRange<int>(0, 4);  // 4 (dmon/pmon) added last: older seeds keep their mode
  const char* tz = in.ConsumeBool() ? "UTC" : "Europe/Paris";
  const std::string text = in.ConsumeRemainingBytesAsString();
  switch (which) {
    case 0: {
      auto gpus = gpucost::ParseNvidiaSmiGpus(text, "gpu.csv", tz);
      if (gpus.ok()) {
        gpucost::NvidiaSmiOptions options{.resource_id = "i-1"};
        (void)gpucost::NvidiaSmiToUsage(*gpus, nullptr, options);
      }
      break;
    }
    case 1:
      (void)gpucost::ParseNvidiaSmiApps(text, "apps.csv", tz);
      break;
    case 2: {
      gpucost::SacctOptions options;
      options.tz = tz;
      options.now_ns = 1'772'323'200'000'000'000;  // 2026-03-01
      options.shards_per_gpu = {{"*", 4}};
      options.node_gpus = {{"gpu01", 8}};
      (void)gpucost::ParseSacct(text, "sacct.txt", options);
      break;
    }
    case 4: {
      auto mon = gpucost::ParseNvidiaSmiMon(text, "mon.log", tz);
      if (mon.ok()) {
        gpucost::NvidiaSmiOptions options{.resource_id = "i-1"};
        (void)gpucost::NvidiaSmiToUsage(mon->gpus, mon->pmon ? &mon->apps : nullptr, options);
      }
      break;
    }
    default:
      (void)gpucost::ExpandHostList(text);
      (void)gpucost::ParseLocalTime(text, tz);
      (void)gpucost::ParseSlurmGres(text);
      (void)gpucost::ParseSlurmEvents(text, "events.txt",
                                      gpucost::SlurmEventsOptions{.tz = tz, .now_ns = 1'772'323'200'000'000'000});
      break;
  }
  return 0;
}
