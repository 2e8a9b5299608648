// gpucost._core.IdleStream and gpucost._core.profile_usage: the analyses
// passes over every usage sample. Tables arrive as dicts of numpy arrays
// prepared by python/gpucost/allocation.py; results leave as numpy arrays
// that own the C++ vectors. No logic and no row loops here; the GIL is
// released while the C++ pass runs.
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpucost/analyses/idle.h"
#include "gpucost/analyses/profile.h"
#include "numpy_views.h"
#include "status_to_python.h"
#include "tables.h"

namespace gpucost::python {
namespace {

int64_t Nanos(double seconds) { return std::llround(seconds * 1e9); }

py::list Names(std::vector<std::string>&& names) {
  py::list out;
  for (std::string& n : names) out.append(py::str(n));
  return out;
}

py::dict ToPython(IdleResult&& r) {
  py::dict spans;
  spans["resource"] = MoveToNumpy(std::move(r.spans.resource));
  spans["device"] = MoveToNumpy(std::move(r.spans.device));
  spans["devices"] = MoveToNumpy(std::move(r.spans.devices));
  spans["kind"] = MoveToNumpy(std::move(r.spans.kind));
  spans["start"] = MoveToNumpy(std::move(r.spans.start));
  spans["end"] = MoveToNumpy(std::move(r.spans.end));
  spans["busy_ns"] = MoveToNumpy(std::move(r.spans.busy_ns));
  spans["observed_ns"] = MoveToNumpy(std::move(r.spans.observed_ns));
  py::dict holders;
  holders["span"] = MoveToNumpy(std::move(r.holders.span));
  holders["consumer"] = MoveToNumpy(std::move(r.holders.consumer));
  holders["held_ns"] = MoveToNumpy(std::move(r.holders.held_ns));
  holders["used_ns"] = MoveToNumpy(std::move(r.holders.used_ns));
  py::dict decisions;
  decisions["resource"] = MoveToNumpy(std::move(r.decisions.resource));
  decisions["time"] = MoveToNumpy(std::move(r.decisions.time));
  decisions["decision"] = MoveToNumpy(std::move(r.decisions.decision));
  decisions["window_start"] = MoveToNumpy(std::move(r.decisions.window_start));
  decisions["util"] = MoveToNumpy(std::move(r.decisions.util));
  decisions["until"] = MoveToNumpy(std::move(r.decisions.until));
  const IdleDiagnostics& d = r.diagnostics;
  py::dict diag;
  diag["samples_total"] = d.samples_total;
  diag["samples_no_consumer"] = d.samples_no_consumer;
  diag["samples_unknown_resource"] = d.samples_unknown_resource;
  diag["samples_outside_billing"] = d.samples_outside_billing;
  diag["devices"] = d.devices;
  diag["devices_billed"] = d.devices_billed;
  diag["devices_unobserved"] = d.devices_unobserved;
  py::list kinds, decision_names;
  for (IdleKind k : {IdleKind::kTerminate, IdleKind::kRelease, IdleKind::kRightSize, IdleKind::kExempt,
                     IdleKind::kNoTelemetry}) {
    kinds.append(py::str(std::string(IdleKindName(k))));
  }
  for (PolicyDecision k : {PolicyDecision::kAlert, PolicyDecision::kCancel, PolicyDecision::kTerminate,
                           PolicyDecision::kEnded}) {
    decision_names.append(py::str(std::string(PolicyDecisionName(k))));
  }
  py::dict out;
  out["resource_names"] = Names(std::move(r.resource_names));
  out["resource_devices"] = MoveToNumpy(std::move(r.resource_devices));
  out["consumer_names"] = Names(std::move(r.consumer_names));
  out["spans"] = spans;
  out["holders"] = holders;
  out["decisions"] = decisions;
  out["diagnostics"] = diag;
  out["kind_names"] = kinds;
  out["decision_names"] = decision_names;
  return out;
}

py::dict ToPython(UsageProfile&& p) {
  py::dict out;
  out["consumer_names"] = Names(std::move(p.consumer_names));
  out["resource_names"] = Names(std::move(p.resource_names));
  out["consumer"] = MoveToNumpy(std::move(p.consumer));
  out["resource"] = MoveToNumpy(std::move(p.resource));
  out["device"] = MoveToNumpy(std::move(p.device));
  out["period"] = MoveToNumpy(std::move(p.period));
  out["first"] = MoveToNumpy(std::move(p.first));
  out["last"] = MoveToNumpy(std::move(p.last));
  out["samples"] = MoveToNumpy(std::move(p.samples));
  out["held_ns"] = MoveToNumpy(std::move(p.held_ns));
  out["used_ns"] = MoveToNumpy(std::move(p.used_ns));
  out["mem_byte_ns"] = MoveToNumpy(std::move(p.mem_byte_ns));
  out["mem_peak"] = MoveToNumpy(std::move(p.mem_peak));
  out["mem_capacity"] = MoveToNumpy(std::move(p.mem_capacity));
  out["mem_pressure_ns"] = MoveToNumpy(std::move(p.mem_pressure_ns));
  py::list fields;
  for (size_t f = 0; f < p.field_names.size(); ++f) {
    fields.append(py::make_tuple(p.field_names[f], MoveToNumpy(std::move(p.field_sum[f])),
                                 MoveToNumpy(std::move(p.field_weight[f])), MoveToNumpy(std::move(p.field_max[f]))));
  }
  out["fields"] = fields;
  py::dict diag;
  diag["samples_total"] = p.samples_total;
  diag["samples_no_consumer"] = p.samples_no_consumer;
  diag["samples_unknown_resource"] = p.samples_unknown_resource;
  out["diagnostics"] = diag;
  return out;
}

}  // namespace

void RegisterAnalyses(py::module_& m) {
  py::class_<IdleStream>(m, "IdleStream",
                         R"pbdoc(Idle spans, their holders and the idle policy's decisions over
usage given a chunk at a time, in time order (include/gpucost/analyses/idle.h).
Durations in seconds.)pbdoc")
      .def(py::init([](const py::dict& costs, const py::dict& inventory, const std::vector<std::string>& exempt,
                       double threshold, double window, double resolution, double interval, double grace) {
             IdleOptions options;
             options.threshold = threshold;
             options.window_ns = Nanos(window);
             options.resolution_ns = Nanos(resolution);
             options.interval_seconds = interval;
             options.grace_ns = Nanos(grace);
             CostHolder c(costs);
             InventoryHolder i(inventory);
             std::vector<std::string_view> exempt_views(exempt.begin(), exempt.end());
             std::optional<absl::StatusOr<IdleStream>> stream;
             {
               py::gil_scoped_release release;
               stream.emplace(IdleStream::Create(c.view(), i.view(), exempt_views, options));
             }
             return ValueOrThrow(std::move(*stream));
           }),
           py::arg("costs"), py::arg("inventory"), py::arg("exempt"), py::arg("threshold"), py::arg("window"),
           py::arg("resolution"), py::arg("interval"), py::arg("grace"))
      .def(
          "add",
          [](IdleStream& stream, const py::dict& usage, bool last) {
            SampleHolder s(usage);
            absl::Status status;
            {
              py::gil_scoped_release release;
              status = stream.Add(s.view(), last);
            }
            ThrowIfError(status);
          },
          py::arg("usage"), py::arg("last") = false,
          "Adds a chunk; ``last``: no chunk follows (decides every bin now).")
      .def(
          "finish",
          [](IdleStream& stream) {
            absl::StatusOr<IdleResult> result;
            {
              py::gil_scoped_release release;
              result = std::move(stream).Finish();
            }
            return ToPython(ValueOrThrow(std::move(result)));
          },
          "The result, as dicts of arrays; the stream is spent.");

  m.def(
      "profile_usage",
      [](const py::dict& usage, const py::dict& inventory, const py::list& fields, double interval,
         const std::optional<std::string>& freq, double mem_pressure) {
        ProfileOptions options;
        options.interval_seconds = interval;
        if (freq.has_value()) options.freq = ValueOrThrow(ParsePeriodFreq(*freq));
        options.mem_pressure = mem_pressure;
        SampleHolder s(usage);
        InventoryHolder i(inventory);
        std::vector<std::string> names;
        std::vector<CArray<double>> arrays;
        for (const auto& item : fields) {
          auto pair = item.cast<py::tuple>();
          names.push_back(pair[0].cast<std::string>());
          arrays.push_back(pair[1].cast<CArray<double>>());
        }
        std::vector<ProfileField> views;
        for (size_t f = 0; f < names.size(); ++f) views.push_back({names[f], Span(arrays[f])});
        absl::StatusOr<UsageProfile> result;
        {
          py::gil_scoped_release release;
          result = ProfileUsage(s.view(), i.view(), views, options);
        }
        return ToPython(ValueOrThrow(std::move(result)));
      },
      py::arg("usage"), py::arg("inventory"), py::arg("fields"), py::arg("interval"), py::arg("freq"),
      py::arg("mem_pressure"),
      R"pbdoc(Per (consumer, resource, device, period) statistics of usage samples
(include/gpucost/analyses/profile.h).)pbdoc");
}

}  // namespace gpucost::python
