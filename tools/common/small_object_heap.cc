// The tools' small-object heap (small_object_heap.h says why and how): replaceable global
// operator new/delete that send C++ allocations of at most kSmallLimit bytes to mimalloc,
// loaded with dlopen, and everything else to glibc.
#include "common/small_object_heap.h"

#include <dlfcn.h>
#include <mimalloc.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace {

constexpr std::size_t kSmallLimit = std::size_t{64} << 10;

// Written once, by LoadSmallObjectHeap before main (before any thread of the tool exists), and
// only read afterwards. Until then (shared libraries' constructors) they are null: glibc.
decltype(&mi_malloc) mi_malloc_fn = nullptr;
decltype(&mi_free) mi_free_fn = nullptr;
decltype(&mi_is_in_heap_region) mi_owns_fn = nullptr;
char status[256] = "glibc (not loaded yet)";

// Priority 101: before the tool's other static constructors (LLVM's options, absl's flags), so
// that nearly everything the tool allocates is served by one heap from the start.
__attribute__((constructor(101))) void LoadSmallObjectHeap() {
  if (const char* env = std::getenv("HETPASS_SMALL_OBJECT_HEAP");
      env != nullptr && std::strcmp(env, "0") == 0) {
    std::snprintf(status, sizeof(status), "glibc (HETPASS_SMALL_OBJECT_HEAP=0)");
    return;
  }
  // RTLD_LOCAL: the library's own malloc/free must not join the process's symbol scope.
  void* lib = dlopen("libmimalloc.so.2", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    std::snprintf(status, sizeof(status), "glibc (libmimalloc.so.2 not loaded: %s)",
                  why != nullptr ? why : "unknown error");
    return;
  }
  auto* alloc = reinterpret_cast<decltype(&mi_malloc)>(dlsym(lib, "mi_malloc"));
  auto* release = reinterpret_cast<decltype(&mi_free)>(dlsym(lib, "mi_free"));
  auto* owns = reinterpret_cast<decltype(&mi_is_in_heap_region)>(dlsym(lib, "mi_is_in_heap_region"));
  auto* set_option = reinterpret_cast<decltype(&mi_option_set)>(dlsym(lib, "mi_option_set"));
  if (alloc == nullptr || release == nullptr || owns == nullptr || set_option == nullptr) {
    std::snprintf(status, sizeof(status), "glibc (libmimalloc.so.2 lacks mi_malloc, mi_free, "
                                          "mi_is_in_heap_region or mi_option_set)");
    return;  // the library stays loaded: harmless, and nothing of it is used
  }
  const char* huge = std::getenv("HETPASS_HUGE_PAGES");
  const bool huge_pages = huge == nullptr || std::strcmp(huge, "0") != 0;
  if (huge_pages) set_option(mi_option_large_os_pages, 1);
  mi_malloc_fn = alloc;
  mi_free_fn = release;
  mi_owns_fn = owns;
  std::snprintf(status, sizeof(status), "mimalloc (C++ allocations up to %zu bytes%s)",
                kSmallLimit, huge_pages ? ", huge pages" : "");
}

void* TryAllocate(std::size_t n) noexcept {
  if (n <= kSmallLimit && mi_malloc_fn != nullptr) return mi_malloc_fn(n == 0 ? 1 : n);
  return std::malloc(n == 0 ? 1 : n);
}

// The standard's loop: call the new-handler until the allocation succeeds or there is none.
void* Allocate(std::size_t n) {
  for (;;) {
    if (void* p = TryAllocate(n)) return p;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

void* AllocateNoThrow(std::size_t n) noexcept {
  try {
    return Allocate(n);
  } catch (...) {
    return nullptr;
  }
}

// By owner, not by size: a block allocated before the heap was loaded, or by a size that a
// caller misstates, still goes back where it came from.
void Release(void* p) noexcept {
  if (p == nullptr) return;
  if (mi_owns_fn != nullptr && mi_owns_fn(p)) {
    mi_free_fn(p);
  } else {
    std::free(p);
  }
}

}  // namespace

const char* hetpass::tools::SmallObjectHeapStatus() { return status; }

// The replaceable allocation functions ([new.delete]). The aligned forms (std::align_val_t)
// keep libstdc++'s own, which use aligned_alloc and free: glibc's, never mixed with these.
void* operator new(std::size_t n) { return Allocate(n); }
void* operator new[](std::size_t n) { return Allocate(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return AllocateNoThrow(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return AllocateNoThrow(n); }
void operator delete(void* p) noexcept { Release(p); }
void operator delete[](void* p) noexcept { Release(p); }
void operator delete(void* p, std::size_t) noexcept { Release(p); }
void operator delete[](void* p, std::size_t) noexcept { Release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { Release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { Release(p); }
