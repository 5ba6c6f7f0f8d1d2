// Tiered compilation on whole shared models (CompileEngineOptions::background_jit): the first
// run, on whatever tier each kernel is on, makes exactly the copies of a synchronous load and
// agrees with its outputs to the reference kernels' rounding; once WaitForKernels returns, every
// kernel is the one a synchronous load picks and the outputs are bit-identical to its.
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "passes/support/status_macros.h"
#include "passes/vm/vm.h"
#include "support/runtime_test_util.h"
#include "support/shared_models.h"

namespace hetpass {
namespace {

absl::StatusOr<std::unique_ptr<vm::VirtualMachine>> Load(const std::string& dir, DeviceKind device,
                                                         bool background) {
  ASSIGN_OR_RETURN(vm::Executable exe, testing::CompileSharedModel(dir, device));
  vm::VmOptions options;
  options.engine.kernel_cache_dir = "off";  // every JIT kernel really compiles in the background
  options.engine.background_jit = background;
  return vm::VirtualMachine::Load(std::move(exe), options);
}

std::string Bytes(const Tensor& t) { return std::string(reinterpret_cast<const char*>(t.data()), t.nbytes()); }

class TieredModels : public ::testing::TestWithParam<std::tuple<const char*, DeviceKind>> {};

TEST_P(TieredModels, FirstRunCopiesExactlyAndFinalKernelsAreBitIdentical) {
  const std::string dir = testing::SharedModelDir(std::get<0>(GetParam()));
  const DeviceKind device = std::get<1>(GetParam());
  ASSERT_TRUE(std::filesystem::exists(dir + "/model.onnx")) << "missing shared model " << dir;
  auto read = testing::ReadTestSetInputs(dir + "/test_data_set_0");
  ASSERT_TRUE(read.ok()) << read.status();
  const std::vector<Tensor>& inputs = *read;
  ASSERT_FALSE(inputs.empty());

  auto sync = Load(dir, device, /*background=*/false);
  ASSERT_TRUE(sync.ok()) << sync.status();
  auto want = (*sync)->RunWithHostTensors("main", inputs);
  ASSERT_TRUE(want.ok()) << want.status();

  auto tiered = Load(dir, device, /*background=*/true);
  ASSERT_TRUE(tiered.ok()) << tiered.status();
  auto first = (*tiered)->RunWithHostTensors("main", inputs);
  ASSERT_TRUE(first.ok()) << first.status();
  testing::ExpectSameCopies((*tiered)->LastRunCounters(), (*sync)->LastRunCounters());
  ASSERT_EQ(first->size(), want->size());
  for (size_t i = 0; i < want->size(); ++i) {
    const Tensor& w = (*want)[i];
    const Tensor& g = (*first)[i];
    ASSERT_EQ(g.type().ToString(), w.type().ToString()) << "output " << i;
    for (int64_t k = 0; k < w.num_elements(); ++k) {
      const double x = w.GetDouble(k), y = g.GetDouble(k);
      ASSERT_NEAR(y, x, 1e-4 + 1e-4 * std::abs(x)) << "output " << i << " element " << k;
    }
  }

  ASSERT_TRUE((*tiered)->WaitForKernels().ok());
  EXPECT_EQ((*tiered)->KernelsPending(), 0);
  EXPECT_EQ((*tiered)->KernelDescriptions(), (*sync)->KernelDescriptions());
  auto last = (*tiered)->RunWithHostTensors("main", inputs);
  ASSERT_TRUE(last.ok()) << last.status();
  // Against the synchronous load's second run: both are a second run, so the conv kernels'
  // Winograd tier (from run 2, conv_kernel.cc) is in both or in neither.
  auto want2 = (*sync)->RunWithHostTensors("main", inputs);
  ASSERT_TRUE(want2.ok()) << want2.status();
  for (size_t i = 0; i < want2->size(); ++i) {
    EXPECT_EQ(Bytes((*last)[i]), Bytes((*want2)[i])) << "output " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shared, TieredModels,
    ::testing::Combine(::testing::Values("nonzero_gather", "transformer_encoder_dynamic",
                                         "resnet_tiny_dynamic_batch"),
                       ::testing::Values(DeviceKind::kCpu, DeviceKind::kSim)),
    [](const auto& info) {
      return absl::StrCat(std::get<0>(info.param), "_", DeviceName(std::get<1>(info.param)));
    });

}  // namespace
}  // namespace hetpass
