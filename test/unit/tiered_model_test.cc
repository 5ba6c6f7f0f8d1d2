// Tiered compilation on whole shared models (CompileEngineOptions::background_jit): the first
// run, on whatever tier each kernel is on, makes exactly the copies of a synchronous load and
// agrees with its outputs to the reference kernels' rounding; once WaitForKernels returns, every
// kernel is the one a synchronous load picks and the outputs are bit-identical to its.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "passes/frontend/onnx_importer.h"
#include "passes/pass/pass_manager.h"
#include "passes/pass/pass_registry.h"
#include "passes/vm/executable.h"
#include "passes/vm/vm.h"

namespace hetpass {
namespace {

std::string ModelDir(const std::string& name) {
  return absl::StrCat(HETPASS_SHARED_DIR, "/models/", name);
}

absl::StatusOr<std::unique_ptr<vm::VirtualMachine>> Load(const std::string& dir, DeviceKind device,
                                                         bool background) {
  auto m = ImportOnnxFile(dir + "/model.onnx");
  if (!m.ok()) return m.status();
  auto pm = ParsePipeline(vm::DefaultPipeline(device), PassManagerOptions());
  if (!pm.ok()) return pm.status();
  if (auto run = (*pm)->Run(**m); !run.ok()) return run.status();
  auto exe = vm::CompileModule(**m);
  if (!exe.ok()) return exe.status();
  vm::VmOptions options;
  options.engine.kernel_cache_dir = "off";  // every JIT kernel really compiles in the background
  options.engine.background_jit = background;
  return vm::VirtualMachine::Load(*std::move(exe), options);
}

std::vector<Tensor> Inputs(const std::string& dir) {
  std::vector<Tensor> inputs;
  for (int i = 0;; ++i) {
    const std::string path = absl::StrCat(dir, "/test_data_set_0/input_", i, ".pb");
    if (!std::filesystem::exists(path)) break;
    auto t = ReadOnnxTensorFile(path);
    EXPECT_TRUE(t.ok()) << t.status();
    if (t.ok()) inputs.push_back(*std::move(t));
  }
  return inputs;
}

std::string Bytes(const Tensor& t) { return std::string(reinterpret_cast<const char*>(t.data()), t.nbytes()); }

class TieredModels : public ::testing::TestWithParam<std::tuple<const char*, DeviceKind>> {};

TEST_P(TieredModels, FirstRunCopiesExactlyAndFinalKernelsAreBitIdentical) {
  const std::string dir = ModelDir(std::get<0>(GetParam()));
  const DeviceKind device = std::get<1>(GetParam());
  ASSERT_TRUE(std::filesystem::exists(dir + "/model.onnx")) << "missing shared model " << dir;
  const std::vector<Tensor> inputs = Inputs(dir);
  ASSERT_FALSE(inputs.empty());

  auto sync = Load(dir, device, /*background=*/false);
  ASSERT_TRUE(sync.ok()) << sync.status();
  auto want = (*sync)->RunWithHostTensors("main", inputs);
  ASSERT_TRUE(want.ok()) << want.status();

  auto tiered = Load(dir, device, /*background=*/true);
  ASSERT_TRUE(tiered.ok()) << tiered.status();
  auto first = (*tiered)->RunWithHostTensors("main", inputs);
  ASSERT_TRUE(first.ok()) << first.status();
  const runtime::DeviceCounters& a = (*sync)->LastRunCounters();
  const runtime::DeviceCounters& b = (*tiered)->LastRunCounters();
  EXPECT_EQ(a.h2d_calls, b.h2d_calls);
  EXPECT_EQ(a.h2d_bytes, b.h2d_bytes);
  EXPECT_EQ(a.d2h_calls, b.d2h_calls);
  EXPECT_EQ(a.d2h_bytes, b.d2h_bytes);
  EXPECT_EQ(a.d2d_calls, b.d2d_calls);
  EXPECT_EQ(a.syncs, b.syncs);
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
  for (size_t i = 0; i < want->size(); ++i) {
    EXPECT_EQ(Bytes((*last)[i]), Bytes((*want)[i])) << "output " << i;
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
