// numpy <-> engine columns. In: arrays of the engine's dtype and C layout are
// viewed, not copied; any other array is converted once (forcecast). Out:
// result vectors move to the heap and numpy arrays own them through a
// capsule (MoveToNumpy), or arrays view the vectors of a bound result that
// they keep alive (ViewAsNumpy), so no result column is copied either.
#ifndef GPUCOST_BINDINGS_NUMPY_VIEWS_H_
#define GPUCOST_BINDINGS_NUMPY_VIEWS_H_

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpucost/columns.h"
#include "pybind11/numpy.h"
#include "pybind11/pybind11.h"
#include "pybind11/stl.h"

namespace gpucost::python {

namespace py = pybind11;

template <typename T>
using CArray = py::array_t<T, py::array::c_style | py::array::forcecast>;

template <typename T>
std::span<const T> Span(const CArray<T>& a) {
  return {a.data(), static_cast<size_t>(a.size())};
}

// A dictionary-encoded string column handed over from Python as
// (codes, values): codes an int32 array, values a sequence of str.
struct StringColumnHolder {
  CArray<int32_t> codes;
  std::vector<std::string> values;
  std::vector<std::string_view> views;

  [[nodiscard]] StringColumn view() const { return {Span(codes), views}; }
};

inline StringColumnHolder ToStringColumn(const py::handle& pair) {
  auto tuple = py::reinterpret_borrow<py::tuple>(pair);
  StringColumnHolder out;
  out.codes = tuple[0].cast<CArray<int32_t>>();
  out.values = tuple[1].cast<std::vector<std::string>>();
  out.views.assign(out.values.begin(), out.values.end());
  return out;
}

// A column that the caller may leave out (absent or None).
template <typename T>
std::optional<CArray<T>> OptionalArray(const py::dict& table, const char* key) {
  if (!table.contains(key) || table[key].is_none()) return std::nullopt;
  return table[key].cast<CArray<T>>();
}

template <typename T>
std::optional<std::span<const T>> OptionalSpan(const std::optional<CArray<T>>& a) {
  if (!a.has_value()) return std::nullopt;
  return Span(*a);
}

template <typename T>
CArray<T> RequiredArray(const py::dict& table, const char* key) {
  if (!table.contains(key)) throw py::key_error(std::string("internal: missing array ") + key);
  return table[key].cast<CArray<T>>();
}

// Moves `v` into a numpy array that owns it.
template <typename T>
py::array_t<T> MoveToNumpy(std::vector<T>&& v) {
  auto* owned = new std::vector<T>(std::move(v));
  py::capsule owner(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(static_cast<py::ssize_t>(owned->size()), owned->data(), owner);
}

// A numpy array over `v`, not a copy: `owner` is the Python object that
// holds `v` (a bound result), kept alive by the array. Writable, as
// MoveToNumpy's arrays are; every view of `v` shares its memory.
template <typename T>
py::array_t<T> ViewAsNumpy(const std::vector<T>& v, py::handle owner) {
  return py::array_t<T>(static_cast<py::ssize_t>(v.size()), v.data(), owner);
}

// A dictionary-encoded column out: (codes as numpy, values as a list of str).
inline py::tuple EncodedToPython(EncodedStrings&& s) {
  return py::make_tuple(MoveToNumpy(std::move(s.codes)), py::cast(s.values));
}

}  // namespace gpucost::python

#endif  // GPUCOST_BINDINGS_NUMPY_VIEWS_H_
