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
