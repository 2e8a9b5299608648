// Arrow string columns (pyarrow, pandas "str", Polars) dictionary-encoded in
// C++ without the GIL, for gpucost/frames.py. A row equal to the row before
// it (telemetry strings come in runs) takes its code; any other is looked up
// in a table of the column's distinct values that holds each value's length
// and first 24 bytes inline (three words): a hash of those words and mostly
// one compare of one entry, never a read of where the value first occurred.
// (A cache of recent values in front of a hash table of pointers missed on
// every collision, and each miss read the column's buffer at random;
// docs/decisions.md.)
#include <algorithm>
#include <array>
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
  const char* data_end = nullptr;
  const uint8_t* views = nullptr;
  const char* views_end = nullptr;
  std::vector<const char*> view_buffers, view_buffer_ends;
  const uint8_t* validity = nullptr;
  int64_t offset = 0;
  int64_t length = 0;

  [[nodiscard]] bool Valid(int64_t i) const {
    const int64_t k = offset + i;
    return validity == nullptr || ((validity[k >> 3] >> (k & 7)) & 1) != 0;
  }
  // Row i's value, and the end of the buffer it lies in (bytes up to
  // there may be read past the value).
  [[nodiscard]] std::string_view At(int64_t i, const char*& end) const {
    const int64_t k = offset + i;
    if (views != nullptr) {
      const uint8_t* view = views + 16 * k;
      int32_t size = 0, buffer = 0, at = 0;
      std::memcpy(&size, view, 4);
      if (size <= 12) {
        end = views_end;
        return {reinterpret_cast<const char*>(view + 4), static_cast<size_t>(size)};
      }
      std::memcpy(&buffer, view + 8, 4);
      std::memcpy(&at, view + 12, 4);
      end = view_buffer_ends[static_cast<size_t>(buffer)];
      return {view_buffers[static_cast<size_t>(buffer)] + at, static_cast<size_t>(size)};
    }
    const int64_t lo = offsets32 != nullptr ? offsets32[k] : offsets64[k];
    const int64_t hi = offsets32 != nullptr ? offsets32[k + 1] : offsets64[k + 1];
    end = data_end;
    return {data + lo, static_cast<size_t>(hi - lo)};
  }
};

// 8 bytes of `p` as an integer.
inline uint64_t Word(const char* p) {
  uint64_t w = 0;
  std::memcpy(&w, p, 8);
  return w;
}

// Whether a and b (both n bytes) are equal: 8-byte words, the last one
// overlapping, instead of a call to memcmp (ids and pod names are short).
inline bool SameBytes(const char* a, const char* b, size_t n) {
  if (n < 8) return std::memcmp(a, b, n) == 0;
  for (size_t k = 0; k + 8 < n; k += 8) {
    if (Word(a + k) != Word(b + k)) return false;
  }
  return Word(a + n - 8) == Word(b + n - 8);
}

// A value as the table compares it: its length and three words, bytes
// [0, 8), [8, 16) and, up to 24 bytes, [16, 24) (else its last 8 bytes),
// bytes past the value zero. Two values of at most 24 bytes are equal
// exactly when their keys are; longer ones also compare bytes [16, n - 8).
struct Key {
  uint64_t w0, w1, w2, n;
  bool operator==(const Key&) const = default;
};

// The low `bytes` bytes of a word (0 to 8, clamped).
inline uint64_t LowBytes(int64_t bytes) {
  const int64_t b = std::clamp<int64_t>(bytes, 0, 8);
  return b == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * b)) - 1;
}

// The key of `v`, whose buffer ends at `end`: three loads that may read
// past the value (not past its buffer), masked; a value within 24 bytes of
// its buffer's end is copied first.
inline Key KeyOf(std::string_view v, const char* end) {
  const char* p = v.data();
  const auto n = static_cast<int64_t>(v.size());
  std::array<char, 24> copy{};
  if (end - p < 24) [[unlikely]] {
    std::memcpy(copy.data(), p, static_cast<size_t>(std::min<int64_t>(n, 24)));
    p = copy.data();
  }
  const char* last = n > 24 ? v.data() + n - 8 : p + 16;
  return {Word(p) & LowBytes(n), Word(p + 8) & LowBytes(n - 8), Word(last) & LowBytes(n > 24 ? 8 : n - 16),
          static_cast<uint64_t>(n)};
}

// The distinct values of a range of rows, first seen first, as views into
// the Arrow buffers (alive for the whole call), found by key: open
// addressing, linear probing, at most half full. A value over 24 bytes keeps
// its bytes [16, n - 8) in an arena, compared only when its key matches.
class LocalDictionary {
 public:
  // The code of `v` (its key `key`); a value not seen before gets the next.
  int32_t CodeOf(std::string_view v, const Key& key) {
    for (size_t slot = Slot(key);; slot = (slot + 1) & mask_) {
      Entry& e = entries_[slot];
      if (e.code < 0) [[unlikely]] return Add(e, v, key);
      if (e.key == key && (key.n <= 24 || SameBytes(arena_.data() + e.middle, v.data() + 16, v.size() - 24)))
          [[likely]] {
        return e.code;
      }
    }
  }
  [[nodiscard]] const std::vector<std::string_view>& values() const { return values_; }

 private:
  struct Entry {
    Key key{0, 0, 0, 0};
    uint64_t middle = 0;  // where its bytes [16, n - 8) start in arena_
    int32_t code = -1;
  };
  [[nodiscard]] size_t Slot(const Key& k) const {
    const uint64_t h = (k.w0 * 0x9E3779B97F4A7C15ULL) ^ (k.w1 * 0xC2B2AE3D27D4EB4FULL) ^
                       (k.w2 * 0x165667B19E3779F9ULL) ^ k.n;
    return static_cast<size_t>((h * 0x9E3779B97F4A7C15ULL) >> 32) & mask_;
  }
  __attribute__((noinline)) int32_t Add(Entry& e, std::string_view v, const Key& key) {
    const auto code = static_cast<int32_t>(values_.size());
    e = {key, arena_.size(), code};
    if (v.size() > 24) arena_.insert(arena_.end(), v.begin() + 16, v.end() - 8);
    values_.push_back(v);
    if (values_.size() * 2 > entries_.size()) Grow();
    return code;
  }
  void Grow() {
    std::vector<Entry> old = std::move(entries_);
    entries_.assign(old.size() * 2, Entry());
    mask_ = entries_.size() - 1;
    for (const Entry& e : old) {
      if (e.code < 0) continue;
      size_t slot = Slot(e.key);
      while (entries_[slot].code >= 0) slot = (slot + 1) & mask_;
      entries_[slot] = e;
    }
  }
  static constexpr size_t kInitial = size_t{1} << 12;
  std::vector<Entry> entries_ = std::vector<Entry>(kInitial);
  size_t mask_ = kInitial - 1;
  std::vector<char> arena_;
  std::vector<std::string_view> values_;
};

// Encodes chunks[c] rows [begin, end) for c in [first, last] (begin in the
// first chunk, end in the last) into codes (nulls -1) and `dict`.
void EncodeRange(const std::vector<StringChunk>& chunks, size_t first, int64_t begin, size_t last, int64_t end,
                 int32_t* codes, LocalDictionary& dict) {
  // Telemetry strings come in runs (a node's rows, a series'): a row equal
  // to the one before it takes its code without a lookup.
  std::string_view previous;
  int32_t previous_code = -1;
  for (size_t c = first; c <= last; ++c) {
    const StringChunk& chunk = chunks[c];
    const int64_t lo = c == first ? begin : 0, hi = c == last ? end : chunk.length;
    for (int64_t i = lo; i < hi; ++i, ++codes) {
      if (!chunk.Valid(i)) {
        *codes = -1;
        continue;
      }
      const char* buffer_end = nullptr;
      const std::string_view value = chunk.At(i, buffer_end);
      if (previous_code >= 0 && value.size() == previous.size() && SameBytes(value.data(), previous.data(), value.size())) {
        *codes = previous_code;
        continue;
      }
      previous = value;
      previous_code = *codes = dict.CodeOf(value, KeyOf(value, buffer_end));
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
      chunk.views_end = static_cast<const char*>(offsets.data()) + offsets.size();
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
        chunk.view_buffer_ends.push_back(reinterpret_cast<const char*>(buffer.data()) + buffer.size());
        keep.push_back(buffer);
      }
    } else {
      const auto data = t[1].cast<CArray<uint8_t>>();
      chunk.data = reinterpret_cast<const char*>(data.data());
      chunk.data_end = chunk.data + data.size();
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
    // others' are mapped to the first worker that saw each value (a key read
    // only within the value: its end is its buffer's end here).
    for (int w = 1; w < workers; ++w) {
      const std::vector<std::string_view>& theirs = dicts[w].values();
      std::vector<int32_t> global(theirs.size());
      for (size_t k = 0; k < global.size(); ++k) {
        global[k] = dicts[0].CodeOf(theirs[k], KeyOf(theirs[k], theirs[k].data() + theirs[k].size()));
      }
      for (int64_t r = bounds[w]; r < bounds[w + 1]; ++r) {
        if (codes[r] >= 0) codes[r] = global[codes[r]];
      }
    }
  }
  const std::vector<std::string_view>& distinct = dicts[0].values();
  py::list values(distinct.size());
  for (size_t k = 0; k < distinct.size(); ++k) {
    const std::string_view v = distinct[k];
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
