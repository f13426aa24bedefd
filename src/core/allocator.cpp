#include "readpast/allocator.hpp"

#include <cstdlib>  // defines __GLIBC__ when the C library is glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace readpast {

bool keep_freed_memory_for_reuse() noexcept {
#if defined(__GLIBC__)
  constexpr int kTrimThreshold = 64 << 20;  // the value readpast_bench measured with
  return ::mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1;
#else
  return false;
#endif
}

}  // namespace readpast
