// The tools' small-object heap (small_object_heap.h says why and how): replaceable global
// operator new/delete that send C++ allocations of at most kSmallLimit bytes to mimalloc,
// loaded with dlopen, and everything else to glibc.
#include "common/small_object_heap.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <mimalloc.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace {

constexpr std::size_t kSmallLimit = std::size_t{64} << 10;
// Huge pages once mimalloc has committed this much (small_object_heap.h, "huge pages"), checked
// every kCheckEvery allocations of a thread.
constexpr std::size_t kHugePagesAfter = std::size_t{32} << 20;
constexpr uint32_t kCheckEvery = 1u << 16;

// Written once, by LoadSmallObjectHeap before main (before any thread of the tool exists), and
// only read afterwards. Until then (shared libraries' constructors) they are null: glibc.
decltype(&mi_malloc) mi_malloc_fn = nullptr;
decltype(&mi_free) mi_free_fn = nullptr;
decltype(&mi_is_in_heap_region) mi_owns_fn = nullptr;
decltype(&mi_option_set) mi_option_set_fn = nullptr;
decltype(&mi_process_info) mi_process_info_fn = nullptr;
// True until huge pages are on (or when they are not wanted: HETPASS_HUGE_PAGES=0).
std::atomic<bool> huge_pages_pending{false};
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
  auto* process_info = reinterpret_cast<decltype(&mi_process_info)>(dlsym(lib, "mi_process_info"));
  if (alloc == nullptr || release == nullptr || owns == nullptr || set_option == nullptr ||
      process_info == nullptr) {
    std::snprintf(status, sizeof(status), "glibc (libmimalloc.so.2 lacks mi_malloc, mi_free, "
                                          "mi_is_in_heap_region, mi_option_set or mi_process_info)");
    return;  // the library stays loaded: harmless, and nothing of it is used
  }
  const char* huge = std::getenv("HETPASS_HUGE_PAGES");
  const bool huge_pages = huge == nullptr || std::strcmp(huge, "0") != 0;
  mi_malloc_fn = alloc;
  mi_free_fn = release;
  mi_owns_fn = owns;
  mi_option_set_fn = set_option;
  mi_process_info_fn = process_info;
  huge_pages_pending.store(huge_pages, std::memory_order_relaxed);
  std::snprintf(status, sizeof(status), "mimalloc (C++ allocations up to %zu bytes%s)", kSmallLimit,
                huge_pages ? ", huge pages past 32 MiB committed" : "");
}

// The [lo, hi) of the mapping in /proc/self/maps that holds `at`, read with plain reads into a
// stack buffer; false where none does or the file cannot be read.
bool FindMapping(uintptr_t at, uintptr_t& lo, uintptr_t& hi) noexcept {
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  size_t have = 0;
  bool found = false;
  ssize_t got;
  while (!found && (got = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0) {
    have += static_cast<size_t>(got);
    buf[have] = '\0';
    char* line = buf;
    for (char* end; !found && (end = std::strchr(line, '\n')) != nullptr; line = end + 1) {
      char* dash;
      lo = std::strtoull(line, &dash, 16);
      hi = *dash == '-' ? std::strtoull(dash + 1, nullptr, 16) : 0;
      found = lo <= at && at < hi;
    }
    have = static_cast<size_t>(buf + have - line);  // a partial last line moves to the front
    std::memmove(buf, line, have);
  }
  close(fd);
  return found;
}

// The option reaches only the segments mimalloc maps from now on; the region it is filling
// (it commits tens of MiB at a time) is advised here, so that its untouched part also faults in
// huge pages. The region is the mapping holding a fresh block, found in /proc/self/maps with
// plain reads: this runs inside operator new, so it must not allocate.
void AdviseCurrentRegion() noexcept {
  void* probe = mi_malloc_fn(16);
  const uintptr_t at = reinterpret_cast<uintptr_t>(probe);
  mi_free_fn(probe);
  uintptr_t lo, hi;
  if (FindMapping(at, lo, hi)) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
}

// Every kCheckEvery-th allocation of a thread while huge pages are pending: past
// kHugePagesAfter committed, segments mimalloc takes from the OS from now on are advised for
// them. Racing threads may both set the option; setting it twice is harmless.
void CheckHugePages() noexcept {
  thread_local uint32_t calls = 0;
  if (++calls % kCheckEvery != 0) return;
  size_t committed = 0;
  mi_process_info_fn(nullptr, nullptr, nullptr, nullptr, nullptr, &committed, nullptr, nullptr);
  if (committed < kHugePagesAfter) return;
  mi_option_set_fn(mi_option_large_os_pages, 1);
  huge_pages_pending.store(false, std::memory_order_relaxed);
  AdviseCurrentRegion();
}

void* TryAllocate(std::size_t n) noexcept {
  if (n <= kSmallLimit && mi_malloc_fn != nullptr) {
    if (huge_pages_pending.load(std::memory_order_relaxed)) CheckHugePages();
    return mi_malloc_fn(n == 0 ? 1 : n);
  }
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
