// Tests of the cuda device (docs/cuda.md) on a machine with a GPU: memory, copies in each
// direction with the counts sim makes, the pinned staging path and the large path of
// device-to-host reads, range checks, launches refusing host memory, the pooling allocator's
// steady state without raw allocations. Without a GPU every test skips with the reason
// (HETPASS_REQUIRE_CUDA=1 turns the skip into a failure).
#include <cstdint>
#include <numeric>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/runtime/device.h"

namespace hetpass::runtime {
namespace {

using ::testing::HasSubstr;

bool Required() {
  const char* v = std::getenv("HETPASS_REQUIRE_CUDA");
  return v != nullptr && std::string(v) == "1";
}

#define CUDA_OR_SKIP(d)                                              \
  auto made = MakeDevice(DeviceKind::kCuda);                         \
  if (!made.ok()) {                                                  \
    if (Required()) FAIL() << made.status();                         \
    GTEST_SKIP() << "no GPU: " << made.status().message();           \
  }                                                                  \
  Device& d = **made

// Tests a host -> device -> device -> host round trip of small and large buffers and the exact
// counters: copies per direction with bytes, one sync per device-to-host read, raw allocations.
TEST(CudaDevice, RoundTripAndCounters) {
  CUDA_OR_SKIP(dev);
  EXPECT_EQ(dev.kind(), DeviceKind::kCuda);
  EXPECT_NE(dev.native_queue(), nullptr);
  for (size_t n : {size_t{1}, size_t{1000}, size_t{1} << 20}) {  // staged and direct reads
    dev.ResetCounters();
    std::vector<uint8_t> in(n), out(n, 0);
    std::iota(in.begin(), in.end(), 7);
    auto a = dev.Allocate(n);
    auto b = dev.Allocate(n);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_TRUE(dev.Owns(*a));
    EXPECT_TRUE(dev.Owns(static_cast<uint8_t*>(*a) + n - 1));
    EXPECT_FALSE(dev.Owns(in.data()));
    ASSERT_TRUE(dev.CopyHostToDevice(*a, in.data(), n).ok());
    ASSERT_TRUE(dev.CopyDeviceToDevice(*b, *a, n).ok());
    ASSERT_TRUE(dev.CopyDeviceToHost(out.data(), *b, n).ok());
    EXPECT_EQ(in, out) << n << " bytes";
    const DeviceCounters& c = dev.counters();
    EXPECT_EQ(c.h2d_calls, 1);
    EXPECT_EQ(c.h2d_bytes, static_cast<int64_t>(n));
    EXPECT_EQ(c.d2d_calls, 1);
    EXPECT_EQ(c.d2h_calls, 1);
    EXPECT_EQ(c.d2h_bytes, static_cast<int64_t>(n));
    EXPECT_EQ(c.syncs, 1);
    EXPECT_EQ(c.allocs, 2);
    dev.Free(*a);
    dev.Free(*b);
    EXPECT_EQ(dev.counters().frees, 2);
    EXPECT_EQ(dev.counters().bad_frees, 0);
  }
  ASSERT_TRUE(dev.Synchronize().ok());
}

// Tests that copies outside live allocations and launches handed host memory are refused with
// the direction named, and that a foreign free is counted, not performed.
TEST(CudaDevice, RefusesBadRanges) {
  CUDA_OR_SKIP(dev);
  auto a = dev.Allocate(256);
  ASSERT_TRUE(a.ok());
  std::vector<uint8_t> host(512);
  absl::Status over = dev.CopyHostToDevice(*a, host.data(), 512);
  EXPECT_EQ(over.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(over.message(), HasSubstr("h2d"));
  absl::Status not_device = dev.CopyDeviceToHost(host.data(), host.data(), 16);
  EXPECT_EQ(not_device.code(), absl::StatusCode::kInvalidArgument);
  LaunchArg arg{host.data(), host.size(), false};
  bool ran = false;
  absl::Status launch = dev.Launch(absl::MakeSpan(&arg, 1), [&] {
    ran = true;
    return absl::OkStatus();
  });
  EXPECT_EQ(launch.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ran);
  dev.Free(host.data());
  EXPECT_EQ(dev.counters().bad_frees, 1);
  dev.Free(*a);
}

// Tests by-value launch arguments: counted as params, left on the host for the kernel closure
// to read into its parameters; more than 4 KiB is refused.
TEST(CudaDevice, ByValueArgumentsAreParams) {
  CUDA_OR_SKIP(dev);
  dev.ResetCounters();
  std::vector<int64_t> bounds = {1, 2, 3};
  LaunchArg arg{bounds.data(), bounds.size() * 8, true};
  const void* seen = nullptr;
  ASSERT_TRUE(dev.Launch(absl::MakeSpan(&arg, 1), [&] {
                   seen = arg.data;
                   return absl::OkStatus();
                 }).ok());
  EXPECT_EQ(seen, bounds.data());
  EXPECT_EQ(dev.counters().param_calls, 1);
  EXPECT_EQ(dev.counters().param_bytes, 24);
  EXPECT_EQ(dev.counters().launches, 1);
  std::vector<uint8_t> big(kMaxKernelParamBytes + 8);
  LaunchArg too_big{big.data(), big.size(), true};
  EXPECT_EQ(dev.Launch(absl::MakeSpan(&too_big, 1), [] { return absl::OkStatus(); }).code(),
            absl::StatusCode::kInvalidArgument);
}

// Tests that the pooling allocator over the cuda device makes no raw allocation once warm.
TEST(CudaDevice, PoolSteadyStateAllocatesNothing) {
  CUDA_OR_SKIP(dev);
  PoolingAllocator pool(&dev);
  for (int round = 0; round < 3; ++round) {
    const int64_t before = dev.counters().allocs;
    std::vector<PoolingAllocator::Block> blocks;
    for (size_t n : {size_t{100}, size_t{4096}, size_t{1} << 22}) {
      auto b = pool.Allocate(n);
      ASSERT_TRUE(b.ok());
      blocks.push_back(*b);
    }
    for (auto& b : blocks) pool.Release(b);
    if (round > 0) EXPECT_EQ(dev.counters().allocs, before) << "round " << round;
  }
}

}  // namespace
}  // namespace hetpass::runtime
