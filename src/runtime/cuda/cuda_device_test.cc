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
    ASSERT_TRUE(dev.Synchronize().ok());  // the one counted wait
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
    if (round > 0) {
      EXPECT_EQ(dev.counters().allocs, before) << "round " << round;
    }
  }
}

// Tests that CUPTI, the driver's own view, sees exactly the copies the device counted: two
// host-to-device copies, one device-to-device and two device-to-host reads (one staged, one
// direct), as memcpy records by direction.
TEST(CuptiTrace, SeesTheCopiesTheDeviceCounts) {
  CUDA_OR_SKIP(dev);
  const size_t n = size_t{1} << 20;
  std::vector<uint8_t> in(n, 7), out(n, 0);
  auto a = dev.Allocate(n);
  auto b = dev.Allocate(n);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(dev.Synchronize().ok());
  const absl::Status started = StartCuptiTrace();
  ASSERT_TRUE(started.ok()) << started;
  dev.ResetCounters();
  ASSERT_TRUE(dev.CopyHostToDevice(*a, in.data(), n).ok());
  ASSERT_TRUE(dev.CopyHostToDevice(*a, in.data(), 64).ok());
  ASSERT_TRUE(dev.CopyDeviceToDevice(*b, *a, n).ok());
  ASSERT_TRUE(dev.CopyDeviceToHost(out.data(), *b, 16).ok());  // staged
  ASSERT_TRUE(dev.CopyDeviceToHost(out.data(), *b, n).ok());   // direct
  ASSERT_TRUE(dev.Synchronize().ok());
  absl::StatusOr<CuptiTrace> seen = StopCuptiTrace();
  ASSERT_TRUE(seen.ok()) << seen.status();
  const DeviceCounters& c = dev.counters();
  EXPECT_EQ(seen->h2d, c.h2d_calls);
  EXPECT_EQ(seen->d2h, c.d2h_calls);
  EXPECT_EQ(seen->d2d, c.d2d_calls);
  EXPECT_EQ(seen->h2d_bytes, c.h2d_bytes);
  EXPECT_EQ(seen->d2h_bytes, c.d2h_bytes);
  EXPECT_EQ(seen->d2d_bytes, c.d2d_bytes);
  EXPECT_EQ(seen->h2d, 2);
  EXPECT_EQ(seen->d2h, 2);
  EXPECT_EQ(seen->d2d, 1);
  dev.Free(*a);
  dev.Free(*b);
}

// Tests that without a GPU a trace cannot start, with the reason (never a crash).
TEST(CuptiTrace, WithoutAGpuIsAnError) {
  if (MakeDevice(DeviceKind::kCuda).ok()) GTEST_SKIP() << "a GPU is usable here";
  const absl::Status s = StartCuptiTrace();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), ::testing::AnyOf(HasSubstr("CUPTI"), HasSubstr("no cuda device")));
}

}  // namespace
}  // namespace hetpass::runtime
