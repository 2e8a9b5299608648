// libFuzzer target: kubectl JSON (pods, their GPUs, nodes, resource claims) and provider ids
// (io/kubernetes.h). Every input must give a status, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzzer/FuzzedDataProvider.h"
#include "gpucost/io/kubernetes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const int which = in.ConsumeIntegralInRange<int>(0, 2);
  const std::string text = in.ConsumeRemainingBytesAsString();
  switch (which) {
    case 0: {
      const std::vector<gpucost::LabelKey> keys = gpucost::DefaultLabelKeys();
      (void)gpucost::ParseKubectlPods(text, "pods.json", keys);
      // The same text as pods, nodes and resource claims: one mode, so the
      // existing seeds keep theirs.
      (void)gpucost::ParseKubectlPodGpus(text, "pods.json", text, "nodes.json", text, "claims.json");
      break;
    }
    case 1:
      (void)gpucost::ParseKubectlNodes(text, "nodes.json");
      break;
    default:
      (void)gpucost::ParseProviderId(text, "node-1");
      break;
  }
  return 0;
}
