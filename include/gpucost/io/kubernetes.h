// File: io/kubernetes.h
//
// Workload labels and node -> instance mapping from Kubernetes:
// `kubectl get pods -o json` / `kubectl get nodes -o json` dumps, and the
// kube-state-metrics series `kube_pod_labels` / `kube_node_info` read
// through Prometheus (ParseQueryRange).
//
// Workloads (SEMANTICS 1.4): consumer "namespace/pod" plus one column per
// LabelKey. Nodes: node name -> resource id (the cloud instance id taken
// from spec.providerID), provider, zone, instance type.
//
// Example:
//   std::vector<gpucost::LabelKey> keys = gpucost::DefaultLabelKeys();
//   GPUCOST_ASSIGN_OR_RETURN(auto workloads, gpucost::ParseKubectlPods(json, "pods.json", keys));
//   GPUCOST_ASSIGN_OR_RETURN(auto nodes, gpucost::ParseKubectlNodes(json2, "nodes.json"));
#ifndef GPUCOST_IO_KUBERNETES_H_
#define GPUCOST_IO_KUBERNETES_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gpucost/columns.h"
#include "gpucost/io/prometheus.h"
#include "gpucost/io/usage.h"

namespace gpucost {

// A workloads column and the Kubernetes label key it is read from.
struct LabelKey {
  std::string column;  // "team"
  std::string key;     // "team-id"
};
// project <- project-id, team <- team-id, user <- user-id, job <- job-id.
[[nodiscard]] std::vector<LabelKey> DefaultLabelKeys();

// kube-state-metrics' spelling of a label key: "team-id" -> "label_team_id".
[[nodiscard]] std::string KubeStateMetricsLabel(std::string_view key);

// instance_id: GKE's numeric instance id (annotation
// container.googleapis.com/instance_id), "" elsewhere.
struct NodeTable {
  EncodedStrings node, resource_id, provider, zone, instance_type, instance_id;
  [[nodiscard]] size_t size() const { return node.codes.size(); }
};

// The cloud resource id in a node's spec.providerID:
//   aws:///us-east-1a/i-0abc        -> i-0abc           (provider aws, zone us-east-1a)
//   gce://project/us-central1-a/vm1 -> projects/project/zones/us-central1-a/instances/vm1
//                                      (provider gce; as the GCP bill readers name a VM)
//   azure:///subscriptions/.../virtualMachines/vm1 -> /subscriptions/.../virtualmachines/vm1
//                                      (lower case, as the Azure bill reader writes ARM ids;
//                                       VMSS instances .../virtualMachineScaleSets/S/virtualMachines/N alike)
//   other://a/b/c                   -> c
// An empty providerID (bare metal) gives the node name.
struct ProviderId {
  std::string resource_id, provider, zone;
};
[[nodiscard]] absl::StatusOr<ProviderId> ParseProviderId(std::string_view provider_id, std::string_view node);

[[nodiscard]] absl::StatusOr<WorkloadTable> ParseKubectlPods(std::string_view json, std::string_view source,
                                                             std::span<const LabelKey> keys);
// The GPUs each pod holds, from `kubectl get pods -A -o json` (docs/telemetry.md,
// "GPU holdings"): one row per pod and GPU resource, with the fraction of one
// physical GPU a unit of it is (SEMANTICS 1.2 `share`):
//   nvidia.com/gpu, amd.com/gpu        kind "device-plugin", share 1 (a node
//                                      labelled nvidia.com/gpu.replicas=R > 1
//                                      time-slices them: "time-slicing", 1/R;
//                                      nvidia.com/mig.strategy=single: "mig",
//                                      from the nvidia.com/gpu.product suffix)
//   nvidia.com/mig-<g>g.<m>gb[...]     kind "mig", g/7 (g/4 on an A30: m = 6 g)
//   nvidia.com/gpu.shared (and a MIG   kind "time-slicing", share / R with R
//   resource ending ".shared")         from the node's nvidia.com/gpu.replicas
//   a DRA claim (spec.resourceClaims)  kind "dra", one row per allocated device
//                                      of the ResourceClaim (claims dump),
//                                      share 1 / the pods it is reserved for
// `count` is the pod's effective request (max of the app containers' and
// restartable init containers' sum and any one init container's), `share`
// NaN where the dumps do not say (no node labels for replicas, no claims dump,
// a MIG device through DRA). start/end: status.startTime and, for a finished
// pod, its last container's finishedAt; kUnknownInstant when not known.
inline constexpr int64_t kUnknownInstant = INT64_MIN;
struct PodGpuTable {
  EncodedStrings consumer, node, resource, kind, claim, device;
  std::vector<double> count, share;
  std::vector<int64_t> start, end;
  int64_t pods_without_gpus = 0;
  [[nodiscard]] size_t size() const { return count.size(); }
};
// nodes_json / claims_json: `kubectl get nodes -o json` and `kubectl get
// resourceclaims -A -o json`; empty when not given.
[[nodiscard]] absl::StatusOr<PodGpuTable> ParseKubectlPodGpus(std::string_view pods_json, std::string_view source,
                                                              std::string_view nodes_json,
                                                              std::string_view nodes_source,
                                                              std::string_view claims_json,
                                                              std::string_view claims_source);

// Two nodes naming one instance are an error naming both.
[[nodiscard]] absl::StatusOr<NodeTable> ParseKubectlNodes(std::string_view json, std::string_view source);

// From kube_pod_labels series (labels namespace, pod, label_*). A pod seen
// with different labels over time keeps those of its latest point.
[[nodiscard]] absl::StatusOr<WorkloadTable> WorkloadsFromKubePodLabels(const PromSamples& series,
                                                                       std::span<const LabelKey> keys);
// From kube_node_info series (labels node, provider_id). A node's instance
// type is not in kube_node_info; it stays empty.
[[nodiscard]] absl::StatusOr<NodeTable> NodesFromKubeNodeInfo(const PromSamples& series);

}  // namespace gpucost

#endif  // GPUCOST_IO_KUBERNETES_H_
