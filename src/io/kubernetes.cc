// Kubernetes dumps and kube-state-metrics series -> workloads and nodes.
#include "gpucost/io/kubernetes.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gpucost/io/csv.h"
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
  if (out.provider == ToString(Provider::kAzure)) {
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
  WorkloadTable out = builder.Finish(keys);
  for (size_t p = 0; p < s.size(); ++p) {
    const PromSeries& series = s.series[s.series_id[p]];
    if (!series.name.empty() && series.name != "kube_pod_labels") continue;
    const int64_t t = s.timestamp_ns[p];
    out.first_ns = out.first_ns == INT64_MIN ? t : std::min(out.first_ns, t);
    out.last_ns = std::max(out.last_ns, t);
  }
  return out;
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

namespace {

// What one unit of a GPU resource is, before node labels: kind and share.
struct GpuResource {
  std::string_view kind;
  double share;
  bool shared;  // a time-sliced replica (".shared"): share / replicas
};

// "1g.10gb", "3g.40gb+me", "1c.3g.40gb" -> g / 7 (g / 4 on an A30, whose
// slices have 6 GB each); NaN when it is not a MIG profile.
double MigShare(std::string_view profile) {
  const size_t g = profile.find("g.");
  if (g == std::string_view::npos || g == 0) return std::nan("");
  size_t begin = g;
  while (begin > 0 && profile[begin - 1] >= '0' && profile[begin - 1] <= '9') --begin;
  size_t end = g + 2;
  while (end < profile.size() && profile[end] >= '0' && profile[end] <= '9') ++end;
  int slices = 0, memory = 0;
  if (!absl::SimpleAtoi(A(profile.substr(begin, g - begin)), &slices) ||
      !absl::SimpleAtoi(A(profile.substr(g + 2, end - g - 2)), &memory) || slices <= 0 ||
      profile.substr(end, 2) != "gb") {
    return std::nan("");
  }
  if (slices > 7) return std::nan("");  // no GPU has more slices (and 6 * slices cannot overflow)
  const int per_gpu = memory == 6 * slices ? 4 : 7;
  if (slices > per_gpu) return std::nan("");
  return static_cast<double>(slices) / per_gpu;
}

std::optional<GpuResource> ClassifyResource(std::string_view name) {
  if (name == "nvidia.com/gpu" || name == "amd.com/gpu") return GpuResource{"device-plugin", 1.0, false};
  if (name == "nvidia.com/gpu.shared") return GpuResource{"time-slicing", 1.0, true};
  if (absl::StartsWith(A(name), "nvidia.com/mig-")) {
    std::string_view profile = name.substr(15);
    const bool shared = absl::EndsWith(A(profile), ".shared");
    if (shared) profile.remove_suffix(7);
    return GpuResource{shared ? "time-slicing" : "mig", MigShare(profile), shared};
  }
  return std::nullopt;
}

// A resource quantity of an extended resource: a whole number.
bool ParseUnits(simdjson::dom::element value, double* out) {
  std::string_view text;
  int64_t n = 0;
  if (value.get_string().get(text) == simdjson::SUCCESS) {
    if (!absl::SimpleAtoi(A(text), &n) || n < 0) return false;
  } else if (value.get_int64().get(n) != simdjson::SUCCESS || n < 0) {
    return false;
  }
  *out = static_cast<double>(n);
  return true;
}

struct NodeGpuLabels {
  int replicas = 1;
  bool mig_single = false;
  double single_share = std::nan("");
};

}  // namespace

absl::StatusOr<PodGpuTable> ParseKubectlPodGpus(std::string_view pods_json, std::string_view source,
                                                std::string_view nodes_json, std::string_view nodes_source,
                                                std::string_view claims_json, std::string_view claims_source) {
  // Node labels of the NVIDIA GPU operator (GPU feature discovery).
  absl::flat_hash_map<std::string, NodeGpuLabels> node_labels;
  if (!nodes_json.empty()) {
    simdjson::dom::parser parser;
    GPUCOST_ASSIGN_OR_RETURN(simdjson::dom::array items, Items(parser, nodes_json, nodes_source, "nodes"));
    size_t row = 0;
    for (simdjson::dom::element item : items) {
      const std::string_view name = StringAt(item["metadata"], "name");
      if (name.empty()) return RowError(nodes_source, static_cast<long long>(row), "metadata.name", "missing");
      auto labels = item["metadata"]["labels"];
      NodeGpuLabels& out = node_labels[std::string(name)];
      const std::string_view replicas = StringAt(labels, "nvidia.com/gpu.replicas");
      if (!replicas.empty() && (!absl::SimpleAtoi(A(replicas), &out.replicas) || out.replicas < 1)) {
        return RowError(nodes_source, static_cast<long long>(row), "metadata.labels.nvidia.com/gpu.replicas",
                        absl::StrCat("'", A(replicas), "' is not a replica count"));
      }
      if (StringAt(labels, "nvidia.com/mig.strategy") == "single") {
        out.mig_single = true;
        const std::string_view product = StringAt(labels, "nvidia.com/gpu.product");
        const size_t mig = product.rfind("-MIG-");
        if (mig != std::string_view::npos) out.single_share = MigShare(product.substr(mig + 5));
      }
      ++row;
    }
  }
  // ResourceClaims: namespace/name -> allocated devices and how many pods share them.
  struct Claim {
    std::vector<std::string> devices;
    int consumers = 0;
  };
  absl::flat_hash_map<std::string, Claim> claims;
  if (!claims_json.empty()) {
    simdjson::dom::parser parser;
    GPUCOST_ASSIGN_OR_RETURN(simdjson::dom::array items, Items(parser, claims_json, claims_source, "resourceclaims"));
    for (simdjson::dom::element item : items) {
      Claim claim;
      simdjson::dom::array results, reserved;
      if (item["status"]["allocation"]["devices"]["results"].get_array().get(results) == simdjson::SUCCESS) {
        for (simdjson::dom::element r : results) {
          claim.devices.push_back(absl::StrCat(A(StringAt(r, "driver")), "/", A(StringAt(r, "pool")), "/",
                                               A(StringAt(r, "device"))));
        }
      }
      if (item["status"]["reservedFor"].get_array().get(reserved) == simdjson::SUCCESS) {
        claim.consumers = static_cast<int>(reserved.size());
      }
      claims[absl::StrCat(A(StringAt(item["metadata"], "namespace")), "/", A(StringAt(item["metadata"], "name")))] =
          std::move(claim);
    }
  }

  simdjson::dom::parser parser;
  GPUCOST_ASSIGN_OR_RETURN(simdjson::dom::array items, Items(parser, pods_json, source, "pods"));
  PodGpuTable out;
  StringEncoder consumer, node_col, resource, kind, claim_col, device;
  size_t row = 0;
  for (simdjson::dom::element item : items) {
    const long long r = static_cast<long long>(row++);
    const std::string_view ns = StringAt(item["metadata"], "namespace"), name = StringAt(item["metadata"], "name");
    if (ns.empty() || name.empty()) {
      return RowError(source, r, ns.empty() ? "metadata.namespace" : "metadata.name", "missing");
    }
    const std::string pod = absl::StrCat(A(ns), "/", A(name));
    const std::string_view node = StringAt(item["spec"], "nodeName");
    const NodeGpuLabels* labels = nullptr;
    if (auto it = node_labels.find(A(node)); it != node_labels.end()) labels = &it->second;

    // Effective units per resource: max(app + restartable init, each init).
    std::vector<std::pair<std::string, double>> running, init_max;
    std::vector<std::string> claim_refs;  // pod-level claim names the containers use
    auto add = [](std::vector<std::pair<std::string, double>>& v, std::string_view key, double n, bool sum) {
      for (auto& [k, x] : v) {
        if (k == key) {
          x = sum ? x + n : std::max(x, n);
          return;
        }
      }
      v.emplace_back(std::string(key), n);
    };
    for (const char* list : {"containers", "initContainers"}) {
      const bool init = std::string_view(list) == "initContainers";
      simdjson::dom::array containers;
      if (item["spec"][list].get_array().get(containers) != simdjson::SUCCESS) continue;
      for (simdjson::dom::element c : containers) {
        const bool sidecar = init && StringAt(c, "restartPolicy") == "Always";
        // Extended resources have limits (requests, when given, equal them).
        simdjson::dom::object limits;
        const bool any = c["resources"]["limits"].get_object().get(limits) == simdjson::SUCCESS ||
                         c["resources"]["requests"].get_object().get(limits) == simdjson::SUCCESS;
        if (any) {
          for (auto field : limits) {
            if (!ClassifyResource(field.key).has_value()) continue;
            double n = 0;
            if (!ParseUnits(field.value, &n)) {
              return RowError(source, r,
                              absl::StrCat("spec.", list, "[", A(StringAt(c, "name")), "].resources.limits.",
                                           A(field.key)),
                              "not a whole number of devices");
            }
            if (init && !sidecar) add(init_max, field.key, n, false);
            else add(running, field.key, n, true);
          }
        }
        simdjson::dom::array refs;
        if (c["resources"]["claims"].get_array().get(refs) == simdjson::SUCCESS) {
          for (simdjson::dom::element ref : refs) {
            const std::string_view claim_name = StringAt(ref, "name");
            if (std::find(claim_refs.begin(), claim_refs.end(), claim_name) == claim_refs.end()) {
              claim_refs.emplace_back(claim_name);
            }
          }
        }
      }
    }
    for (const auto& [k, n] : init_max) add(running, k, n, false);

    // Times: start, and the end of a finished pod.
    int64_t start = kUnknownInstant, end = kUnknownInstant;
    const std::string_view started = StringAt(item["status"], "startTime");
    if (!started.empty() && !io::ParseInstant(started, &start)) {
      return RowError(source, r, "status.startTime", absl::StrCat("'", A(started), "' is not an RFC 3339 time"));
    }
    const std::string_view phase = StringAt(item["status"], "phase");
    if (phase == "Succeeded" || phase == "Failed") {
      for (const char* list : {"containerStatuses", "initContainerStatuses"}) {
        simdjson::dom::array statuses;
        if (item["status"][list].get_array().get(statuses) != simdjson::SUCCESS) continue;
        for (simdjson::dom::element st : statuses) {
          const std::string_view finished = StringAt(st["state"]["terminated"], "finishedAt");
          int64_t t = 0;
          if (finished.empty()) continue;
          if (!io::ParseInstant(finished, &t)) {
            return RowError(source, r, absl::StrCat("status.", list, ".state.terminated.finishedAt"),
                            absl::StrCat("'", A(finished), "' is not an RFC 3339 time"));
          }
          end = std::max(end, t);
        }
      }
    }

    auto emit = [&](std::string_view res, std::string_view k, double count, double share, std::string_view claim,
                    std::string_view dev) {
      consumer.Add(pod);
      node_col.AddOrNull(node);
      resource.Add(res);
      kind.Add(k);
      claim_col.AddOrNull(claim);
      device.AddOrNull(dev);
      out.count.push_back(count);
      out.share.push_back(share);
      out.start.push_back(start);
      out.end.push_back(end);
    };
    size_t rows_before = out.count.size();
    for (const auto& [res, n] : running) {
      if (n <= 0) continue;
      GpuResource g = *ClassifyResource(res);
      std::string_view k = g.kind;
      double share = g.share;
      if (labels != nullptr && labels->mig_single && res == "nvidia.com/gpu") {
        k = "mig";  // the single strategy names MIG slices nvidia.com/gpu
        share = labels->single_share;
      }
      if (g.shared || (res == "nvidia.com/gpu" && labels != nullptr && labels->replicas > 1)) {
        k = "time-slicing";
        share = labels != nullptr ? share / labels->replicas : std::nan("");
      }
      emit(res, k, n, share, {}, {});
    }
    // DRA: the pod's claims (spec.resourceClaims) its containers use, named
    // by the ResourceClaim object (spec, or status for a template's claim).
    simdjson::dom::array pod_claims;
    if (!claim_refs.empty() && item["spec"]["resourceClaims"].get_array().get(pod_claims) == simdjson::SUCCESS) {
      for (simdjson::dom::element pc : pod_claims) {
        const std::string_view local = StringAt(pc, "name");
        if (std::find(claim_refs.begin(), claim_refs.end(), local) == claim_refs.end()) continue;
        std::string_view object = StringAt(pc, "resourceClaimName");
        simdjson::dom::array statuses;
        if (object.empty() && item["status"]["resourceClaimStatuses"].get_array().get(statuses) == simdjson::SUCCESS) {
          for (simdjson::dom::element st : statuses) {
            if (StringAt(st, "name") == local) object = StringAt(st, "resourceClaimName");
          }
        }
        const std::string label = object.empty() ? std::string(local) : std::string(object);
        auto it = object.empty() ? claims.end() : claims.find(absl::StrCat(A(ns), "/", A(object)));
        if (it == claims.end() || it->second.devices.empty()) {
          emit("dra", "dra", std::nan(""), std::nan(""), label, {});  // devices not known from the pod
          continue;
        }
        const double share = 1.0 / std::max(1, it->second.consumers);
        for (const std::string& dev : it->second.devices) {
          // A MIG device through DRA: its fraction is not in the claim.
          const bool mig = absl::StrContains(absl::AsciiStrToLower(dev), "mig");
          emit("dra", "dra", 1.0, mig ? std::nan("") : share, label, dev);
        }
      }
    }
    if (out.count.size() == rows_before) ++out.pods_without_gpus;
  }
  out.consumer = consumer.Finish();
  out.node = node_col.Finish();
  out.resource = resource.Finish();
  out.kind = kind.Finish();
  out.claim = claim_col.Finish();
  out.device = device.Finish();
  return out;
}

}  // namespace gpucost
