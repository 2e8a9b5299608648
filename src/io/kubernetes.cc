// Kubernetes dumps and kube-state-metrics series -> workloads and nodes.
#include "gpucost/io/kubernetes.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gpucost/status.h"
#include "simdjson.h"

namespace gpucost {
namespace {

absl::string_view A(std::string_view s) { return {s.data(), s.size()}; }

absl::StatusOr<simdjson::dom::array> Items(simdjson::dom::parser& parser, std::string_view json,
                                           std::string_view source, std::string_view kind) {
  simdjson::dom::element doc;
  if (auto e = parser.parse(json.data(), json.size(), true).get(doc); e) {
    return TableError(source, absl::StrCat("not valid JSON (", simdjson::error_message(e), ")"));
  }
  simdjson::dom::array items;
  if (doc["items"].get_array().get(items) != simdjson::SUCCESS) {
    return TableError(source, absl::StrCat("not a `kubectl get ", A(kind),
                                           " -o json` list (no \"items\" array)"));
  }
  return items;
}

// The string at `key`, or "" when the parent or the key is missing.
std::string_view StringAt(simdjson::simdjson_result<simdjson::dom::element> e, std::string_view key) {
  std::string_view v;
  if (e[key].get_string().get(v) != simdjson::SUCCESS) return {};
  return v;
}
std::string_view StringAt(simdjson::dom::element e, std::string_view key) {
  std::string_view v;
  if (e[key].get_string().get(v) != simdjson::SUCCESS) return {};
  return v;
}

// Keeps rows in first-seen order; a later row for the same consumer replaces
// the earlier one when `newer` says so.
struct WorkloadBuilder {
  std::vector<std::string> consumers;
  std::vector<std::vector<std::optional<std::string>>> values;
  std::vector<int64_t> seen_at;
  absl::flat_hash_map<std::string, size_t> index;

  void Put(std::string consumer, std::vector<std::optional<std::string>> row, int64_t at) {
    auto [it, inserted] = index.try_emplace(consumer, consumers.size());
    if (inserted) {
      consumers.push_back(std::move(consumer));
      values.push_back(std::move(row));
      seen_at.push_back(at);
    } else if (at >= seen_at[it->second]) {
      values[it->second] = std::move(row);
      seen_at[it->second] = at;
    }
  }
  WorkloadTable Finish(std::span<const LabelKey> keys) {
    WorkloadTable out;
    StringEncoder c;
    std::vector<StringEncoder> labels(keys.size());
    for (size_t i = 0; i < consumers.size(); ++i) {
      c.Add(consumers[i]);
      for (size_t k = 0; k < keys.size(); ++k) {
        if (values[i][k].has_value()) labels[k].Add(*values[i][k]);
        else labels[k].AddNull();
      }
    }
    out.consumer = c.Finish();
    for (size_t k = 0; k < keys.size(); ++k) {
      out.label_names.push_back(keys[k].column);
      out.labels.push_back(labels[k].Finish());
    }
    return out;
  }
};

absl::Status CheckKeys(std::span<const LabelKey> keys) {
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].column.empty() || keys[i].key.empty()) {
      return ParameterError("labels", "empty column name or label key");
    }
    if (keys[i].column == "consumer") return ParameterError("labels", "'consumer' cannot be a label column");
    for (size_t j = 0; j < i; ++j) {
      if (keys[j].column == keys[i].column) {
        return ParameterError("labels", absl::StrCat("column '", keys[i].column, "' given twice"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<LabelKey> DefaultLabelKeys() {
  return {{"project", "project-id"}, {"team", "team-id"}, {"user", "user-id"}, {"job", "job-id"}};
}

std::string KubeStateMetricsLabel(std::string_view key) {
  std::string out = "label_";
  for (char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out.push_back(ok ? c : '_');
  }
  return out;
}

absl::StatusOr<ProviderId> ParseProviderId(std::string_view provider_id, std::string_view node) {
  ProviderId out;
  if (provider_id.empty()) {
    out.resource_id = std::string(node);
    return out;
  }
  const size_t scheme_end = provider_id.find("://");
  if (scheme_end == std::string_view::npos || scheme_end == 0) {
    return absl::InvalidArgumentError(absl::StrCat("node '", A(node), "': providerID '", A(provider_id),
                                                   "' is not of the form <provider>://<id>"));
  }
  out.provider = std::string(provider_id.substr(0, scheme_end));
  std::string_view rest = provider_id.substr(scheme_end + 3);
  if (out.provider == "azure") {
    // The ARM id, in lower case as the bill readers write it (ARM ids are
    // case-insensitive; AKS and the cost exports spell them differently).
    while (rest.size() > 1 && rest[0] == '/' && rest[1] == '/') rest.remove_prefix(1);
    out.resource_id = absl::AsciiStrToLower(A(rest));
  } else if (out.provider == "gce") {
    // gce://PROJECT/ZONE/NAME -> projects/PROJECT/zones/ZONE/instances/NAME,
    // the instance as the GCP bill readers name it.
    std::vector<absl::string_view> parts = absl::StrSplit(A(rest), '/');
    if (parts.size() != 3 || parts[0].empty() || parts[1].empty() || parts[2].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("node '", A(node), "': providerID '", A(provider_id),
                                                     "' is not of the form gce://PROJECT/ZONE/NAME"));
    }
    out.resource_id = absl::StrCat("projects/", parts[0], "/zones/", parts[1], "/instances/", parts[2]);
    out.zone = std::string(parts[1]);
  } else {
    std::vector<std::string_view> parts;
    size_t start = 0;
    while (start <= rest.size()) {
      size_t slash = rest.find('/', start);
      if (slash == std::string_view::npos) slash = rest.size();
      if (slash > start) parts.push_back(rest.substr(start, slash - start));
      start = slash + 1;
    }
    if (parts.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("node '", A(node), "': providerID '", A(provider_id),
                                                     "' names no instance"));
    }
    out.resource_id = std::string(parts.back());
    if (parts.size() >= 2) out.zone = std::string(parts[parts.size() - 2]);
  }
  if (out.resource_id.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("node '", A(node), "': providerID '", A(provider_id),
                                                   "' names no instance"));
  }
  return out;
}

absl::StatusOr<WorkloadTable> ParseKubectlPods(std::string_view json, std::string_view source,
                                               std::span<const LabelKey> keys) {
  GPUCOST_RETURN_IF_ERROR(CheckKeys(keys));
  simdjson::dom::parser parser;
  GPUCOST_ASSIGN_OR_RETURN(simdjson::dom::array items, Items(parser, json, source, "pods"));
  WorkloadBuilder builder;
  size_t row = 0;
  for (simdjson::dom::element item : items) {
    simdjson::dom::element meta;
    if (item["metadata"].get(meta) != simdjson::SUCCESS) {
      return RowError(source, static_cast<long long>(row), "metadata", "missing");
    }
    const std::string_view ns = StringAt(meta, "namespace"), name = StringAt(meta, "name");
    if (ns.empty() || name.empty()) {
      return RowError(source, static_cast<long long>(row), ns.empty() ? "metadata.namespace" : "metadata.name",
                      "missing");
    }
    std::vector<std::optional<std::string>> values(keys.size());
    simdjson::dom::object labels;
    if (meta["labels"].get_object().get(labels) == simdjson::SUCCESS) {
      for (size_t k = 0; k < keys.size(); ++k) {
        std::string_view v;
        if (labels[keys[k].key].get_string().get(v) == simdjson::SUCCESS) values[k] = std::string(v);
      }
    }
    builder.Put(absl::StrCat(A(ns), "/", A(name)), std::move(values), static_cast<int64_t>(row));
    ++row;
  }
  return builder.Finish(keys);
}

absl::StatusOr<NodeTable> ParseKubectlNodes(std::string_view json, std::string_view source) {
  simdjson::dom::parser parser;
  GPUCOST_ASSIGN_OR_RETURN(simdjson::dom::array items, Items(parser, json, source, "nodes"));
  NodeTable out;
  StringEncoder node, resource, provider, zone, type, instance_id;
  absl::flat_hash_map<std::string, std::string> node_of_resource;
  size_t row = 0;
  for (simdjson::dom::element item : items) {
    const std::string_view name = StringAt(item["metadata"], "name");
    if (name.empty()) return RowError(source, static_cast<long long>(row), "metadata.name", "missing");
    const std::string_view pid = StringAt(item["spec"], "providerID");
    absl::StatusOr<ProviderId> parsed = ParseProviderId(pid, name);
    if (!parsed.ok()) return RowError(source, static_cast<long long>(row), "spec.providerID", std::string(parsed.status().message()));
    auto labels = item["metadata"]["labels"];
    std::string_view itype = StringAt(labels, "node.kubernetes.io/instance-type");
    if (itype.empty()) itype = StringAt(labels, "beta.kubernetes.io/instance-type");
    std::string_view z = StringAt(labels, "topology.kubernetes.io/zone");
    // Two nodes on one instance would each be given its GPUs and its bill.
    auto [it, inserted] = node_of_resource.try_emplace(parsed->resource_id, std::string(name));
    if (!inserted && it->second != name) {
      return RowError(source, static_cast<long long>(row), "spec.providerID",
                      absl::StrCat("nodes '", it->second, "' and '", A(name), "' name the same instance '",
                                   parsed->resource_id, "'"));
    }
    // GKE writes the instance's numeric id (the bill's global_name) here.
    instance_id.Add(StringAt(item["metadata"]["annotations"], "container.googleapis.com/instance_id"));
    node.Add(name);
    resource.Add(parsed->resource_id);
    provider.Add(parsed->provider);
    zone.Add(z.empty() ? std::string_view(parsed->zone) : z);
    type.Add(itype);
    ++row;
  }
  out.node = node.Finish();
  out.resource_id = resource.Finish();
  out.provider = provider.Finish();
  out.zone = zone.Finish();
  out.instance_type = type.Finish();
  out.instance_id = instance_id.Finish();
  return out;
}

absl::StatusOr<WorkloadTable> WorkloadsFromKubePodLabels(const PromSamples& s, std::span<const LabelKey> keys) {
  GPUCOST_RETURN_IF_ERROR(CheckKeys(keys));
  std::vector<std::string> ksm_keys;
  for (const LabelKey& k : keys) ksm_keys.push_back(KubeStateMetricsLabel(k.key));
  // Latest point per series.
  std::vector<int64_t> latest(s.series.size(), INT64_MIN);
  for (size_t p = 0; p < s.size(); ++p) {
    latest[s.series_id[p]] = std::max(latest[s.series_id[p]], s.timestamp_ns[p]);
  }
  WorkloadBuilder builder;
  for (size_t i = 0; i < s.series.size(); ++i) {
    const PromSeries& series = s.series[i];
    if (!series.name.empty() && series.name != "kube_pod_labels") continue;
    const std::string_view ns = series.Label("exported_namespace").value_or(series.Label("namespace").value_or(""));
    const std::string_view pod = series.Label("exported_pod").value_or(series.Label("pod").value_or(""));
    if (ns.empty() || pod.empty()) {
      return TableError(s.sources[series.source],
                        absl::StrCat("series ", series.ToString(), ": no namespace or pod label"));
    }
    std::vector<std::optional<std::string>> values(keys.size());
    for (size_t k = 0; k < keys.size(); ++k) {
      if (auto v = series.Label(ksm_keys[k]); v.has_value() && !v->empty()) values[k] = std::string(*v);
    }
    builder.Put(absl::StrCat(A(ns), "/", A(pod)), std::move(values), latest[i]);
  }
  return builder.Finish(keys);
}

absl::StatusOr<NodeTable> NodesFromKubeNodeInfo(const PromSamples& s) {
  NodeTable out;
  StringEncoder node, resource, provider, zone, type;
  StringEncoder instance_id;
  absl::flat_hash_map<std::string, std::string> seen;
  for (const PromSeries& series : s.series) {
    if (!series.name.empty() && series.name != "kube_node_info") continue;
    const std::string_view name = series.Label("node").value_or("");
    if (name.empty()) {
      return TableError(s.sources[series.source], absl::StrCat("series ", series.ToString(), ": no node label"));
    }
    absl::StatusOr<ProviderId> parsed = ParseProviderId(series.Label("provider_id").value_or(""), name);
    if (!parsed.ok()) {
      return TableError(s.sources[series.source], absl::StrCat("series ", series.ToString(), ": ", parsed.status().message()));
    }
    auto [it, inserted] = seen.try_emplace(std::string(name), parsed->resource_id);
    if (!inserted) {
      if (it->second != parsed->resource_id) {
        return TableError(s.sources[series.source],
                          absl::StrCat("node '", A(name), "' has two provider ids ('", it->second, "' and '",
                                       parsed->resource_id, "'): the name was reused; split the time range"));
      }
      continue;
    }
    node.Add(name);
    resource.Add(parsed->resource_id);
    provider.Add(parsed->provider);
    zone.Add(parsed->zone);
    type.Add("");
    instance_id.Add("");
  }
  out.node = node.Finish();
  out.resource_id = resource.Finish();
  out.provider = provider.Finish();
  out.zone = zone.Finish();
  out.instance_type = type.Finish();
  out.instance_id = instance_id.Finish();
  return out;
}

}  // namespace gpucost
