// The on-disk kernel cache: compiled kernel code kept between processes, so that a second
// compile of the same model skips the LLVM optimisation and code generation of every JIT kernel
// (11-14 ms each; issue 14).
//
// The cache stores opaque payloads (object files) under opaque keys (text). The caller decides
// what a key holds; the LLVM JIT (src/compile_engine/jit/llvm_jit.cc) uses the cache format
// version, the hetpass and LLVM versions, the target triple, CPU name and features, the
// optimisation recipe and the canonical text of the unoptimised kernel module. Two different
// keys never share an entry: a file is named by a hash of its key, but it holds the full key
// and a load compares it byte for byte, so a hash collision is a miss, never a wrong kernel.
//
// Where: KernelCacheDirectory() resolves a setting (CompileEngineOptions::kernel_cache_dir):
//   ""        the environment's HETPASS_KERNEL_CACHE_DIR if set, else $XDG_CACHE_HOME/hetpass/
//             kernels, else $HOME/.cache/hetpass/kernels (no cache when none of them is set);
//   "off"     no cache (HETPASS_KERNEL_CACHE_DIR=off does the same for the default);
//   a path    that directory (created on the first store).
//
// Entry format (one file per key, "<16 hex digits of FNV-1a 64 of the key>.hpk"), integers
// little-endian:
//   magic "HPKCACHE" (8 bytes) | format version u32 | reserved u32 (0) | key length u64 |
//   payload length u64 | checksum u64 (FNV-1a 64 over key then payload) | key | payload
// A file that is short, long, of another format version, of another key, or whose checksum
// does not match is rejected (counted), treated as a miss, and overwritten by the next store.
//
// Concurrency: a store writes a temporary file in the cache directory (unique per process and
// thread) and renames it over the entry; rename is atomic within a file system, so a reader
// sees either no entry, an old complete one or the new complete one, never a partial file. Two
// processes storing the same key both write complete entries of equal content; the last
// rename wins. Nothing is locked.
//
// Failure is never an error: a directory that cannot be created or written makes Store a
// no-op (counted in store_failures), and Load of an unreadable file is a miss. Compilation
// then proceeds without the cache.
#ifndef HETPASS_COMPILE_ENGINE_KERNEL_CACHE_H_
#define HETPASS_COMPILE_ENGINE_KERNEL_CACHE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace hetpass {

// Bumped whenever the entry layout or what a key means changes; part of every entry and key.
inline constexpr uint32_t kKernelCacheFormatVersion = 1;

// The directory a setting names, or "" for no cache (see the header comment).
std::string KernelCacheDirectory(absl::string_view setting);

struct KernelCacheStats {
  int64_t hits = 0;            // loads that returned a payload
  int64_t misses = 0;          // loads that found no usable entry (absent or rejected)
  int64_t rejected = 0;        // of the misses: entries present but corrupt or of another key
  int64_t stores = 0;          // entries written
  int64_t store_failures = 0;  // stores that could not write (the cache degrades to a no-op)
};

class KernelCache {
 public:
  // A cache in `dir` (created lazily, on the first store). An empty `dir` is a cache that
  // never hits and never stores.
  explicit KernelCache(std::string dir);
  // The cache for a CompileEngineOptions::kernel_cache_dir setting; null for "no cache".
  static std::shared_ptr<KernelCache> ForSetting(absl::string_view setting);

  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  // The payload stored under `key`, or nullopt (absent, unreadable or rejected entry).
  std::optional<std::string> Load(absl::string_view key);
  // Writes the entry for `key` atomically (temporary file + rename). Best effort.
  void Store(absl::string_view key, absl::string_view payload);

  const std::string& dir() const { return dir_; }
  // The file that holds `key`'s entry (tests corrupt it on purpose).
  std::string EntryPath(absl::string_view key) const;
  KernelCacheStats stats() const;

  // The entry bytes for (key, payload), and the payload of entry bytes if they are a valid
  // entry for `key` (nullopt otherwise). Exposed for tests of the format.
  static std::string EncodeEntry(absl::string_view key, absl::string_view payload);
  static std::optional<std::string> DecodeEntry(absl::string_view bytes, absl::string_view key);

 private:
  std::string dir_;
  std::atomic<int64_t> hits_{0};
  std::atomic<int64_t> misses_{0};
  std::atomic<int64_t> rejected_{0};
  std::atomic<int64_t> stores_{0};
  std::atomic<int64_t> store_failures_{0};
};

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_KERNEL_CACHE_H_
