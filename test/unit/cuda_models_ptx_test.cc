// Every primitive function of every shared model that the cuda device's NVPTX provider takes
// compiles to PTX that ptxas accepts for sm_80 and sm_90 (docs/cuda.md). The functions come
// from the accelerator pipeline (plan-devices for sim, which places like a GPU with every
// kernel available), so the groups are the ones a GPU would get once its library kernels exist;
// those the provider does not take are listed per model with their ops.
#include <filesystem>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "passes/compile_engine/compile_engine.h"
#include "passes/frontend/onnx_importer.h"
#include "passes/vm/vm.h"
#include "support/cuda_test_util.h"
#include "support/ir_test_util.h"

namespace hetpass {
namespace {

// Imports every model of ../shared/models (failing loudly when the folder is missing), runs
// `pipeline` and hands the module and the model's name to `check`; returns the model count.
template <typename Check>
int ForEachSharedModel(const std::string& pipeline, Check check) {
  const std::string root = HETPASS_SHARED_DIR "/models";
  EXPECT_TRUE(std::filesystem::is_directory(root)) << "missing " << root;
  if (!std::filesystem::is_directory(root)) return 0;
  int models = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    const std::string path = entry.path().string() + "/model.onnx";
    if (!std::filesystem::exists(path)) continue;
    ++models;
    SCOPED_TRACE(path);
    auto m = ImportOnnxFile(path, OnnxImportOptions());
    EXPECT_TRUE(m.ok()) << m.status();
    if (!m.ok()) continue;
    auto changed = testing::RunPipeline(**m, pipeline);
    EXPECT_TRUE(changed.ok()) << changed.status();
    if (changed.ok()) check(entry.path().filename().string(), **m);
  }
  return models;
}

TEST(CudaModelsPtx, EveryTakenGroupOfEverySharedModelAssembles) {
  int taken_total = 0;
  const int models = ForEachSharedModel(vm::DefaultPipeline(DeviceKind::kSim), [&](const std::string& name,
                                                                                    const Module& m) {
    int groups = 0, taken = 0;
    std::set<std::string> other_ops;
    for (const auto& f : m.functions()) {
      if (!IsPrimitive(*f)) continue;
      ++groups;
      if (!cuda::IsNvptxGroup(*f)) {
        for (const auto& n : f->body().nodes()) {
          if (n->kind() == NodeKind::kCall) other_ops.insert(std::string(n->OpName()));
        }
        continue;
      }
      ++taken;
      const absl::Status ok = testing::NvptxAssembles(*f);
      EXPECT_TRUE(ok.ok()) << ok;
    }
    taken_total += taken;
    std::printf("%s: %d of %d groups have an NVPTX kernel; the others use %s\n", name.c_str(), taken, groups,
                absl::StrJoin(other_ops, ", ").c_str());
  });
  EXPECT_GE(models, 6);
  EXPECT_GT(taken_total, 0);
}

// For target=cuda, every group plan-devices and fuse-ops put on cuda is taken by one of cuda's
// providers (compiled here without a GPU), so loading the model on a GPU cannot fail with "no
// kernel provider of cuda takes it" (the first GPU run of the transformer did, before the
// cuBLASLt + NVPTX split existed).
TEST(CudaModelsPtx, EveryGroupPlacedOnCudaHasAKernel) {
  int on_cuda_total = 0;
  ForEachSharedModel(vm::DefaultPipeline(DeviceKind::kCuda), [&](const std::string& name, const Module& m) {
    CompileEngine engine;  // per module: an engine's cache points into the functions it compiled
    int on_cuda = 0, groups = 0;
    for (const auto& f : m.functions()) {
      if (!IsPrimitive(*f)) continue;
      ++groups;
      const auto& nodes = f->body().nodes();
      if (nodes.empty() || nodes.front()->device() != DeviceKind::kCuda) continue;
      ++on_cuda;
      auto k = engine.Lower(*f, DeviceKind::kCuda);
      EXPECT_TRUE(k.ok()) << k.status();
    }
    on_cuda_total += on_cuda;
    std::printf("%s: %d of %d groups on cuda\n", name.c_str(), on_cuda, groups);
  });
  EXPECT_GT(on_cuda_total, 0);
}

}  // namespace
}  // namespace hetpass
