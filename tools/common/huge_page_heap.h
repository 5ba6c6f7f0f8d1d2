// Transparent huge pages for the tools' heap: a process-wide memory policy, so the tools
// (hetpass, hetpass-opt, pass-viz) choose it for themselves and the library never does.
//
// Why: importing and compiling a model fills the heap with hundreds of megabytes of small
// objects (IR nodes, values, types, protobuf messages), and with 4 KiB pages every page is a
// fault in the kernel the first time it is touched: at bench/scale's 100k ops that was about
// 56,000 faults, a fifth of the compile's samples in `perf`. With 2 MiB pages the same heap
// takes a few thousand. Kernels whose transparent huge pages are `madvise`-only (Ubuntu's
// default, and the development VM's) give them only to memory that asked: glibc asks for its
// heap only under GLIBC_TUNABLES=glibc.malloc.hugetlb=1, which a program cannot set for itself
// once it runs. So the tools ask themselves:
//   - glibc's main heap grows with brk, contiguously: a large top pad makes its next growth
//     reserve `kReserve` bytes of address space at once (virtual: nothing is resident until
//     touched), and one allocation past the current top makes that growth happen now;
//   - madvise(MADV_HUGEPAGE) over the reserved range, so later allocations there fault in
//     2 MiB pages;
//   - the top pad is set back (later growths stay small), and the trim threshold is set to its
//     maximum, so freeing memory at the heap's top does not hand the advised range back (a
//     later growth would not be advised). It was the reserve itself until the small-object heap
//     (small_object_heap.h) took the small objects out of this heap: with the heap nearly
//     empty, the top chunk is the whole reserve, the first free beside it went over the
//     threshold, glibc trimmed the range away, and ResNet-50's weights were copied into 4 KiB
//     pages (its import 361 ms against 109 ms). An explicit malloc_trim (released constants,
//     docs/runtime.md) still gives free pages back.
// Costs, measured with bench/import and bench/scale (figures in the commit that added this):
// peak memory a few MB higher (2 MiB granularity at the heap's edge), nothing else. Kernels
// with THP `always` already give huge pages (no change); with `never`, none (no change).
// HETPASS_HUGE_PAGES=0 in the environment turns it off; programs embedding the library can
// set GLIBC_TUNABLES=glibc.malloc.hugetlb=1 for the same effect.
#ifndef HETPASS_TOOLS_COMMON_HUGE_PAGE_HEAP_H_
#define HETPASS_TOOLS_COMMON_HUGE_PAGE_HEAP_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#if defined(__GLIBC__) && defined(__linux__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace hetpass::tools {

// Call first thing in main, before the heap holds anything large. Does nothing where the heap
// is not glibc's brk heap (a sanitizer's allocator, another libc): the break does not move.
inline void UseHugePageHeap() {
#if defined(__GLIBC__) && defined(__linux__) && defined(MADV_HUGEPAGE)
  if (const char* env = std::getenv("HETPASS_HUGE_PAGES");
      env != nullptr && std::strcmp(env, "0") == 0) {
    return;
  }
  constexpr size_t kReserve = size_t{1} << 30;  // address space, not memory
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  mallopt(M_TOP_PAD, static_cast<int>(kReserve));
  char* const before = static_cast<char*>(sbrk(0));
  // Below the mmap threshold (128 KiB), so they come from the heap; a handful fill what the top
  // has left, the next one grows it by the pad.
  void* blocks[64];
  int n = 0;
  while (n < 64 && static_cast<char*>(sbrk(0)) - before < (1 << 20))
    blocks[n++] = std::malloc(64 << 10);
  for (int i = 0; i < n; ++i) std::free(blocks[i]);
  mallopt(M_TOP_PAD, 128 << 10);
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(before) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t hi = reinterpret_cast<uintptr_t>(sbrk(0)) & ~(kHuge - 1);
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
#endif
}

}  // namespace hetpass::tools

#endif  // HETPASS_TOOLS_COMMON_HUGE_PAGE_HEAP_H_
