// The tools' small-object heap: C++ allocations of at most 64 KiB are served by mimalloc,
// everything else (weights, activations, large tables, and all of C's malloc) by glibc.
//
// Why: compiling a model is a storm of small C++ objects (IR nodes, values, operand vectors,
// hash-map nodes, strings) created by one pass and freed by the next. glibc's malloc spends a
// fifth to a quarter of the passes' samples in `perf` on them (malloc_consolidate, unlink_chunk,
// _int_malloc/_int_free), and its free lists scatter a pass's objects over the heap.
// mimalloc's size-class pages keep them dense and freeing them cheap. Only the small ones go
// there: with mimalloc serving every allocation, the large buffers of a real model (weights
// copied out of the file, packed convolution weights) raised BERT-6's peak RSS from 1.29x to
// 1.7x its file (issue 33's limit is 1.5x), while glibc hands large blocks back promptly.
//
// How:
//   - small_object_heap.cc replaces the global `operator new`/`operator delete` (the C++
//     allocation functions a program may replace; the library never does it, so programs that
//     embed it keep their own allocator). It is compiled into each tool (hetpass, hetpass-opt,
//     pass-viz) only; sanitizer builds leave it out, since ASan and TSan replace the same
//     functions to check them.
//   - mimalloc is dlopen()ed with RTLD_LOCAL (Debian's libmimalloc2.0), not linked: its library
//     also defines malloc and free, and linked as a dependency it would take them over for the
//     whole process. Loaded locally, only the functions called here reach it.
//   - It is loaded by a constructor that runs before the tool's other static constructors.
//     Anything allocated before that (by shared libraries' constructors) comes from glibc, and
//     every delete asks mimalloc whether it owns the pointer (a bit in its segment map), so a
//     block always goes back to the heap it came from.
//   - Once mimalloc has committed 32 MiB, its pages are advised for transparent huge pages
//     (mimalloc's large_os_pages for the segments it maps later, madvise for the region it is
//     filling), as the glibc heap is (huge_page_heap.h): on a large model without them the
//     small-object heap is one 4 KiB fault per page and most of the gain goes to the kernel.
//     Not from the start: a small model's objects fit in a few MiB, and in huge pages its
//     first region alone was resident in 2 MiB steps (ResNet-50's peak ~4 MB higher).
//   - HETPASS_SMALL_OBJECT_HEAP=0 in the environment leaves every allocation to glibc (for
//     heaptrack or valgrind, which see glibc's heap only); HETPASS_HUGE_PAGES=0 turns the huge
//     pages off here too. Where libmimalloc.so.2 cannot be loaded, the tool runs on glibc alone
//     and says why in SmallObjectHeapStatus (`hetpass run --json`: "small_object_heap").
// Measured with bench/scale and bench/import (figures: docs/runtime.md, "Small-object heap").
#ifndef HETPASS_TOOLS_COMMON_SMALL_OBJECT_HEAP_H_
#define HETPASS_TOOLS_COMMON_SMALL_OBJECT_HEAP_H_

namespace hetpass::tools {

// "mimalloc (C++ allocations up to 65536 bytes, huge pages past 32 MiB committed)" when the heap
// serves them; otherwise
// "glibc" followed by the reason in parentheses (turned off, not built in, not loadable).
const char* SmallObjectHeapStatus();

}  // namespace hetpass::tools

#if !defined(HETPASS_SMALL_OBJECT_HEAP)
// A build without it (sanitizers, or -DHETPASS_SMALL_OBJECT_HEAP=OFF): glibc serves everything.
inline const char* hetpass::tools::SmallObjectHeapStatus() { return "glibc (not built in)"; }
#endif

#endif  // HETPASS_TOOLS_COMMON_SMALL_OBJECT_HEAP_H_
