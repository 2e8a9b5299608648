#include "status_to_python.h"

namespace gpucost::python {

namespace py = pybind11;

void RegisterStatusTranslator() {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      const absl::StatusCode code = e.status().code();
      const bool bad_input = code == absl::StatusCode::kInvalidArgument ||
                             code == absl::StatusCode::kOutOfRange || code == absl::StatusCode::kNotFound;
      py::object errors = py::module_::import("gpucost.errors");
      py::object cls = errors.attr(bad_input ? "InvalidInputError" : "Error");
      PyErr_SetString(cls.ptr(), e.what());
    }
  });
}

}  // namespace gpucost::python
