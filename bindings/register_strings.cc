// Arrow string columns (pyarrow, pandas "str", Polars) dictionary-encoded in
// C++ without the GIL, for gpucost/frames.py. Telemetry strings come in runs
// (a series' rows, a node's scrape), so each row is first compared with the
// row before it, and only a new value is looked up; a row that is neither
// costs one hash lookup in a table of the column's distinct values.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "numpy_views.h"
#include "pybind11/pybind11.h"
#include "pybind11/stl.h"

namespace py = pybind11;

namespace gpucost::python {
namespace {

// One Arrow string array: offsets (int32, or int64 for large_string) into
// one data buffer, or 16-byte views (string_view, as Polars holds strings:
// a length, then the bytes inline up to 12, else a prefix, a buffer index
// and an offset into that buffer); an optional validity bitmap; and the
// array's own offset into them (a slice).
struct StringChunk {
  const int32_t* offsets32 = nullptr;
  const int64_t* offsets64 = nullptr;
  const char* data = nullptr;
  const uint8_t* views = nullptr;
  std::vector<const char*> view_buffers;
  const uint8_t* validity = nullptr;
  int64_t offset = 0;
  int64_t length = 0;

  [[nodiscard]] bool Valid(int64_t i) const {
    const int64_t k = offset + i;
    return validity == nullptr || ((validity[k >> 3] >> (k & 7)) & 1) != 0;
  }
  [[nodiscard]] std::string_view At(int64_t i) const {
    const int64_t k = offset + i;
    if (views != nullptr) {
      const uint8_t* view = views + 16 * k;
      int32_t size = 0, buffer = 0, at = 0;
      std::memcpy(&size, view, 4);
      if (size <= 12) return {reinterpret_cast<const char*>(view + 4), static_cast<size_t>(size)};
      std::memcpy(&buffer, view + 8, 4);
      std::memcpy(&at, view + 12, 4);
      return {view_buffers[static_cast<size_t>(buffer)] + at, static_cast<size_t>(size)};
    }
    const int64_t lo = offsets32 != nullptr ? offsets32[k] : offsets64[k];
    const int64_t hi = offsets32 != nullptr ? offsets32[k + 1] : offsets64[k + 1];
    return {data + lo, static_cast<size_t>(hi - lo)};
  }
};

// The distinct values of a range of rows, first seen first, as views into
// the Arrow buffers (alive for the whole call).
struct LocalDictionary {
  absl::flat_hash_map<std::string_view, int32_t> index;
  std::vector<std::string_view> values;
};

// Up to 8 bytes of `p` as an integer (zero-padded).
inline uint64_t Word(const char* p, size_t n) {
  uint64_t w = 0;
  std::memcpy(&w, p, std::min<size_t>(n, 8));
  return w;
}

// Whether a and b (both n bytes) are equal: 8-byte words, the last one
// overlapping, instead of a call to memcmp (ids and pod names are short).
inline bool SameBytes(const char* a, const char* b, size_t n) {
  if (n < 8) return std::memcmp(a, b, n) == 0;
  for (size_t k = 0; k + 8 < n; k += 8) {
    if (Word(a + k, 8) != Word(b + k, 8)) return false;
  }
  return Word(a + n - 8, 8) == Word(b + n - 8, 8);
}

// Recent values by a cheap hash of their first and last bytes (direct
// mapped): rows out of runs (a node's pods, one after another) mostly find
// their code here, without the hash table's full hash.
class RecentValues {
 public:
  static constexpr int kBits = 14;
  // The slot of `v`, and whether it holds v.
  int32_t* Find(std::string_view v, bool& hit) {
    const size_t n = v.size();
    const uint64_t head = n >= 8 ? Word(v.data(), 8) : Word(v.data(), n);
    const uint64_t tail = n >= 8 ? Word(v.data() + n - 8, 8) : 0;
    const uint64_t h = ((head * 0x9E3779B97F4A7C15ULL) ^ (tail * 0xC2B2AE3D27D4EB4FULL) ^ n) * 0x9E3779B97F4A7C15ULL;
    Entry& e = entries_[h >> (64 - kBits)];
    hit = e.code >= 0 && e.size == v.size() && SameBytes(e.data, v.data(), v.size());
    last_ = &e;
    return &e.code;
  }
  void Put(std::string_view v, int32_t code) {
    *last_ = {v.data(), static_cast<uint32_t>(v.size()), code};
  }

 private:
  struct Entry {
    const char* data = nullptr;
    uint32_t size = 0;
    int32_t code = -1;
  };
  std::vector<Entry> entries_ = std::vector<Entry>(size_t{1} << kBits);
  Entry* last_ = nullptr;
};

// Encodes chunks[c] rows [begin, end) for c in [first, last] (begin in the
// first chunk, end in the last) into codes (nulls -1) and `dict`.
void EncodeRange(const std::vector<StringChunk>& chunks, size_t first, int64_t begin, size_t last, int64_t end,
                 int32_t* codes, LocalDictionary& dict) {
  std::string_view previous;
  int32_t previous_code = -1;
  RecentValues recent;
  for (size_t c = first; c <= last; ++c) {
    const StringChunk& chunk = chunks[c];
    const int64_t lo = c == first ? begin : 0, hi = c == last ? end : chunk.length;
    for (int64_t i = lo; i < hi; ++i, ++codes) {
      if (!chunk.Valid(i)) {
        *codes = -1;
        continue;
      }
      const std::string_view value = chunk.At(i);
      if (previous_code >= 0 && value.size() == previous.size() &&
          SameBytes(value.data(), previous.data(), value.size())) [[likely]] {
        *codes = previous_code;
        continue;
      }
      bool hit = false;
      const int32_t* cached = recent.Find(value, hit);
      if (hit) {
        previous_code = *cached;
      } else {
        auto [it, inserted] = dict.index.try_emplace(value, static_cast<int32_t>(dict.values.size()));
        if (inserted) dict.values.push_back(value);
        previous_code = it->second;
        recent.Put(value, previous_code);
      }
      previous = value;
      *codes = previous_code;
    }
  }
}

// (codes, values) of the column made of `chunks`: int32 codes (-1 for a
// null) into distinct values in first-seen order, on up to `threads` threads.
py::tuple EncodeStrings(const py::list& chunk_buffers, int threads) {
  std::vector<StringChunk> chunks;
  std::vector<py::object> keep;  // the numpy views stay alive while the GIL is released
  int64_t rows = 0;
  for (const py::handle h : chunk_buffers) {
    const auto t = py::reinterpret_borrow<py::tuple>(h);
    StringChunk chunk;
    const py::array offsets = t[0].cast<py::array>();
    chunk.offset = t[3].cast<int64_t>();
    chunk.length = t[4].cast<int64_t>();
    if (offsets.dtype().is(py::dtype::of<int32_t>())) {
      chunk.offsets32 = static_cast<const int32_t*>(offsets.data());
    } else if (offsets.dtype().is(py::dtype::of<int64_t>())) {
      chunk.offsets64 = static_cast<const int64_t*>(offsets.data());
    } else if (offsets.dtype().is(py::dtype::of<uint8_t>())) {  // string_view: 16 bytes a row
      chunk.views = static_cast<const uint8_t*>(offsets.data());
    } else {
      throw py::type_error("internal: string offsets must be int32 or int64, or uint8 views");
    }
    const int64_t needed = chunk.views != nullptr ? 16 * (chunk.offset + chunk.length)
                                                  : chunk.offset + chunk.length + (chunk.length > 0 ? 1 : 0);
    if (offsets.size() < needed) throw py::value_error("internal: string offsets shorter than the array");
    if (chunk.views != nullptr) {  // the data: a list of buffers the views point into
      for (const py::handle b : t[1].cast<py::list>()) {
        const auto buffer = b.cast<CArray<uint8_t>>();
        chunk.view_buffers.push_back(reinterpret_cast<const char*>(buffer.data()));
        keep.push_back(buffer);
      }
    } else {
      const auto data = t[1].cast<CArray<uint8_t>>();
      chunk.data = reinterpret_cast<const char*>(data.data());
      keep.push_back(data);
    }
    if (!t[2].is_none()) {
      const auto validity = t[2].cast<CArray<uint8_t>>();
      chunk.validity = validity.data();
      keep.push_back(validity);
    }
    keep.push_back(offsets);
    rows += chunk.length;
    if (chunk.length > 0) chunks.push_back(chunk);
  }
  std::vector<int32_t> codes(static_cast<size_t>(rows));
  // Each worker a contiguous range of rows: (chunk, row) where it starts.
  constexpr int64_t kMinRowsPerWorker = int64_t{1} << 20;
  const int workers = static_cast<int>(std::clamp<int64_t>(rows / kMinRowsPerWorker, 1, std::max(1, threads)));
  std::vector<LocalDictionary> dicts(workers);
  std::vector<int64_t> bounds(workers + 1);
  for (int w = 0; w <= workers; ++w) bounds[w] = rows * w / workers;
  {
    py::gil_scoped_release release;
    auto locate = [&](int64_t row) {  // (chunk, row in it) of a column row; rows == end: the last chunk's end
      size_t c = 0;
      while (c + 1 < chunks.size() && row >= chunks[c].length) row -= chunks[c++].length;
      return std::pair(c, row);
    };
    auto run = [&](int w) {
      if (bounds[w] == bounds[w + 1]) return;
      const auto [first, begin] = locate(bounds[w]);
      const auto [last, end] = locate(bounds[w + 1]);
      EncodeRange(chunks, first, begin, last, end, codes.data() + bounds[w], dicts[w]);
    };
    std::vector<std::thread> pool;
    for (int w = 1; w < workers; ++w) pool.emplace_back(run, w);
    run(0);
    for (std::thread& t : pool) t.join();
    // Workers' values unified in row order: worker 0's codes stand, the
    // others' are mapped to the first worker that saw each value.
    for (int w = 1; w < workers; ++w) {
      std::vector<int32_t> global(dicts[w].values.size());
      for (size_t k = 0; k < global.size(); ++k) {
        auto [it, inserted] = dicts[0].index.try_emplace(dicts[w].values[k],
                                                         static_cast<int32_t>(dicts[0].values.size()));
        if (inserted) dicts[0].values.push_back(dicts[w].values[k]);
        global[k] = it->second;
      }
      for (int64_t r = bounds[w]; r < bounds[w + 1]; ++r) {
        if (codes[r] >= 0) codes[r] = global[codes[r]];
      }
    }
  }
  py::list values(dicts[0].values.size());
  for (size_t k = 0; k < dicts[0].values.size(); ++k) {
    const std::string_view v = dicts[0].values[k];
    PyObject* s = PyUnicode_DecodeUTF8(v.data(), static_cast<Py_ssize_t>(v.size()), "strict");
    if (s == nullptr) throw py::error_already_set();
    PyList_SET_ITEM(values.ptr(), static_cast<Py_ssize_t>(k), s);
  }
  return py::make_tuple(MoveToNumpy(std::move(codes)), values);
}

// Codes into a large shared dictionary (a Polars categorical's global
// categories) made dense: (int32 local codes, the shared codes they stand
// for, first seen first). One pass without the GIL; Polars' own Arrow
// export does the same work at a sixth of the speed.
py::tuple CompactCodes(const CArray<uint32_t>& shared, size_t dictionary_size) {
  const auto n = static_cast<size_t>(shared.size());
  const uint32_t* in = shared.data();
  std::vector<int32_t> local(n);
  std::vector<uint32_t> used;
  size_t bad = n;  // a code past the dictionary
  {
    py::gil_scoped_release release;
    auto local_code = [&](int32_t& code, uint32_t shared_code) {
      if (code < 0) {
        code = static_cast<int32_t>(used.size());
        used.push_back(shared_code);
      }
      return code;
    };
    // A table indexed by shared code, unless the shared dictionary is far
    // larger than the column (a process that categorised many strings).
    const bool dense = dictionary_size < std::max<size_t>(4 * n, size_t{1} << 22);
    std::vector<int32_t> table(dense ? dictionary_size : 0, -1);
    absl::flat_hash_map<uint32_t, int32_t> sparse;
    for (size_t i = 0; i < n && bad == n; ++i) {
      if (in[i] >= dictionary_size) {
        bad = i;
      } else {
        local[i] = local_code(dense ? table[in[i]] : sparse.try_emplace(in[i], -1).first->second, in[i]);
      }
    }
  }
  if (bad < n) throw py::value_error("internal: code " + std::to_string(shared.data()[bad]) + " past the dictionary");
  return py::make_tuple(MoveToNumpy(std::move(local)), MoveToNumpy(std::move(used)));
}

}  // namespace

void RegisterStrings(py::module_& m) {
  m.def("compact_codes", &CompactCodes, py::arg("codes"), py::arg("dictionary_size"),
        "Codes (uint32) into a shared dictionary of `dictionary_size` values made dense: (int32 local codes; the "
        "shared codes they stand for, first seen first).");
  m.def("encode_strings", &EncodeStrings, py::arg("chunks"), py::arg("threads") = 1,
        "Dictionary codes of an Arrow string column given as its chunks' buffers: a list of (offsets as int32 "
        "or int64 numpy and data as uint8 numpy, or string views as uint8 numpy and a list of uint8 data "
        "buffers; validity as uint8 numpy or None; offset; length). Returns (int32 codes, -1 for null; values, "
        "first seen first).");
}

}  // namespace gpucost::python
