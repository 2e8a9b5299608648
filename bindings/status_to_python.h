// absl::Status -> Python exception. Bad-input codes become
// gpucost.InvalidInputError (a ValueError), everything else gpucost.Error
// (a RuntimeError); the message is kept intact.
#ifndef GPUCOST_BINDINGS_STATUS_TO_PYTHON_H_
#define GPUCOST_BINDINGS_STATUS_TO_PYTHON_H_

#include <stdexcept>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pybind11/pybind11.h"

namespace gpucost::python {

class StatusError : public std::runtime_error {
 public:
  explicit StatusError(absl::Status status)
      : std::runtime_error(std::string(status.message())), status_(std::move(status)) {}
  [[nodiscard]] const absl::Status& status() const { return status_; }

 private:
  absl::Status status_;
};

inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) throw StatusError(status);
}

template <typename T>
T ValueOrThrow(absl::StatusOr<T> result) {
  ThrowIfError(result.status());
  return std::move(result).value();
}

// Registers the translator; call once from PYBIND11_MODULE.
void RegisterStatusTranslator();

}  // namespace gpucost::python

#endif  // GPUCOST_BINDINGS_STATUS_TO_PYTHON_H_
