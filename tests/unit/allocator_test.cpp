// keep_freed_memory_for_reuse(): freed memory at the top of the heap is kept, not trimmed.
#include <gtest/gtest.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <memory>
#include <vector>

#include "readpast/allocator.hpp"

// The sanitizers bring allocators of their own, which ignore mallopt. GCC says so with
// __SANITIZE_*__, clang with __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define READPAST_TEST_OWN_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define READPAST_TEST_OWN_ALLOCATOR 1
#endif
#endif

namespace readpast::test {
namespace {

TEST(Allocator, FreedMemoryStaysForReuseOnceTuned) {
#if !defined(__GLIBC__) || defined(READPAST_TEST_OWN_ALLOCATOR)
  GTEST_SKIP() << "glibc's own allocator only";
#else
  ASSERT_TRUE(keep_freed_memory_for_reuse());
  {
    // 2 MB in blocks too large for glibc's per-thread caches, freed newest first: each
    // joins the top of the heap, which by default is trimmed once it passes 128 KiB.
    std::vector<std::unique_ptr<char[]> > blocks;
    for (int i = 0; i < 512; ++i) blocks.push_back(std::make_unique<char[]>(4000));
    while (!blocks.empty()) blocks.pop_back();
  }
  EXPECT_GE(mallinfo2().keepcost, 1'500'000u);
#endif
}

}  // namespace
}  // namespace readpast::test
