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
#include "passes/frontend/onnx_importer.h"
#include "passes/vm/vm.h"
#include "support/cuda_test_util.h"
#include "support/ir_test_util.h"

namespace hetpass {
namespace {

TEST(CudaModelsPtx, EveryTakenGroupOfEverySharedModelAssembles) {
  const std::string root = HETPASS_SHARED_DIR "/models";
  ASSERT_TRUE(std::filesystem::is_directory(root)) << "missing " << root;
  int models = 0, taken_total = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    const std::string path = entry.path().string() + "/model.onnx";
    if (!std::filesystem::exists(path)) continue;
    ++models;
    SCOPED_TRACE(path);
    auto m = ImportOnnxFile(path, OnnxImportOptions());
    ASSERT_TRUE(m.ok()) << m.status();
    auto changed = testing::RunPipeline(**m, vm::DefaultPipeline(DeviceKind::kSim));
    ASSERT_TRUE(changed.ok()) << changed.status();
    int groups = 0, taken = 0;
    std::set<std::string> other_ops;
    for (const auto& f : (*m)->functions()) {
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
    std::printf("%s: %d of %d groups have an NVPTX kernel; the others use %s\n",
                entry.path().filename().c_str(), taken, groups,
                absl::StrJoin(other_ops, ", ").c_str());
  }
  EXPECT_GE(models, 6);
  EXPECT_GT(taken_total, 0);
}

}  // namespace
}  // namespace hetpass
