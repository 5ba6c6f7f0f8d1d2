// Whole-page hints for large buffers (model weights, prepacked kernel weights). Writing a fresh
// buffer faults its pages in one at a time; on the development VM a fault costs more than the
// bytes written to the page, so a 100 MB model spent more time in faults than in its copies.
// Both are hints: where the kernel lacks one (MADV_POPULATE_WRITE is Linux 5.14), nothing
// happens and the buffer works as before.
#ifndef HETPASS_SUPPORT_PAGES_H_
#define HETPASS_SUPPORT_PAGES_H_

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace hetpass {

// The whole pages inside [p, p + n): a partial page at either end may hold other data.
inline std::pair<void*, size_t> InteriorPages(const void* p, size_t n) {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t b = reinterpret_cast<uintptr_t>(p);
  const uintptr_t first = (b + page - 1) / page * page;
  const uintptr_t last = (b + n) / page * page;
  return {reinterpret_cast<void*>(first), last > first ? last - first : 0};
}

// Buffers below this are left to fault in page by page: the call would cost what it saves.
inline constexpr size_t kPrefaultMinBytes = size_t{1} << 18;

// Makes the pages of a buffer about to be written resident in one system call (from
// kPrefaultMinBytes up; smaller buffers are left alone).
inline void PrefaultForWrite(void* p, size_t n) {
#ifdef MADV_POPULATE_WRITE
  if (n < kPrefaultMinBytes) return;
  const auto [first, bytes] = InteriorPages(p, n);
  if (bytes > 0) ::madvise(first, bytes, MADV_POPULATE_WRITE);
#else
  (void)p;
  (void)n;
#endif
}

// Appends n bytes of a read-only file mapping to *dst chunk by chunk (no zero-fill first),
// dropping each chunk's whole pages from the process once copied (clean private file pages:
// read again from the file if touched). The process then holds the bytes about once at the
// peak, not twice: the copy grows as the mapped pages leave.
inline void AppendOutOfMapping(std::string* dst, const char* src, size_t n) {
  constexpr size_t kChunk = size_t{4} << 20;
  for (size_t done = 0; done < n;) {
    const size_t step = n - done < kChunk ? n - done : kChunk;
    dst->append(src + done, step);
    const auto [first, bytes] = InteriorPages(src + done, step);
    if (bytes > 0) ::madvise(first, bytes, MADV_DONTNEED);
    done += step;
  }
}

}  // namespace hetpass

#endif  // HETPASS_SUPPORT_PAGES_H_
