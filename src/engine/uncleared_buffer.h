// Large scratch buffers of the engine, internal to src/.
//
// The engine's per-row buffers (a series id per row, the gathered copy of
// rows out of time order) are written once, so they are not cleared, and
// they are large: a fresh 100 MB buffer costs 25,000 page faults in 4 KiB
// pages, which took a fifth of a shuffled allocation. Buffers of 4 MiB and
// more are aligned to 2 MiB and offered to transparent huge pages
// (madvise), which the kernel grants where its THP mode is "madvise" or
// "always": 50 faults instead.
#ifndef GPUCOST_SRC_UNCLEARED_BUFFER_H_
#define GPUCOST_SRC_UNCLEARED_BUFFER_H_

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace gpucost::internal {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

template <typename T>
using UnclearedBuffer = std::unique_ptr<T[], FreeDeleter>;

// `count` values of T, not initialised; throws std::bad_alloc like new[].
template <typename T>
UnclearedBuffer<T> AllocateUncleared(size_t count) {
  static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>);
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t bytes = count * sizeof(T);
  void* p = nullptr;
  if (bytes >= 2 * kHugePage) {
    const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    p = std::aligned_alloc(kHugePage, rounded);
#ifdef MADV_HUGEPAGE
    if (p != nullptr) (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
  } else {
    p = std::malloc(bytes == 0 ? 1 : bytes);
  }
  if (p == nullptr) throw std::bad_alloc();
  return UnclearedBuffer<T>(static_cast<T*>(p));
}

}  // namespace gpucost::internal

#endif  // GPUCOST_SRC_UNCLEARED_BUFFER_H_
