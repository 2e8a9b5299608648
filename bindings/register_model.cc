// The model's enum spellings, which gpucost.Purchase, Basis, ... are checked
// against (tests/python/test_model.py).
#include <string>
#include <vector>

#include "gpucost/model.h"
#include "pybind11/pybind11.h"
#include "pybind11/stl.h"

namespace py = pybind11;

namespace gpucost::python {

void RegisterModel(py::module_& m) {
  m.def("model_enum_spellings", [] {
    py::dict out;
    for (const EnumSpellings& e : ModelEnumSpellings()) {
      std::vector<std::string> values(e.values.begin(), e.values.end());
      out[py::str(std::string(e.name))] = values;
    }
    return out;
  });
}

}  // namespace gpucost::python
