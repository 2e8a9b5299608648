// gpucost._core.allocate and gpucost._core.Allocator. Tables arrive as dicts
// of numpy arrays prepared by python/gpucost/frames.py; the result leaves as
// one typed object, AllocationResult, whose arrays are views of the engine's
// vectors. No row is touched here, and the GIL is released while the engine
// runs.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpucost/allocate.h"
#include "gpucost/cores.h"
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

// SEMANTICS 9's inputs beside the policy: pue, and a carbon intensity that
// is a number or a table (a dict of columns).
struct EnergyArgs {
  std::optional<double> pue;
  std::optional<double> carbon_intensity;
  std::optional<CarbonHolder> carbon_table;

  EnergyArgs(std::optional<double> pue_, const py::object& carbon) : pue(pue_) {
    if (carbon.is_none()) return;
    if (py::isinstance<py::dict>(carbon)) {
      carbon_table.emplace(carbon.cast<py::dict>());
    } else {
      carbon_intensity = carbon.cast<double>();
    }
  }
  void Apply(AllocationPolicy& policy) const {
    policy.pue = pue;
    policy.carbon_intensity = carbon_intensity;
  }
  [[nodiscard]] std::optional<CarbonIntensityColumns> view() const {
    if (!carbon_table) return std::nullopt;
    return carbon_table->view();
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

// The Python-side streaming allocator keeps its tables alive: the engine
// copies what it needs in Create(), but holding them costs nothing.
class PyAllocator {
 public:
  PyAllocator(const py::dict& costs, const py::dict& inventory, const std::optional<py::dict>& workloads,
              AllocationPolicy policy, const std::optional<py::dict>& downtime, const EnergyArgs& energy) {
    energy.Apply(policy);
    const std::optional<CarbonIntensityColumns> cv = energy.view();
    CostHolder c(costs);
    InventoryHolder i(inventory);
    std::optional<WorkloadHolder> w;
    if (workloads) w.emplace(*workloads);
    std::optional<WorkloadColumns> wv;
    if (w) wv = w->view();
    std::optional<DowntimeHolder> d;
    if (downtime) d.emplace(*downtime);
    std::optional<DowntimeColumns> dv;
    if (d) dv = d->view();
    absl::StatusOr<std::unique_ptr<Allocator>> created;
    {
      py::gil_scoped_release release;
      created = Allocator::Create(c.view(), i.view(), wv ? &*wv : nullptr, policy, dv ? &*dv : nullptr,
                                  cv ? &*cv : nullptr);
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

  bool WentBackInTime() const { return allocator_->WentBackInTime(); }

  Allocation Finish() {
    absl::StatusOr<Allocation> result;
    {
      py::gil_scoped_release release;
      result = allocator_->Finish();
    }
    return ValueOrThrow(std::move(result));
  }

 private:
  std::unique_ptr<Allocator> allocator_;
};

// A numpy view of `Owner::*member`, the owner kept alive by the array.
template <typename Owner, typename T>
void ArrayProperty(py::class_<Owner>& cls, const char* name, std::vector<T> Owner::*member) {
  cls.def_property_readonly(name, [member](const py::object& self) {
    return ViewAsNumpy(self.cast<const Owner&>().*member, self);
  });
}

// A member of a bound result as a bound object that keeps the result alive.
template <typename T>
py::object Member(const T& member, const py::object& owner) {
  return py::cast(&member, py::return_value_policy::reference_internal, owner);
}

// The engine's Allocation as one typed object: it owns the C++ result and
// hands out numpy views of its arrays (no copy; each view keeps it alive).
void RegisterAllocationResult(py::module_& m) {
  py::class_<KeyColumn> key(m, "KeyColumn",
                            "One key column of a result: string codes into a sorted dictionary, period instants "
                            "or cost-line rows.");
  key.def_readonly("name", &KeyColumn::name)
      .def_property_readonly("is_period", &KeyColumn::is_period)
      .def_property_readonly("is_cost_line", &KeyColumn::is_cost_line)
      .def_property_readonly("codes",
                             [](const py::object& self) -> py::object {
                               const auto& k = self.cast<const KeyColumn&>();
                               return k.is_period() || k.is_cost_line() ? py::none()
                                                                         : py::object(ViewAsNumpy(k.codes, self));
                             })
      .def_property_readonly("dictionary",
                             [](const KeyColumn& k) -> py::object {
                               return k.is_period() || k.is_cost_line() ? py::none() : py::cast(k.dictionary);
                             })
      .def_property_readonly(
          "dictionary_buffers",
          [](const KeyColumn& k) -> py::object {
            // Arrow large_string buffers (int64 offsets, UTF-8 bytes): a
            // result of 288,000 pods made 288,000 Python strings, twice.
            if (k.is_period() || k.is_cost_line()) return py::none();
            std::vector<int64_t> offsets(k.dictionary.size() + 1, 0);
            for (size_t i = 0; i < k.dictionary.size(); ++i) {
              offsets[i + 1] = offsets[i] + static_cast<int64_t>(k.dictionary[i].size());
            }
            std::vector<uint8_t> data(static_cast<size_t>(offsets.back()));
            for (size_t i = 0; i < k.dictionary.size(); ++i) {
              std::copy(k.dictionary[i].begin(), k.dictionary[i].end(), data.begin() + offsets[i]);
            }
            return py::make_tuple(MoveToNumpy(std::move(offsets)), MoveToNumpy(std::move(data)));
          },
          "(offsets, data): the dictionary as Arrow large_string buffers, int64 offsets and UTF-8 bytes.")
      .def_property_readonly("period",
                             [](const py::object& self) -> py::object {
                               const auto& k = self.cast<const KeyColumn&>();
                               return k.is_period() ? py::object(ViewAsNumpy(k.period, self)) : py::none();
                             })
      .def_property_readonly("cost_line", [](const py::object& self) -> py::object {
        const auto& k = self.cast<const KeyColumn&>();
        return k.is_cost_line() ? py::object(ViewAsNumpy(k.cost_line, self)) : py::none();
      });

  py::class_<Diagnostics>(m, "Diagnostics", "The engine's counts (SEMANTICS 5).")
      .def_readonly("lines_total", &Diagnostics::lines_total)
      .def_readonly("lines_unattributed", &Diagnostics::lines_unattributed)
      .def_readonly("lines_unobserved", &Diagnostics::lines_unobserved)
      .def_readonly("lines_oversubscribed", &Diagnostics::lines_oversubscribed)
      .def_readonly("lines_primary_overlap", &Diagnostics::lines_primary_overlap)
      .def_readonly("interval_seconds", &Diagnostics::interval_seconds)
      .def_readonly("samples_total", &Diagnostics::samples_total)
      .def_readonly("samples_duplicate", &Diagnostics::samples_duplicate)
      .def_readonly("samples_no_consumer", &Diagnostics::samples_no_consumer)
      .def_readonly("samples_unknown_resource", &Diagnostics::samples_unknown_resource)
      .def_readonly("samples_outside_lines", &Diagnostics::samples_outside_lines)
      .def_readonly("samples_used", &Diagnostics::samples_used)
      .def_readonly("lines_down", &Diagnostics::lines_down)
      .def_readonly("samples_in_downtime", &Diagnostics::samples_in_downtime)
      .def_readonly("samples_without_power", &Diagnostics::samples_without_power)
      .def_readonly("lines_energy_fallback", &Diagnostics::lines_energy_fallback)
      .def_readonly("samples_without_intensity", &Diagnostics::samples_without_intensity);

  py::class_<JoinTable> join(m, "JoinTable",
                             "How the bill and the telemetry joined: one row per (resource_id, currency).");
  join.def_readonly("resource_id", &JoinTable::resource_id).def_readonly("currency", &JoinTable::currency);
  ArrayProperty(join, "in_inventory", &JoinTable::in_inventory);
  ArrayProperty(join, "lines", &JoinTable::lines);
  ArrayProperty(join, "primary_lines", &JoinTable::primary_lines);
  ArrayProperty(join, "lines_primary_overlap", &JoinTable::lines_primary_overlap);
  ArrayProperty(join, "lines_oversubscribed", &JoinTable::lines_oversubscribed);
  ArrayProperty(join, "cost", &JoinTable::cost);
  ArrayProperty(join, "cost_observed", &JoinTable::cost_observed);
  ArrayProperty(join, "cost_unobserved", &JoinTable::cost_unobserved);
  ArrayProperty(join, "cost_unattributed", &JoinTable::cost_unattributed);
  ArrayProperty(join, "billed_gpu_hours", &JoinTable::billed_gpu_hours);
  ArrayProperty(join, "samples", &JoinTable::samples);
  ArrayProperty(join, "samples_no_consumer", &JoinTable::samples_no_consumer);
  ArrayProperty(join, "samples_outside_lines", &JoinTable::samples_outside_lines);
  ArrayProperty(join, "samples_unknown_resource", &JoinTable::samples_unknown_resource);
  ArrayProperty(join, "unjoined_gpu_hours", &JoinTable::unjoined_gpu_hours);
  ArrayProperty(join, "cost_down", &JoinTable::cost_down);
  ArrayProperty(join, "samples_in_downtime", &JoinTable::samples_in_downtime);
  ArrayProperty(join, "lines_start", &JoinTable::lines_start);
  ArrayProperty(join, "lines_end", &JoinTable::lines_end);
  ArrayProperty(join, "samples_start", &JoinTable::samples_start);
  ArrayProperty(join, "samples_end", &JoinTable::samples_end);

  py::class_<Allocation> result(m, "AllocationResult",
                                "The engine's result: key columns, metrics, diagnostics and the join table.");
  result.def_property_readonly("keys", [](const py::object& self) {
    py::list keys;
    for (const KeyColumn& k : self.cast<const Allocation&>().keys) keys.append(Member(k, self));
    return keys;
  });
  ArrayProperty(result, "cost", &Allocation::cost);
  ArrayProperty(result, "idle_cost", &Allocation::idle_cost);
  result.def_property_readonly("list_cost", [](const py::object& self) -> py::object {
    const auto& a = self.cast<const Allocation&>();
    return a.has_list_cost ? py::object(ViewAsNumpy(a.list_cost, self)) : py::none();
  });
  ArrayProperty(result, "gpu_hours", &Allocation::gpu_hours);
  ArrayProperty(result, "effective_gpu_hours", &Allocation::effective_gpu_hours);
  ArrayProperty(result, "mem_gib_hours", &Allocation::mem_gib_hours);
  ArrayProperty(result, "cost_per_effective_gpu_hour", &Allocation::cost_per_effective_gpu_hour);
  // SEMANTICS 9: None when the engine gave no such column.
  for (auto [name, member] : {std::pair{"energy_kwh", &Allocation::energy_kwh},
                              std::pair{"facility_energy_kwh", &Allocation::facility_energy_kwh},
                              std::pair{"co2e_kg", &Allocation::co2e_kg},
                              std::pair{"embodied_co2e_kg", &Allocation::embodied_co2e_kg}}) {
    result.def_property_readonly(name, [member](const py::object& self) -> py::object {
      const auto& column = self.cast<const Allocation&>().*member;
      return column ? py::object(ViewAsNumpy(*column, self)) : py::none();
    });
  }
  result
      .def_property_readonly(
          "diagnostics",
          [](const py::object& self) { return Member(self.cast<const Allocation&>().diagnostics, self); })
      .def_property_readonly("join",
                             [](const py::object& self) { return Member(self.cast<const Allocation&>().join, self); });
}

}  // namespace

void RegisterAllocate(py::module_& m) {
  RegisterAllocationResult(m);
  m.def(
      "allocate",
      [](const py::dict& costs, const py::dict& usage, const py::dict& inventory,
         const std::optional<py::dict>& workloads, const std::string& basis, double alpha,
         const std::string& idle, std::optional<double> interval, std::vector<std::string> by,
         const std::optional<std::string>& freq, int threads, const std::optional<py::dict>& downtime,
         std::optional<double> pue, const py::object& carbon_intensity) {
        AllocationPolicy policy = MakePolicy(basis, alpha, idle, interval, std::move(by), freq, threads);
        const EnergyArgs energy(pue, carbon_intensity);
        energy.Apply(policy);
        const std::optional<CarbonIntensityColumns> cv = energy.view();
        CostHolder c(costs);
        SampleHolder s(usage);
        InventoryHolder i(inventory);
        std::optional<WorkloadHolder> w;
        if (workloads) w.emplace(*workloads);
        std::optional<WorkloadColumns> wv;
        if (w) wv = w->view();
        std::optional<DowntimeHolder> d;
        if (downtime) d.emplace(*downtime);
        std::optional<DowntimeColumns> dv;
        if (d) dv = d->view();
        absl::StatusOr<Allocation> result;
        {
          // Arrays are held above; nothing below touches a Python object.
          py::gil_scoped_release release;
          result = Allocate(c.view(), s.view(), i.view(), wv ? &*wv : nullptr, policy, dv ? &*dv : nullptr,
                            cv ? &*cv : nullptr);
        }
        return ValueOrThrow(std::move(result));
      },
      py::arg("costs"), py::arg("usage"), py::arg("inventory"), py::arg("workloads"), py::arg("basis"),
      py::arg("alpha"), py::arg("idle"), py::arg("interval"), py::arg("by"), py::arg("freq"),
      py::arg("threads") = 0, py::arg("downtime") = py::none(), py::arg("pue") = py::none(),
      py::arg("carbon_intensity") = py::none(),
      R"pbdoc(Allocate cost lines over usage samples (SEMANTICS.md).

Tables are dicts of numpy arrays as built by gpucost.frames; arrays of the
engine's dtype (int64 instants, int32 codes and devices, float64 values) are
read in place, others are converted once. Returns an AllocationResult.)pbdoc");

  py::class_<PyAllocator>(m, "Allocator", "Streaming allocator: samples in chunks of any order.")
      .def(py::init([](const py::dict& costs, const py::dict& inventory, const std::optional<py::dict>& workloads,
                       const std::string& basis, double alpha, const std::string& idle,
                       std::optional<double> interval,
                       std::vector<std::string> by, const std::optional<std::string>& freq, int threads,
                       const std::optional<py::dict>& downtime, std::optional<double> pue,
                       const py::object& carbon_intensity, bool ordered_chunks) {
             AllocationPolicy policy = MakePolicy(basis, alpha, idle, interval, std::move(by), freq, threads);
             policy.ordered_chunks = ordered_chunks;
             return std::make_unique<PyAllocator>(costs, inventory, workloads, std::move(policy), downtime,
                                                  EnergyArgs(pue, carbon_intensity));
           }),
           py::arg("costs"), py::arg("inventory"), py::arg("workloads"), py::arg("basis"), py::arg("alpha"),
           py::arg("idle"), py::arg("interval"), py::arg("by"), py::arg("freq"), py::arg("threads") = 0,
           py::arg("downtime") = py::none(), py::arg("pue") = py::none(), py::arg("carbon_intensity") = py::none(),
           py::arg("ordered_chunks") = false)
      .def("add_samples", &PyAllocator::AddSamples, py::arg("usage"))
      .def("went_back_in_time", &PyAllocator::WentBackInTime)
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

  m.def(
      "available_cores",
      [] {
        py::gil_scoped_release release;
        return AvailableCores();
      },
      "The cores this process may run on: its CPU affinity mask capped by its cgroup CPU limit; at least 1.");
  m.def(
      "cgroup_cpu_limit",
      [](const std::string& root, const std::string& proc) {
        py::gil_scoped_release release;
        return CgroupCpuLimit(root, proc);
      },
      py::arg("root") = "/sys/fs/cgroup", py::arg("proc") = "/proc/self/cgroup",
      "The tightest CPU limit of this process's cgroups, whole CPUs rounded up; None when there is none.");

  // For tests: the address the engine would read for `a` as a float64 or
  // int64 column, to prove matching arrays are not copied.
  m.def("_float64_address", [](const CArray<double>& a) { return reinterpret_cast<uintptr_t>(a.data()); });
  m.def("_int64_address", [](const CArray<int64_t>& a) { return reinterpret_cast<uintptr_t>(a.data()); });
  m.def("_int32_address", [](const CArray<int32_t>& a) { return reinterpret_cast<uintptr_t>(a.data()); });
}

}  // namespace gpucost::python
