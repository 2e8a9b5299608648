// File: detail/arrow_c_data.h
//
// The Arrow C data interface (https://arrow.apache.org/docs/format/CDataInterface.html):
// two ABI-stable structs through which pyarrow, DuckDB, Polars and the Arrow
// C++ library hand over columnar data without copying and without linking
// each other. gpucost reads record batches through them (Parquet exports
// arrive this way from Python), so the library needs no Arrow dependency.
// The guard is the one the specification prescribes, so including Arrow's
// own header as well is harmless.
#ifndef GPUCOST_DETAIL_ARROW_C_DATA_H_
#define GPUCOST_DETAIL_ARROW_C_DATA_H_

#include <cstdint>

extern "C" {

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;
  void (*release)(struct ArrowSchema*);
  void* private_data;
};

struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  void (*release)(struct ArrowArray*);
  void* private_data;
};

#endif  // ARROW_C_DATA_INTERFACE

}  // extern "C"

#endif  // GPUCOST_DETAIL_ARROW_C_DATA_H_
