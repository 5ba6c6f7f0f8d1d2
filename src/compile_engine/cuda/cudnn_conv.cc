// cuDNN convolution kernels (see cudnn_conv.h). One kernel template serves both providers: the
// group type (ConvGroup / DeconvGroup) decides the matcher, the problem's sizes (ConvShapeOf /
// DeconvShapeOf, the very functions the host kernels call, so both devices refuse the same
// arguments with the same messages) and whether cuDNN runs forward or backward-data.
//
// Run: arguments checked as the host kernels check them (count, dtype, rank, channels, groups,
// window, bias size, result shape), turned into a runtime::cuda_api::ConvProblem and enqueued
// on the device's stream; the plan for the problem is made on first use and kept by the
// instance, so a dynamic batch costs one plan per distinct batch.
#include "compile_engine/cuda/cudnn_conv.h"

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compile_engine/group_match.h"
#include "compile_engine/group_provider.h"
#include "passes/support/status_macros.h"

#ifdef HETPASS_HAS_CUDA
#include "runtime/cuda/cuda_api.h"
#include "runtime/cuda/cudnn.h"
#endif

namespace hetpass::cuda {
namespace {

using group_match::ConvGroup;
using group_match::DeconvGroup;

// What differs between the two providers.
template <typename Group>
struct Kind;
template <>
struct Kind<ConvGroup> {
  static constexpr char kProvider[] = "cudnn.conv2d";
  static constexpr char kLibraryOp[] = "cudnn conv2d";
  static constexpr OpId kAnchor = OpId::kNnConv2d;
  // NCHW only: the blocked layouts are the host's (block-conv-layout runs for cpu and sim), and
  // so is the residual add MatchConvGroup admits on a blocked result.
  static std::optional<ConvGroup> Match(const Function& f) {
    std::optional<ConvGroup> g = group_match::MatchConvGroup(f);
    if (g && (g->in_block != 0 || g->out_block != 0 || g->has_residual())) return std::nullopt;
    return g;
  }
};
template <>
struct Kind<DeconvGroup> {
  static constexpr char kProvider[] = "cudnn.conv2d_transpose";
  static constexpr char kLibraryOp[] = "cudnn conv2d_transpose";
  static constexpr OpId kAnchor = OpId::kNnConv2dTranspose;
  static std::optional<DeconvGroup> Match(const Function& f) { return group_match::MatchDeconvGroup(f); }
};

// The group, when cuDNN's legacy descriptors can express it (symmetric padding).
template <typename Group>
std::optional<Group> MatchCudnn(const Function& f) {
  std::optional<Group> g = Kind<Group>::Match(f);
  if (!g || !g->symmetric_padding()) return std::nullopt;
  return g;
}

#ifdef HETPASS_HAS_CUDA
using runtime::cuda_api::ConvProblem;

void SetWindow(const group_match::ConvWindow& g, ConvProblem& p) {
  p.groups = g.groups;
  p.stride = g.stride;
  p.dilation = g.dilation;
  p.pad = {g.pad[0], g.pad[1]};  // symmetric (MatchCudnn)
}

absl::StatusOr<ConvProblem> SizesOf(const ConvGroup& g, const TensorArg& x, const TensorArg& w) {
  ASSIGN_OR_RETURN(const group_match::ConvShape s, group_match::ConvShapeOf(g, x.shape, w.shape));
  ConvProblem p;
  p.n = s.n, p.c = s.c, p.h = s.h, p.w = s.w, p.oc = s.oc, p.oh = s.oh, p.ow = s.ow, p.kh = s.kh, p.kw = s.kw;
  SetWindow(g, p);
  return p;
}

absl::StatusOr<ConvProblem> SizesOf(const DeconvGroup& g, const TensorArg& x, const TensorArg& w) {
  ASSIGN_OR_RETURN(const group_match::DeconvShape s, group_match::DeconvShapeOf(g, x.shape, w.shape));
  ConvProblem p;
  p.transposed = true;
  p.n = s.n, p.c = s.c, p.h = s.h, p.w = s.w, p.oc = s.oc, p.oh = s.oh, p.ow = s.ow, p.kh = s.kh, p.kw = s.kw;
  SetWindow(g, p);
  return p;
}

// The problem of one call, with the host kernels' argument checks and messages.
template <typename Group>
absl::StatusOr<ConvProblem> ProblemOf(const Group& g, absl::Span<const TensorArg> args) {
  if (static_cast<int>(args.size()) != g.num_params + 1) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: expected %d arguments (%d parameters, 1 result), got %d",
                                                      g.function, g.num_params + 1, g.num_params, args.size()));
  }
  const TensorArg& x = args[g.data];
  const TensorArg& w = args[g.weight];
  const TensorArg& y = args[g.num_params];
  RETURN_IF_ERROR(group_match::CheckF32Arg(g.function, g.Arg("data", g.data), "data", x, 4));
  RETURN_IF_ERROR(group_match::CheckF32Arg(g.function, g.Arg("weight", g.weight), "weight", w, 4));
  RETURN_IF_ERROR(group_match::CheckF32Arg(g.function, "result", "result", y, 4));
  ASSIGN_OR_RETURN(ConvProblem p, SizesOf(g, x, w));
  if (g.has_bias()) {
    const TensorArg& b = args[g.bias];
    RETURN_IF_ERROR(group_match::CheckF32Arg(g.function, g.Arg("bias", g.bias), "bias", b, 1));
    if (b.shape[0] != p.oc) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: %s has %d elements but %s has %d output channels",
                                                        g.function, g.Arg("bias", g.bias), b.shape[0],
                                                        g.Arg("weight", g.weight), p.oc));
    }
  }
  if (y.shape[0] != p.n || y.shape[1] != p.oc || y.shape[2] != p.oh || y.shape[3] != p.ow) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: result is %s, expected [%d, %d, %d, %d]", g.function,
                                                      group_match::ShapeString(y.shape), p.n, p.oc, p.oh, p.ow));
  }
  p.bias = g.has_bias();
  p.relu = g.relu;
  return p;
}

// A cuDNN error, prefixed with the function it ran for.
absl::Status Named(const std::string& function, const absl::Status& s) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(function, ": ", s.message()));
}

class CudnnInstance : public KernelInstance {
 public:
  explicit CudnnInstance(std::unique_ptr<runtime::cuda_api::Convolutions> convs) : convs_(std::move(convs)) {}
  int64_t plans() const { return convs_->plans(); }

 protected:
  std::unique_ptr<runtime::cuda_api::Convolutions> convs_;
};

template <typename Group>
class Instance final : public CudnnInstance {
 public:
  Instance(Group g, std::unique_ptr<runtime::cuda_api::Convolutions> convs)
      : CudnnInstance(std::move(convs)), g_(std::move(g)) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override {
    ASSIGN_OR_RETURN(const ConvProblem p, ProblemOf(g_, args));
    runtime::cuda_api::ConvPointers ptr;
    ptr.data = static_cast<const float*>(args[g_.data].data);
    ptr.weight = static_cast<const float*>(args[g_.weight].data);
    ptr.bias = g_.has_bias() ? static_cast<const float*>(args[g_.bias].data) : nullptr;
    ptr.out = static_cast<float*>(args[g_.num_params].data);
    return Named(g_.function, convs_->Run(p, ptr, ctx.queue, ctx.workspace));
  }

 private:
  const Group g_;
};
#endif

template <typename Group>
class Kernel final : public CompiledKernel {
 public:
  explicit Kernel(Group g) : g_(std::move(g)) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(const KernelContext& ctx,
                                                              absl::Span<const Tensor* const>) const override {
#ifdef HETPASS_HAS_CUDA
    RETURN_IF_ERROR(
        runtime::cuda_api::RequireCudaDevice(ctx.device, absl::StrCat(g_.function, ": ", Kind<Group>::kProvider))
            .status());
    absl::StatusOr<std::unique_ptr<runtime::cuda_api::Convolutions>> convs = runtime::cuda_api::Convolutions::Create();
    if (!convs.ok()) return Named(g_.function, convs.status());
    return std::make_unique<Instance<Group>>(g_, *std::move(convs));
#else
    (void)ctx;
    return absl::UnimplementedError(absl::StrCat(g_.function, ": this build has no cuda device (HETPASS_CUDA=OFF)"));
#endif
  }
  std::string Describe() const override {
    std::vector<std::string> fused;
    if (g_.has_bias()) fused.push_back("bias");
    if (g_.relu) fused.push_back("relu");
    std::string s = Kind<Group>::kLibraryOp;
    if (!fused.empty()) absl::StrAppend(&s, "[", absl::StrJoin(fused, ","), "]");
    return s;
  }

 private:
  const Group g_;
};

template <typename Group>
absl::StatusOr<std::unique_ptr<CompiledKernel>> Compile(const Function& primitive) {
  std::optional<Group> g = MatchCudnn<Group>(primitive);
  if (!g) {
    return absl::UnimplementedError(absl::StrCat(Kind<Group>::kProvider, " does not take @", primitive.name()));
  }
  return std::make_unique<Kernel<Group>>(*std::move(g));
}

template <typename Group>
bool Takes(const Function& f) {
  return MatchCudnn<Group>(f).has_value();
}
template <typename Group>
bool Runs(const OpDef& op) {
  return OpIdOf(op) == Kind<Group>::kAnchor;
}
template <typename Group>
bool Fuses(const OpDef& op) {
  return OpIdOf(op) == Kind<Group>::kAnchor || group_match::IsEpilogueOp(OpIdOf(op), /*allow_add=*/false);
}

template <typename Group>
absl::Status CheckDescriptors(const Function& primitive, absl::Span<const TensorArg> args) {
  std::optional<Group> g = MatchCudnn<Group>(primitive);
  if (!g) {
    return absl::UnimplementedError(absl::StrCat(Kind<Group>::kProvider, " does not take @", primitive.name()));
  }
#ifdef HETPASS_HAS_CUDA
  ASSIGN_OR_RETURN(const ConvProblem p, ProblemOf(*g, args));
  if (p.n == 0 || p.oc == 0 || p.oh == 0 || p.ow == 0) return absl::OkStatus();  // Run does no work
  return Named(g->function, runtime::cuda_api::CheckConvDescriptors(p));
#else
  (void)args;
  return absl::UnimplementedError(absl::StrCat(g->function, ": this build has no cuda device (HETPASS_CUDA=OFF)"));
#endif
}

}  // namespace

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileCudnnConv(const Function& primitive) {
  return Compile<ConvGroup>(primitive);
}
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileCudnnDeconv(const Function& primitive) {
  return Compile<DeconvGroup>(primitive);
}

const KernelProvider& CudnnConvProvider() {
  static const GroupProvider provider({Kind<ConvGroup>::kProvider, kNeedsKernelLibrary, &Takes<ConvGroup>,
                                       &Compile<ConvGroup>, &Runs<ConvGroup>, &Fuses<ConvGroup>});
  return provider;
}
const KernelProvider& CudnnDeconvProvider() {
  static const GroupProvider provider({Kind<DeconvGroup>::kProvider, kNeedsKernelLibrary, &Takes<DeconvGroup>,
                                       &Compile<DeconvGroup>, &Runs<DeconvGroup>, &Fuses<DeconvGroup>});
  return provider;
}

absl::Status CheckCudnnDescriptors(const Function& primitive, absl::Span<const TensorArg> args) {
  if (MatchCudnn<ConvGroup>(primitive)) return CheckDescriptors<ConvGroup>(primitive, args);
  return CheckDescriptors<DeconvGroup>(primitive, args);
}

int64_t CudnnPlans(const KernelInstance& instance) {
#ifdef HETPASS_HAS_CUDA
  if (const auto* i = dynamic_cast<const CudnnInstance*>(&instance)) return i->plans();
#else
  (void)instance;
#endif
  return -1;
}

}  // namespace hetpass::cuda
