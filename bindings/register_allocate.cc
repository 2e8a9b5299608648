// gpucost._core.allocate and gpucost._core.Allocator. Tables arrive as dicts
// of numpy arrays prepared by python/gpucost/frames.py; no row is touched
// here, and the GIL is released while the engine runs.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpucost/allocate.h"
#include "numpy_views.h"
#include "status_to_python.h"
#include "tables.h"

namespace gpucost::python {
namespace {

struct WorkloadHolder {
  StringColumnHolder consumer;
  std::vector<std::string> names;
  std::vector<StringColumnHolder> labels;

  explicit WorkloadHolder(const py::dict& t) : consumer(ToStringColumn(t["consumer"])) {
    for (const auto& item : t["labels"].cast<py::list>()) {
      auto pair = item.cast<py::tuple>();
      names.push_back(pair[0].cast<std::string>());
      labels.push_back(ToStringColumn(pair[1]));
    }
  }
  [[nodiscard]] WorkloadColumns view() const {
    WorkloadColumns out{consumer.view(), {}};
    for (size_t i = 0; i < labels.size(); ++i) out.labels.push_back({names[i], labels[i].view()});
    return out;
  }
};

AllocationPolicy MakePolicy(const std::string& basis, double alpha, const std::string& idle,
                            std::optional<double> interval, std::vector<std::string> by,
                            const std::optional<std::string>& freq, int threads) {
  AllocationPolicy policy;
  policy.basis = ValueOrThrow(ParseBasis(basis));
  policy.alpha = alpha;
  policy.idle = ValueOrThrow(ParseIdleMode(idle));
  policy.interval_seconds = interval;
  policy.by = std::move(by);
  if (freq.has_value()) policy.freq = ValueOrThrow(ParsePeriodFreq(*freq));
  policy.threads = threads;
  return policy;
}

py::dict ToPython(Allocation&& a) {
  py::dict out;
  py::list keys;
  for (KeyColumn& key : a.keys) {
    if (key.is_period()) {
      keys.append(py::make_tuple(key.name, MoveToNumpy(std::move(key.period)), py::none()));
    } else {
      keys.append(py::make_tuple(key.name, MoveToNumpy(std::move(key.codes)), py::cast(key.dictionary)));
    }
  }
  out["keys"] = keys;
  out["cost"] = MoveToNumpy(std::move(a.cost));
  out["idle_cost"] = MoveToNumpy(std::move(a.idle_cost));
  out["list_cost"] = a.has_list_cost ? py::object(MoveToNumpy(std::move(a.list_cost))) : py::none();
  out["gpu_hours"] = MoveToNumpy(std::move(a.gpu_hours));
  out["effective_gpu_hours"] = MoveToNumpy(std::move(a.effective_gpu_hours));
  out["mem_gib_hours"] = MoveToNumpy(std::move(a.mem_gib_hours));
  out["cost_per_effective_gpu_hour"] = MoveToNumpy(std::move(a.cost_per_effective_gpu_hour));
  const Diagnostics& d = a.diagnostics;
  py::dict diag;
  diag["lines_total"] = d.lines_total;
  diag["lines_unattributed"] = d.lines_unattributed;
  diag["lines_unobserved"] = d.lines_unobserved;
  diag["lines_oversubscribed"] = d.lines_oversubscribed;
  diag["lines_primary_overlap"] = d.lines_primary_overlap;
  diag["interval"] = d.interval_seconds ? py::object(py::float_(*d.interval_seconds)) : py::none();
  diag["samples_total"] = d.samples_total;
  diag["samples_duplicate"] = d.samples_duplicate;
  diag["samples_no_consumer"] = d.samples_no_consumer;
  diag["samples_unknown_resource"] = d.samples_unknown_resource;
  diag["samples_outside_lines"] = d.samples_outside_lines;
  diag["samples_used"] = d.samples_used;
  out["diagnostics"] = diag;
  JoinTable& j = a.join;
  py::dict join;
  join["resource_id"] = py::cast(j.resource_id);
  join["currency"] = py::cast(j.currency);
  join["in_inventory"] = MoveToNumpy(std::move(j.in_inventory));
  join["lines"] = MoveToNumpy(std::move(j.lines));
  join["primary_lines"] = MoveToNumpy(std::move(j.primary_lines));
  join["lines_primary_overlap"] = MoveToNumpy(std::move(j.lines_primary_overlap));
  join["lines_oversubscribed"] = MoveToNumpy(std::move(j.lines_oversubscribed));
  join["cost"] = MoveToNumpy(std::move(j.cost));
  join["cost_observed"] = MoveToNumpy(std::move(j.cost_observed));
  join["cost_unobserved"] = MoveToNumpy(std::move(j.cost_unobserved));
  join["cost_unattributed"] = MoveToNumpy(std::move(j.cost_unattributed));
  join["billed_gpu_hours"] = MoveToNumpy(std::move(j.billed_gpu_hours));
  join["samples"] = MoveToNumpy(std::move(j.samples));
  join["samples_no_consumer"] = MoveToNumpy(std::move(j.samples_no_consumer));
  join["samples_outside_lines"] = MoveToNumpy(std::move(j.samples_outside_lines));
  join["samples_unknown_resource"] = MoveToNumpy(std::move(j.samples_unknown_resource));
  join["unjoined_gpu_hours"] = MoveToNumpy(std::move(j.unjoined_gpu_hours));
  join["lines_start"] = MoveToNumpy(std::move(j.lines_start));
  join["lines_end"] = MoveToNumpy(std::move(j.lines_end));
  join["samples_start"] = MoveToNumpy(std::move(j.samples_start));
  join["samples_end"] = MoveToNumpy(std::move(j.samples_end));
  out["join"] = join;
  return out;
}

// The Python-side streaming allocator keeps its tables alive: the engine
// copies what it needs in Create(), but holding them costs nothing.
class PyAllocator {
 public:
  PyAllocator(const py::dict& costs, const py::dict& inventory, const std::optional<py::dict>& workloads,
              const AllocationPolicy& policy) {
    CostHolder c(costs);
    InventoryHolder i(inventory);
    std::optional<WorkloadHolder> w;
    if (workloads) w.emplace(*workloads);
    std::optional<WorkloadColumns> wv;
    if (w) wv = w->view();
    absl::StatusOr<std::unique_ptr<Allocator>> created;
    {
      py::gil_scoped_release release;
      created = Allocator::Create(c.view(), i.view(), wv ? &*wv : nullptr, policy);
    }
    allocator_ = ValueOrThrow(std::move(created));
  }

  void AddSamples(const py::dict& usage) {
    SampleHolder s(usage);
    absl::Status status;
    {
      py::gil_scoped_release release;
      status = allocator_->AddSamples(s.view());
    }
    ThrowIfError(status);
  }

  py::dict Finish() {
    absl::StatusOr<Allocation> result;
    {
      py::gil_scoped_release release;
      result = allocator_->Finish();
    }
    return ToPython(ValueOrThrow(std::move(result)));
  }

 private:
  std::unique_ptr<Allocator> allocator_;
};

}  // namespace

void RegisterAllocate(py::module_& m) {
  m.def(
      "allocate",
      [](const py::dict& costs, const py::dict& usage, const py::dict& inventory,
         const std::optional<py::dict>& workloads, const std::string& basis, double alpha,
         const std::string& idle, std::optional<double> interval, std::vector<std::string> by,
         const std::optional<std::string>& freq, int threads) {
        const AllocationPolicy policy = MakePolicy(basis, alpha, idle, interval, std::move(by), freq, threads);
        CostHolder c(costs);
        SampleHolder s(usage);
        InventoryHolder i(inventory);
        std::optional<WorkloadHolder> w;
        if (workloads) w.emplace(*workloads);
        std::optional<WorkloadColumns> wv;
        if (w) wv = w->view();
        absl::StatusOr<Allocation> result;
        {
          // Arrays are held above; nothing below touches a Python object.
          py::gil_scoped_release release;
          result = Allocate(c.view(), s.view(), i.view(), wv ? &*wv : nullptr, policy);
        }
        return ToPython(ValueOrThrow(std::move(result)));
      },
      py::arg("costs"), py::arg("usage"), py::arg("inventory"), py::arg("workloads"), py::arg("basis"),
      py::arg("alpha"), py::arg("idle"), py::arg("interval"), py::arg("by"), py::arg("freq"),
      py::arg("threads") = 0,
      R"pbdoc(Allocate cost lines over usage samples (SEMANTICS.md).

Tables are dicts of numpy arrays as built by gpucost.frames; arrays of the
engine's dtype (int64 instants, int32 codes and devices, float64 values) are
read in place, others are converted once. Returns a dict of result arrays.)pbdoc");

  py::class_<PyAllocator>(m, "Allocator", "Streaming allocator: samples in chunks of any order.")
      .def(py::init([](const py::dict& costs, const py::dict& inventory, const std::optional<py::dict>& workloads,
                       const std::string& basis, double alpha, const std::string& idle,
                       std::optional<double> interval,
                       std::vector<std::string> by, const std::optional<std::string>& freq, int threads) {
             return std::make_unique<PyAllocator>(
                 costs, inventory, workloads, MakePolicy(basis, alpha, idle, interval, std::move(by), freq, threads));
           }),
           py::arg("costs"), py::arg("inventory"), py::arg("workloads"), py::arg("basis"), py::arg("alpha"),
           py::arg("idle"), py::arg("interval"), py::arg("by"), py::arg("freq"), py::arg("threads") = 0)
      .def("add_samples", &PyAllocator::AddSamples, py::arg("usage"))
      .def("finish", &PyAllocator::Finish);

  m.def(
      "series_spacings",
      [](const py::dict& usage) {
        SampleHolder s(usage);
        std::vector<double> spacings;
        {
          py::gil_scoped_release release;
          spacings = SeriesSpacings(s.view());
        }
        return MoveToNumpy(std::move(spacings));
      },
      py::arg("usage"), "Spacing in seconds of every series of the usage columns that has one (SEMANTICS 1.3).");
  m.def(
      "infer_interval", [](std::vector<double> spacings) { return InferInterval(std::move(spacings)); },
      py::arg("spacings"), "The interval inferred from series spacings: their median, 60 when there is none.");

  // For tests: the address the engine would read for `a` as a float64 or
  // int64 column, to prove matching arrays are not copied.
  m.def("_float64_address", [](const CArray<double>& a) { return reinterpret_cast<uintptr_t>(a.data()); });
  m.def("_int64_address", [](const CArray<int64_t>& a) { return reinterpret_cast<uintptr_t>(a.data()); });
  m.def("_int32_address", [](const CArray<int32_t>& a) { return reinterpret_cast<uintptr_t>(a.data()); });
}

}  // namespace gpucost::python
