// Every primitive function of every shared model that the cuda device's NVPTX provider takes
// compiles to PTX that ptxas accepts for sm_80 and sm_90 (docs/cuda.md). The functions come
// from the accelerator pipeline (plan-devices for sim, which places like a GPU with every
// kernel available), so the groups are the ones a GPU would get once its library kernels exist;
// those the provider does not take are listed per model with their ops.
//
// The cuDNN half (CudaModelsCudnn) needs cuDNN but no GPU: every conv / deconv group of every
// shared model, at the shapes the models' reference inputs give it (found by running both test
// sets on the host with each kernel call observed), becomes the cuDNN problem the cuda kernel
// would enqueue, and cuDNN's descriptors accept it and size its output as we do. What needs a
// GPU (cudnnCreate, algorithm choice, workspace sizes, the calls) is left to the GPU runner.
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compile_engine/cuda/nvrtc_listing.h"
#include "gtest/gtest.h"
#include "compile_engine/cuda/cudnn_conv.h"
#include "compile_engine/group_match.h"
#include "compile_engine/split_kernel.h"
#include "passes/compile_engine/compile_engine.h"
#include "passes/frontend/onnx_importer.h"
#include "passes/vm/vm.h"
#include "support/cuda_test_util.h"
#include "support/ir_test_util.h"
#include "support/shared_models.h"

#ifdef HETPASS_HAS_CUDA
#include "runtime/cuda/cudnn.h"
#endif

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
// cuBLASLt + NVPTX split existed). The PTX of every NVRTC kernel among them (reductions,
// softmax, argwhere / NMS / topk, image ops) is assembled for sm_80 and sm_90 as well.
TEST(CudaModelsPtx, EveryGroupPlacedOnCudaHasAKernel) {
  int on_cuda_total = 0;
  std::set<std::string> nvrtc_ptx;
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
      if (!k.ok()) continue;
      // NVRTC kernels list their source then their PTX: assemble each distinct PTX (the NVPTX
      // groups' PTX is assembled by the test above).
      const std::string listing = (*k)->Listing();
      const size_t at = listing.find(cuda::kNvrtcPtxMarker);
      if (at != std::string::npos) nvrtc_ptx.insert(listing.substr(at + std::strlen(cuda::kNvrtcPtxMarker)));
    }
    on_cuda_total += on_cuda;
    std::printf("%s: %d of %d groups on cuda\n", name.c_str(), on_cuda, groups);
  });
  EXPECT_GT(on_cuda_total, 0);
#ifdef HETPASS_HAS_CUDA
  EXPECT_GT(nvrtc_ptx.size(), 0u);
#endif
  for (const std::string& ptx : nvrtc_ptx) {
    const absl::Status ok = testing::PtxasAccepts(ptx, "an NVRTC kernel of a shared model");
    EXPECT_TRUE(ok.ok()) << ok;
  }
  std::printf("%zu distinct NVRTC kernels of the shared models assemble for sm_80 and sm_90\n", nvrtc_ptx.size());
}

#ifdef HETPASS_HAS_CUDA
// What the host run of a model showed of its cuDNN groups: per group, the distinct argument
// shapes it ran with and the first failed descriptor check.
struct CudnnCalls {
  std::map<std::string, std::set<std::vector<std::vector<int64_t>>>> shapes;
  std::vector<std::string> failures;
};

// Where cuda runs a group with cuDNN: the whole group (cudnn providers), or its head (the
// cuda split's conv head, a ResNet block's conv + bias before its residual add + ReLU).
struct CudnnPart {
  const Function* f = nullptr;  // the function cuDNN's kernel is compiled from
  std::shared_ptr<SplitHead> split;  // owns `f` for a head; null for a whole group
};
std::optional<CudnnPart> CudnnPartOf(const Function& f) {
  const KernelTarget cuda{DeviceKind::kCuda};
  auto takes = [&](const Function& g) {
    return cuda::CudnnConvProvider().TryCompile(g, cuda).ok() || cuda::CudnnDeconvProvider().TryCompile(g, cuda).ok();
  };
  if (takes(f)) return CudnnPart{&f, nullptr};
  absl::StatusOr<SplitHead> head = CudaSplitHead(f);
  if (!head.ok() || !takes(*head->head)) return std::nullopt;
  auto split = std::make_shared<SplitHead>(*std::move(head));
  return CudnnPart{split->head, split};
}

// Runs the host kernel and checks the call's cuDNN problem (the function outlives the VM's
// instances: the VM owns both).
class CudnnCheckingInstance final : public KernelInstance {
 public:
  CudnnCheckingInstance(const Function& f, CudnnPart part, std::unique_ptr<KernelInstance> host, CudnnCalls& calls)
      : f_(f), part_(std::move(part)), host_(std::move(host)), calls_(calls) {}
  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override {
    std::vector<std::vector<int64_t>> shapes;
    for (const TensorArg& a : args) shapes.emplace_back(a.shape.begin(), a.shape.end());
    if (calls_.shapes[f_.name()].insert(shapes).second) {
      std::vector<TensorArg> part_args(args.begin(), args.end());
      if (part_.split != nullptr) {  // the head's parameters, then the group's output
        part_args.clear();
        for (int p : part_.split->params) part_args.push_back(args[p]);
        part_args.push_back(args.back());
      }
      const absl::Status ok = cuda::CheckCudnnDescriptors(*part_.f, part_args);
      if (!ok.ok()) calls_.failures.push_back(absl::StrCat("@", f_.name(), ": ", ok.message()));
    }
    return host_->Run(ctx, args);
  }

 private:
  const Function& f_;
  const CudnnPart part_;
  std::unique_ptr<KernelInstance> host_;
  CudnnCalls& calls_;
};

class CudnnCheckingKernel final : public CompiledKernel {
 public:
  CudnnCheckingKernel(const Function& f, CudnnPart part, std::shared_ptr<const CompiledKernel> host,
                      CudnnCalls& calls)
      : f_(f), part_(std::move(part)), host_(std::move(host)), calls_(calls) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const> constants) const override {
    ASSIGN_OR_RETURN(std::unique_ptr<KernelInstance> host, host_->Instantiate(ctx, constants));
    return std::make_unique<CudnnCheckingInstance>(f_, part_, std::move(host), calls_);
  }
  std::string Describe() const override { return host_->Describe(); }

 private:
  const Function& f_;
  const CudnnPart part_;
  std::shared_ptr<const CompiledKernel> host_;
  CudnnCalls& calls_;
};

// Runs every test set of the shared model `name` on the cpu pipeline, checking the cuDNN
// problem of each call of a group the cudnn providers take. The cpu pipeline without
// block-conv-layout, whose blocked convolutions are the host's alone: the groups are then
// cuda's.
void RunWithCudnnChecks(const std::string& name, CudnnCalls& calls) {
  const std::string dir = testing::SharedModelDir(name);
  std::string pipeline = vm::DefaultPipeline(DeviceKind::kCpu);
  const size_t layout = pipeline.find("block-conv-layout");
  if (layout != std::string::npos) pipeline.erase(layout, pipeline.find(',', layout) + 1 - layout);
  auto exe = testing::CompileSharedModel(dir, DeviceKind::kCpu, pipeline);
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto engine = std::make_shared<CompileEngine>();
  vm::VmOptions options;
  options.kernel_factory = [&calls, engine](const Function& f, DeviceKind device)
      -> absl::StatusOr<std::shared_ptr<const CompiledKernel>> {
    ASSIGN_OR_RETURN(std::shared_ptr<const CompiledKernel> host, engine->Lower(f, device));
    std::optional<CudnnPart> part = CudnnPartOf(f);
    if (!part) return host;
    return std::shared_ptr<const CompiledKernel>(
        std::make_shared<CudnnCheckingKernel>(f, *std::move(part), std::move(host), calls));
  };
  auto machine = vm::VirtualMachine::Load(*std::move(exe), options);
  ASSERT_TRUE(machine.ok()) << machine.status();
  int sets = 0;
  for (;; ++sets) {
    const std::string set = absl::StrCat(dir, "/test_data_set_", sets);
    if (!std::filesystem::is_directory(set)) break;
    auto inputs = testing::ReadTestSetInputs(set);
    ASSERT_TRUE(inputs.ok()) << inputs.status();
    auto out = (*machine)->RunWithHostTensors("main", *inputs);
    ASSERT_TRUE(out.ok()) << set << ": " << out.status();
  }
  EXPECT_EQ(sets, 2) << dir;
}
#endif

// Tests that, without a GPU, cuDNN's descriptors accept every convolution and transposed
// convolution of every shared model at its reference shapes and size its output as the
// compile engine does; and that every conv / deconv group the cuda pipeline places on cuda is
// one of those checked. Fails (does not skip) when cuDNN is missing from a CUDA build.
TEST(CudaModelsCudnn, DescriptorsOfEveryConvAtTheReferenceShapes) {
#ifndef HETPASS_HAS_CUDA
  GTEST_SKIP() << "this build has no cuda device (HETPASS_CUDA=OFF)";
#else
  absl::StatusOr<std::string> lib = runtime::cuda_api::CudnnLibrary();
  ASSERT_TRUE(lib.ok()) << lib.status();
  std::printf("cuDNN: %s\n", lib->c_str());
  int checked_total = 0;
  ForEachSharedModel(vm::DefaultPipeline(DeviceKind::kCuda), [&](const std::string& name, const Module& m) {
    int groups_on_cuda = 0, transposed = 0, conv_on_host = 0;
    for (const auto& f : m.functions()) {
      if (!IsPrimitive(*f) || f->body().nodes().empty()) continue;
      const Node& first = *f->body().nodes().front();
      const bool conv = group_match::IsCallOf(first, OpId::kNnConv2d) ||
                        group_match::IsCallOf(first, OpId::kNnConv2dTranspose);
      if (!CudnnPartOf(*f)) {
        conv_on_host += conv;
        continue;
      }
      EXPECT_EQ(first.device(), DeviceKind::kCuda) << "@" << f->name() << " stays on the host";
      ++groups_on_cuda;
      transposed += group_match::IsCallOf(first, OpId::kNnConv2dTranspose);
    }
    // Every convolution of the shared models has symmetric padding: none is left on the host.
    EXPECT_EQ(conv_on_host, 0) << name;
    CudnnCalls calls;
    RunWithCudnnChecks(name, calls);
    int problems = 0;
    for (const auto& [f, shapes] : calls.shapes) problems += static_cast<int>(shapes.size());
    for (const std::string& failure : calls.failures) ADD_FAILURE() << name << ": " << failure;
    // Fusion is the same on both pipelines for these groups (the host's oneDNN conv and split
    // take the groups cuDNN and cuda's split take), so every cuda group ran on the host.
    EXPECT_EQ(static_cast<int>(calls.shapes.size()), groups_on_cuda) << name;
    checked_total += problems;
    std::printf("%s: %d conv/deconv groups on cuda (%d transposed); %zu ran on the reference inputs as %d "
                "distinct problems, %zu refused by cuDNN's descriptors\n",
                name.c_str(), groups_on_cuda, transposed, calls.shapes.size(), problems, calls.failures.size());
  });
  EXPECT_GT(checked_total, 0);
#endif
}

}  // namespace
}  // namespace hetpass
