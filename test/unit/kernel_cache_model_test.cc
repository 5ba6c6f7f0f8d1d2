// The on-disk kernel cache on whole shared models: a model loaded with a cold cache, then
// again with the warm cache, gives exactly the bytes it gives with no cache at all, and the warm
// load generates no code (every JIT kernel comes from the cache).
#include <filesystem>
#include <string>
#include <vector>

#include <stdlib.h>

#include "absl/strings/str_cat.h"
#include "compile_engine/jit/kernels.h"
#include "gtest/gtest.h"
#include "passes/support/status_macros.h"
#include "passes/vm/vm.h"
#include "support/shared_models.h"

namespace hetpass {
namespace {

// Imports, compiles for the cpu, loads with `cache_dir` and runs test_data_set_0: the bytes of
// every output.
absl::StatusOr<std::vector<std::string>> RunOnce(const std::string& dir,
                                                 const std::string& cache_dir) {
  ASSIGN_OR_RETURN(vm::Executable exe, testing::CompileSharedModel(dir, DeviceKind::kCpu));
  vm::VmOptions options;
  options.engine.kernel_cache_dir = cache_dir;
  ASSIGN_OR_RETURN(auto machine, vm::VirtualMachine::Load(std::move(exe), options));
  ASSIGN_OR_RETURN(std::vector<Tensor> inputs, testing::ReadTestSetInputs(dir + "/test_data_set_0"));
  ASSIGN_OR_RETURN(std::vector<Tensor> outputs, machine->RunWithHostTensors("main", inputs));
  std::vector<std::string> bytes;
  for (const Tensor& t : outputs) {
    bytes.emplace_back(reinterpret_cast<const char*>(t.data()), t.nbytes());
  }
  return bytes;
}

class KernelCacheModels : public ::testing::TestWithParam<const char*> {};

// Tests that no cache, a cold cache and a warm cache give bit-identical outputs, that the cold
// load compiles kernels and the warm one none: each of its JIT modules comes from the cache.
TEST_P(KernelCacheModels, ColdAndWarmAreBitIdenticalToNoCache) {
  const std::string dir = testing::SharedModelDir(GetParam());
  ASSERT_TRUE(std::filesystem::exists(dir + "/model.onnx")) << "missing shared model " << dir;
  std::string pattern = ::testing::TempDir() + "/hetpass_model_cache_XXXXXX";
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const std::string cache = pattern;

  auto none = RunOnce(dir, "off");
  ASSERT_TRUE(none.ok()) << none.status();
  const JitCounts before_cold = ProcessJitCounts();
  auto cold = RunOnce(dir, cache);
  ASSERT_TRUE(cold.ok()) << cold.status();
  const JitCounts before_warm = ProcessJitCounts();
  auto warm = RunOnce(dir, cache);
  ASSERT_TRUE(warm.ok()) << warm.status();
  const JitCounts after = ProcessJitCounts();

  EXPECT_EQ(*cold, *none);
  EXPECT_EQ(*warm, *none);
  // The cold load may already hit for a module it compiled earlier in the same load (two
  // groups that differ as IR but generate the same LLVM module).
  const int64_t cold_codegens = before_warm.codegens - before_cold.codegens;
  const int64_t cold_loads = before_warm.cache_loads - before_cold.cache_loads;
  EXPECT_GT(cold_codegens, 0) << "the model has no JIT kernel: it tests nothing here";
  EXPECT_EQ(after.codegens - before_warm.codegens, 0) << "the warm load generated code";
  EXPECT_EQ(after.cache_loads - before_warm.cache_loads, cold_codegens + cold_loads);
  std::error_code ec;
  std::filesystem::remove_all(cache, ec);
}

INSTANTIATE_TEST_SUITE_P(SharedModels, KernelCacheModels,
                         ::testing::Values("transformer_encoder_dynamic",
                                           "resnet_tiny_dynamic_batch"));

}  // namespace
}  // namespace hetpass
