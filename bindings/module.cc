// The private extension gpucost._core: registration only. Each area binds
// itself in its own register_*.cc.
#include "gpucost/version.h"
#include "pybind11/pybind11.h"
#include "status_to_python.h"

namespace gpucost::python {
void RegisterModel(pybind11::module_& m);
void RegisterAllocate(pybind11::module_& m);
void RegisterCatalog(pybind11::module_& m);
void RegisterTelemetry(pybind11::module_& m);
void RegisterAnalyses(pybind11::module_& m);
void RegisterAdvice(pybind11::module_& m);
void RegisterBilling(pybind11::module_& m);
void RegisterJobs(pybind11::module_& m);
void RegisterOwned(pybind11::module_& m);
void RegisterStrings(pybind11::module_& m);
}  // namespace gpucost::python

PYBIND11_MODULE(_core, m) {
  m.doc() = "gpucost's C++ core (private; use the gpucost package).";
  m.attr("__version__") = GPUCOST_VERSION;  // the package's one version (CMakeLists.txt)
  gpucost::python::RegisterStatusTranslator();
  gpucost::python::RegisterModel(m);
  gpucost::python::RegisterAllocate(m);
  gpucost::python::RegisterCatalog(m);
  gpucost::python::RegisterTelemetry(m);
  gpucost::python::RegisterAnalyses(m);
  gpucost::python::RegisterAdvice(m);
  gpucost::python::RegisterBilling(m);
  gpucost::python::RegisterJobs(m);
  gpucost::python::RegisterOwned(m);
  gpucost::python::RegisterStrings(m);
}
