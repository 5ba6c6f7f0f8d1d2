// The on-disk kernel cache (see kernel_cache.h): entry encoding and validation, atomic stores,
// and the resolution of the cache directory from a setting and the environment.
#include "passes/compile_engine/kernel_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <thread>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hetpass {
namespace {

constexpr char kMagic[8] = {'H', 'P', 'K', 'C', 'A', 'C', 'H', 'E'};
constexpr size_t kHeaderSize = 8 + 4 + 4 + 8 + 8 + 8;
// An entry larger than this is not ours (kernel objects are kilobytes); refuse to read it.
constexpr uint64_t kMaxEntryBytes = uint64_t{1} << 30;

// FNV-1a 64: stable across processes, builds and platforms (std::hash and absl::Hash are
// seeded or unspecified), and fast enough for kilobyte objects.
uint64_t Fnv1a(absl::string_view bytes, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t GetU(absl::string_view bytes, size_t at, int width) {
  uint64_t v = 0;
  for (int i = 0; i < width; ++i) v |= uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
  return v;
}

const char* NonEmptyEnv(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? v : nullptr;
}

// The whole file, or nullopt when it cannot be read (absent, a directory, too large).
std::optional<std::string> ReadFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<uint64_t>(st.st_size) > kMaxEntryBytes) {
    ::close(fd);
    return std::nullopt;
  }
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    bytes.append(buffer, static_cast<size_t>(n));
    if (bytes.size() > kMaxEntryBytes) {
      ::close(fd);
      return std::nullopt;
    }
  }
  ::close(fd);
  return bytes;
}

bool WriteAll(int fd, absl::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

std::string KernelCacheDirectory(absl::string_view setting) {
  if (setting == "off") return "";
  if (!setting.empty()) return std::string(setting);
  if (const char* env = NonEmptyEnv("HETPASS_KERNEL_CACHE_DIR")) {
    return std::string(env) == "off" ? "" : env;
  }
  if (const char* xdg = NonEmptyEnv("XDG_CACHE_HOME")) return absl::StrCat(xdg, "/hetpass/kernels");
  if (const char* home = NonEmptyEnv("HOME")) return absl::StrCat(home, "/.cache/hetpass/kernels");
  return "";
}

KernelCache::KernelCache(std::string dir) : dir_(std::move(dir)) {}

std::shared_ptr<KernelCache> KernelCache::ForSetting(absl::string_view setting) {
  std::string dir = KernelCacheDirectory(setting);
  if (dir.empty()) return nullptr;
  return std::make_shared<KernelCache>(std::move(dir));
}

std::string KernelCache::EntryPath(absl::string_view key) const {
  return absl::StrFormat("%s/%016x.hpk", dir_, Fnv1a(key));
}

KernelCacheStats KernelCache::stats() const {
  KernelCacheStats s;
  s.hits = hits_.load();
  s.misses = misses_.load();
  s.rejected = rejected_.load();
  s.stores = stores_.load();
  s.store_failures = store_failures_.load();
  return s;
}

std::string KernelCache::EncodeEntry(absl::string_view key, absl::string_view payload) {
  std::string out;
  out.reserve(kHeaderSize + key.size() + payload.size());
  out.append(kMagic, sizeof(kMagic));
  PutU32(out, kKernelCacheFormatVersion);
  PutU32(out, 0);
  PutU64(out, key.size());
  PutU64(out, payload.size());
  PutU64(out, Fnv1a(payload, Fnv1a(key)));
  out.append(key.data(), key.size());
  out.append(payload.data(), payload.size());
  return out;
}

std::optional<std::string> KernelCache::DecodeEntry(absl::string_view bytes,
                                                    absl::string_view key) {
  if (bytes.size() < kHeaderSize || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return std::nullopt;
  }
  if (GetU(bytes, 8, 4) != kKernelCacheFormatVersion || GetU(bytes, 12, 4) != 0) {
    return std::nullopt;
  }
  const uint64_t key_size = GetU(bytes, 16, 8);
  const uint64_t payload_size = GetU(bytes, 24, 8);
  const uint64_t checksum = GetU(bytes, 32, 8);
  // Compared without adding the lengths first: garbled lengths must not overflow.
  const uint64_t body = bytes.size() - kHeaderSize;
  if (key_size > body || payload_size != body - key_size) return std::nullopt;
  const absl::string_view stored_key = bytes.substr(kHeaderSize, key_size);
  const absl::string_view payload = bytes.substr(kHeaderSize + key_size);
  if (stored_key != key) return std::nullopt;
  if (Fnv1a(payload, Fnv1a(stored_key)) != checksum) return std::nullopt;
  return std::string(payload);
}

std::optional<std::string> KernelCache::Load(absl::string_view key) {
  if (dir_.empty()) {
    ++misses_;
    return std::nullopt;
  }
  std::optional<std::string> bytes = ReadFile(EntryPath(key));
  if (!bytes) {
    ++misses_;
    return std::nullopt;
  }
  std::optional<std::string> payload = DecodeEntry(*bytes, key);
  if (!payload) {
    ++rejected_;
    ++misses_;
    return std::nullopt;
  }
  ++hits_;
  return payload;
}

void KernelCache::Store(absl::string_view key, absl::string_view payload) {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) {
    ++store_failures_;
    return;
  }
  const std::string path = EntryPath(key);
  // Unique per process and thread, in the same directory (rename stays on one file system);
  // the leading dot keeps it apart from entry names.
  const std::string tmp = absl::StrFormat(
      "%s/.tmp-%016x-%d-%x", dir_, Fnv1a(key), static_cast<int>(::getpid()),
      std::hash<std::thread::id>()(std::this_thread::get_id()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    ++store_failures_;
    return;
  }
  const bool written = WriteAll(fd, EncodeEntry(key, payload));
  const bool closed = ::close(fd) == 0;
  if (!written || !closed || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    ++store_failures_;
    return;
  }
  ++stores_;
}

}  // namespace hetpass
