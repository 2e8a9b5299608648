#include "status_to_python.h"

#include <optional>
#include <string>

#include "gpucost/status.h"

namespace gpucost::python {

namespace py = pybind11;

namespace {

// Text from C++ as str; bytes that are not UTF-8 (a cell of a Latin-1 file
// quoted in a message) become U+FFFD instead of failing the translation.
py::str Text(const char* data, size_t size) {
  PyObject* decoded = PyUnicode_DecodeUTF8(data, static_cast<Py_ssize_t>(size), "replace");
  if (decoded == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(decoded);
}
py::str Text(const std::string& text) { return Text(text.data(), text.size()); }
py::str Message(const absl::Status& status) { return Text(status.message().data(), status.message().size()); }

py::object OrNone(const std::optional<std::string>& value) {
  return value.has_value() ? py::object(Text(*value)) : py::none();
}

py::object OrNone(const std::optional<long long>& value) {
  return value.has_value() ? py::object(py::int_(*value)) : py::none();
}

// InvalidInputError(message, table=..., row=..., ...) with the location the
// error was built with (status.h's GetErrorLocation); without one the
// exception reads it from the message.
py::object InvalidInput(const py::object& cls, const absl::Status& status) {
  const py::str message = Message(status);
  const std::optional<ErrorLocation> at = GetErrorLocation(status);
  if (!at.has_value()) return cls(message);
  return cls(message, py::arg("table") = OrNone(at->table), py::arg("row") = OrNone(at->row),
             py::arg("line") = OrNone(at->line), py::arg("column") = OrNone(at->column),
             py::arg("parameter") = OrNone(at->parameter), py::arg("reason") = Text(at->reason));
}

}  // namespace

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
      py::object exc = bad_input ? InvalidInput(cls, e.status()) : cls(Message(e.status()));
      PyErr_SetObject(cls.ptr(), exc.ptr());
    }
  });
}

}  // namespace gpucost::python
