// The cpu device: host memory, used by the VM for values the device planner placed on cpu.
//
// Design:
//   - Allocate is std::aligned_alloc with 64-byte alignment (a cache line, and what vectorised
//     kernels expect). The size is rounded up to a multiple of 64 (aligned_alloc's contract) and
//     to at least 64, so a 0-byte request still yields a unique, valid, freeable pointer.
//   - Live allocations are kept in an ordered map (start -> size) so Owns(ptr) can answer "is
//     this inside a block this device handed out" and Free can reject pointers it never handed
//     out (counted as bad_frees instead of corrupting the heap). Host memory not obtained from
//     this device (a caller's std::vector) is therefore *not* owned by it.
//   - Copies are plain memcpy/memmove. The VM never asks the cpu device to transfer (a cpu->cpu
//     copy is not a transfer), but when it is asked, the call is counted per direction like on
//     any device, so counters stay honest.
//   - Launch runs the kernel inline on the calling thread.
// Thread safety: every method may be called from several threads; the map and the counters are
// guarded by one mutex (never held while a kernel runs or while memcpy copies).
#include "passes/runtime/device.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "passes/support/status_macros.h"
#include "runtime/live_blocks.h"

namespace hetpass::runtime {
namespace {

constexpr size_t kAlignment = 64;

class CpuDevice final : public Device {
 public:
  CpuDevice() = default;
  ~CpuDevice() override {
    // Blocks still allocated belong to callers that outlive the device by mistake; the heap
    // would reclaim them at exit anyway, and freeing them here would turn that mistake into a
    // use-after-free, so they are left alone.
  }

  DeviceKind kind() const override { return DeviceKind::kCpu; }

  absl::StatusOr<void*> Allocate(size_t bytes) override {
    if (bytes > SIZE_MAX - kAlignment) return Exhausted(bytes);
    size_t rounded = bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
    // Allocated under the lock, so the memory limit's check and the allocation are one step.
    std::lock_guard<std::mutex> lock(mu_);
    RETURN_IF_ERROR(CheckMemoryLimit(rounded, bytes));
    void* p = std::aligned_alloc(kAlignment, rounded);
    if (p == nullptr) return Exhausted(bytes);
    live_.Allocated(p, rounded, bytes, counters_);
    return p;
  }

  void Free(void* ptr) override {
    if (ptr == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!live_.Freed(ptr, counters_)) return;
    }
    std::free(ptr);
  }

  absl::Status CopyHostToDevice(void* device_dst, const void* host_src, size_t bytes) override {
    if (bytes > 0 && (device_dst == nullptr || host_src == nullptr)) return NullCopy("h2d", bytes);
    if (bytes > 0) std::memmove(device_dst, host_src, bytes);
    Count(counters_.h2d_calls, counters_.h2d_bytes, counters_.h2d_empty, bytes);
    return absl::OkStatus();
  }

  absl::Status CopyDeviceToHost(void* host_dst, const void* device_src, size_t bytes) override {
    if (bytes > 0 && (host_dst == nullptr || device_src == nullptr)) return NullCopy("d2h", bytes);
    if (bytes > 0) std::memmove(host_dst, device_src, bytes);
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.d2h_calls;
    counters_.d2h_bytes += static_cast<int64_t>(bytes);
    if (bytes == 0) ++counters_.d2h_empty;
    return absl::OkStatus();  // the host's wait is Synchronize() (device.h)
  }

  absl::Status CopyDeviceToDevice(void* device_dst, const void* device_src, size_t bytes) override {
    if (bytes > 0 && (device_dst == nullptr || device_src == nullptr)) {
      return NullCopy("d2d", bytes);
    }
    if (bytes > 0) std::memmove(device_dst, device_src, bytes);
    Count(counters_.d2d_calls, counters_.d2d_bytes, counters_.d2d_empty, bytes);
    return absl::OkStatus();
  }

  absl::Status Synchronize() override {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.syncs;
    return absl::OkStatus();
  }

  // The host is this device: by-value args need no staging and every pointer is valid here.
  absl::Status Launch(absl::Span<LaunchArg> /*args*/,
                      absl::FunctionRef<absl::Status()> kernel) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.launches;
    }
    return kernel();
  }

  bool Owns(const void* ptr) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return live_.Contains(ptr);
  }

 private:
  static absl::Status Exhausted(size_t bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cpu: out of host memory allocating ", bytes, " bytes"));
  }
  static absl::Status NullCopy(const char* direction, size_t bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpu ", direction, ": null pointer for a copy of ", bytes, " bytes"));
  }
  void Count(int64_t& calls, int64_t& total, int64_t& empty, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    ++calls;
    total += static_cast<int64_t>(bytes);
    if (bytes == 0) ++empty;
  }

  mutable std::mutex mu_;
  LiveBlocks live_;  // rounded sizes
};

}  // namespace

std::unique_ptr<Device> MakeCpuDevice() { return std::make_unique<CpuDevice>(); }

}  // namespace hetpass::runtime
