// gpucost/io/kubernetes.h by example: workloads and nodes from kubectl dumps
// and from kube-state-metrics series (run by ctest as cpp_example_kubernetes).
#include <string>
#include <string_view>
#include <vector>

#include "example_check.h"
#include "gpucost/io/kubernetes.h"
#include "gpucost/io/prometheus.h"

namespace {
std::string_view Value(const gpucost::EncodedStrings& column, size_t row) {
  return column.codes[row] == gpucost::kNullCode ? "<null>" : std::string_view(column.values[column.codes[row]]);
}
}  // namespace

int main() {
  // [DefaultLabelKeys]
  // Which pod labels become workload columns: team <- team-id, ...
  std::vector<gpucost::LabelKey> keys = gpucost::DefaultLabelKeys();
  CHECK(keys.size() == 4);
  keys.push_back(gpucost::LabelKey{.column = "app", .key = "app.kubernetes.io/name"});
  CHECK(gpucost::KubeStateMetricsLabel("team-id") == "label_team_id");
  CHECK(gpucost::KubeStateMetricsLabel("app.kubernetes.io/name") == "label_app_kubernetes_io_name");
  // [DefaultLabelKeys]

  // [ParseKubectlPods]
  // `kubectl get pods -A -o json` -> one workload per pod, "namespace/pod".
  const std::string_view pods =
      R"({"items":[{"metadata":{"namespace":"ml","name":"train-0","labels":{"team-id":"vision"}},)"
      R"("spec":{"nodeName":"node-1","containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"2"}}}]},)"
      R"("status":{"startTime":"2025-03-01T10:00:00Z"}},)"
      R"({"metadata":{"namespace":"web","name":"api-0"},"spec":{"nodeName":"node-1","containers":[{"name":"c"}]}}]})";
  absl::StatusOr<gpucost::WorkloadTable> workloads = gpucost::ParseKubectlPods(pods, "pods.json", keys);
  CHECK_OK(workloads);
  CHECK(workloads->size() == 2 && Value(workloads->consumer, 0) == "ml/train-0");
  CHECK(workloads->label_names[1] == "team" && Value(workloads->labels[1], 0) == "vision");
  CHECK(Value(workloads->labels[1], 1) == "<null>");
  // [ParseKubectlPods]

  // [ParseKubectlPodGpus]
  // The GPUs each pod holds (its effective request and the share of a GPU a
  // unit is); pods without GPUs are counted.
  absl::StatusOr<gpucost::PodGpuTable> gpus = gpucost::ParseKubectlPodGpus(pods, "pods.json", "", "", "", "");
  CHECK_OK(gpus);
  CHECK(gpus->size() == 1 && gpus->count[0] == 2 && gpus->share[0] == 1 && gpus->pods_without_gpus == 1);
  CHECK(Value(gpus->kind, 0) == "device-plugin" && gpus->end[0] == gpucost::kUnknownInstant);
  // [ParseKubectlPodGpus]

  // [ParseProviderId]
  // spec.providerID -> the id the bill names the instance by.
  absl::StatusOr<gpucost::ProviderId> aws = gpucost::ParseProviderId("aws:///us-west-2a/i-0abc", "node-1");
  CHECK_OK(aws);
  CHECK(aws->resource_id == "i-0abc" && aws->provider == "aws" && aws->zone == "us-west-2a");
  CHECK(gpucost::ParseProviderId("gce://proj/us-central1-a/vm-1", "n")->resource_id ==
        "projects/proj/zones/us-central1-a/instances/vm-1");
  CHECK(gpucost::ParseProviderId("", "dgx-1")->resource_id == "dgx-1");  // bare metal
  // [ParseProviderId]

  // [ParseKubectlNodes]
  // `kubectl get nodes -o json` -> node name -> resource id (the nodes table
  // DcgmToUsage takes), provider, zone, instance type.
  const std::string_view nodes =
      R"({"items":[{"metadata":{"name":"node-1","labels":{"node.kubernetes.io/instance-type":"g5.12xlarge"}},)"
      R"("spec":{"providerID":"aws:///us-west-2a/i-0abc"}}]})";
  absl::StatusOr<gpucost::NodeTable> table = gpucost::ParseKubectlNodes(nodes, "nodes.json");
  CHECK_OK(table);
  CHECK(table->size() == 1 && Value(table->resource_id, 0) == "i-0abc" && Value(table->instance_type, 0) == "g5.12xlarge");
  // [ParseKubectlNodes]

  // [WorkloadsFromKubePodLabels]
  // The same through Prometheus: kube_pod_labels and kube_node_info series.
  const std::string_view ksm =
      R"({"status":"success","data":{"resultType":"matrix","result":[)"
      R"({"metric":{"__name__":"kube_pod_labels","namespace":"ml","pod":"train-0","label_team_id":"vision"},)"
      R"("values":[[1740823200,"1"],[1740826800,"1"]]},)"
      R"({"metric":{"__name__":"kube_node_info","node":"node-1","provider_id":"aws:///us-west-2a/i-0abc"},)"
      R"("values":[[1740823200,"1"]]}]}})";
  absl::StatusOr<gpucost::PromSamples> series = gpucost::ParseQueryRange(ksm, "ksm");
  CHECK_OK(series);
  absl::StatusOr<gpucost::WorkloadTable> labelled = gpucost::WorkloadsFromKubePodLabels(*series, keys);
  CHECK_OK(labelled);
  CHECK(labelled->size() == 1 && Value(labelled->labels[1], 0) == "vision");
  CHECK(labelled->last_ns - labelled->first_ns == gpucost::kNanosPerHour);  // the label history's span
  absl::StatusOr<gpucost::NodeTable> from_info = gpucost::NodesFromKubeNodeInfo(*series);
  CHECK_OK(from_info);
  CHECK(from_info->size() == 1 && Value(from_info->resource_id, 0) == "i-0abc");
  // [WorkloadsFromKubePodLabels]
  return 0;
}
