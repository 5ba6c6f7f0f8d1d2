// The transposed-convolution kernel (nn.conv2d_transpose [+ nn.bias_add] [+ nn.relu] as one
// oneDNN deconvolution and one bias/ReLU pass; see deconv_kernel.h for the design). The
// structure follows conv_kernel.cc, smaller: execute arguments are built per call.
//
// Phases:
//   match        group_match::MatchDeconvGroup (shared with cuda's cuDNN kernel): the body
//                is conv2d_transpose -> [bias_add] -> [relu] over distinct f32 parameters;
//                attributes normalised to the registry's semantics;
//                output_padding >= stride is left to the reference kernel (oneDNN's size check
//                cannot express it)
//   instantiate  constants checked against the declared types and each other (channels,
//                groups, bias size); constant weights reordered once into the layout oneDNN
//                picks, at load when the data's C, H, W are static (by creating the N = 1
//                primitive), else on the first run
//   run          arguments checked (count, dtype, rank, channels, groups, bias, output shape);
//                the primitive for this (data shape, weight shape) taken from the instance's
//                cache or created; reorder in, deconvolution, reorder out on a per-thread
//                stream and user scratchpad with KernelLibraryThreads() OpenMP threads; then
//                bias and ReLU in one pass over the result
#include "compile_engine/deconv_kernel.h"

#include <algorithm>
#include <array>
#include <dnnl.hpp>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compile_engine/onednn_common.h"
#include "compile_engine/group_provider.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/status_macros.h"

namespace hetpass {
namespace {

using namespace ::hetpass::onednn;  // NOLINT: the shared oneDNN helpers

using dnnl::memory;
using Tag = memory::format_tag;
using DataType = memory::data_type;

// The registry ops this kernel implements.
constexpr OpId kDeconvOp = OpId::kNnConv2dTranspose;

// ---- match (group_match.h, shared with cuda's cuDNN kernel) ---------------------------------

using group_match::DeconvGroup;
using group_match::DeconvShape;
using group_match::MatchDeconvGroup;

// ---- shapes and layouts ----------------------------------------------------------------------

// oneDNN's deconvolution weights are logically (g)oihw; ours, [C, OC/groups, KH, KW] row-major,
// are exactly its iohw (giohw grouped: [g][C/g][OC/g][KH][KW]).
memory::desc WeightsDesc(const DeconvShape& s, int64_t groups, Tag tag) {
  if (groups == 1) return memory::desc({s.oc, s.c, s.kh, s.kw}, DataType::f32, tag);
  return memory::desc({groups, s.ocg, s.c / groups, s.kh, s.kw}, DataType::f32, tag);
}

memory::desc PlainWeights(const DeconvShape& s, int64_t groups) {
  return WeightsDesc(s, groups, groups == 1 ? Tag::iohw : Tag::giohw);
}

// ---- instance ------------------------------------------------------------------------------

class DeconvInstance final : public KernelInstance {
 public:
  DeconvInstance(DeconvGroup group, const dnnl::engine& engine)
      : group_(std::move(group)), engine_(engine) {}

  absl::Status Load(absl::Span<const Tensor* const> constants);
  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override;

 private:
  // One deconvolution for one (data shape, weight shape), on the src/dst layouts oneDNN picked
  // (`any`: blocked nChw16c / nChw8c where it has a blocked kernel), with reorders from and to
  // the caller's plain NCHW around it when those differ.
  struct Primitive : PlainLayoutBridge {  // layouts, reorders and the scratch region
    dnnl::deconvolution_forward deconv;
    std::shared_ptr<const memory> weights;  // the packed constant, null for run-time weights
    memory::desc weights_plain;
    memory::desc deconv_scratchpad;  // user-managed
  };

  // The problem for data [n, c, h, w] and weight [c, ocg, kh, kw], or InvalidArgument if the
  // channels or groups do not fit or the padding crops more than the output.
  absl::StatusOr<DeconvShape> Shape(absl::Span<const int64_t> x, absl::Span<const int64_t> w) const;
  absl::StatusOr<std::shared_ptr<const Primitive>> GetPrimitive(const DeconvShape& s);
  // The constant weights in `layout`, reordered on first request. Requires mu_.
  std::shared_ptr<const memory> PackedWeights(const DeconvShape& s, const memory::desc& layout);
  absl::Status CheckArg(const TensorArg& a, absl::string_view role, int index, int rank) const;
  // Nothing to scatter (C, H, W, KH or KW is 0): every output is the (ReLU'd) bias.
  void FillWithBias(const float* bias, float* out, const DeconvShape& s) const;
  // Adds the bias and applies the ReLU in place on the plain result, one pass. Not fused into
  // the primitive: oneDNN 2.6's deconvolution (convolution backward-data kernels underneath)
  // applies both in slow generic loops. Measured on the mask head ([16, 32, 14, 14], 2x2
  // stride 2, one thread, blocked layouts): 0.18 ms plain, 1.6 ms with its bias, 18-30 ms with
  // its ReLU post-op; this pass costs ~0.1 ms.
  void BiasRelu(const float* bias, float* out, const DeconvShape& s) const;

  const DeconvGroup group_;
  const dnnl::engine& engine_;
  std::optional<Tensor> weight_;  // the constant weights, kept for repacking
  std::optional<Tensor> bias_;    // the constant bias

  std::mutex mu_;
  absl::flat_hash_map<std::array<int64_t, 7>, std::shared_ptr<const Primitive>>
      cache_;                                                                   // guarded by mu_
  std::vector<std::pair<memory::desc, std::shared_ptr<const memory>>> packed_;  // guarded by mu_
};

absl::StatusOr<DeconvShape> DeconvInstance::Shape(absl::Span<const int64_t> x,
                                                  absl::Span<const int64_t> w) const {
  return group_match::DeconvShapeOf(group_, x, w);
}

absl::Status DeconvInstance::Load(absl::Span<const Tensor* const> constants) {
  const DeconvGroup& g = group_;
  if (static_cast<int>(constants.size()) != g.num_params) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: expected %d constants (one per parameter, null if not constant), got %d", g.function,
        g.num_params, constants.size()));
  }
  auto check = [&](int param, absl::string_view role) -> absl::Status {
    const Tensor* t = constants[param];
    const Type& declared = g.param_types[param];
    bool ok = t->dtype() == DType::kF32 && t->rank() == declared.rank();
    for (int d = 0; ok && d < t->rank(); ++d) {
      const DimExpr& dim = declared.shape()[d];
      ok = !dim.is_constant() || dim.constant() == t->shape()[d];
    }
    if (ok) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: constant %s is %s%s but the parameter is declared %s", g.function, g.Arg(role, param),
        DTypeName(t->dtype()), ShapeString(t->shape()), declared.ToString()));
  };
  if (constants[g.data] != nullptr) RETURN_IF_ERROR(check(g.data, "data"));
  if (constants[g.weight] != nullptr) {
    RETURN_IF_ERROR(check(g.weight, "weight"));
    weight_ = *constants[g.weight];
    if (weight_->shape()[0] % g.groups != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: constant %s has %d input channels, not divisible by %d groups",
                          g.function, g.Arg("weight", g.weight), weight_->shape()[0], g.groups));
    }
  }
  if (g.has_bias() && constants[g.bias] != nullptr) {
    RETURN_IF_ERROR(check(g.bias, "bias"));
    bias_ = *constants[g.bias];
    if (weight_ && bias_->shape()[0] != weight_->shape()[1] * g.groups) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: constant %s has %d elements but constant %s has %d output channels",
                          g.function, g.Arg("bias", g.bias), bias_->shape()[0],
                          g.Arg("weight", g.weight), weight_->shape()[1] * g.groups));
    }
  }
  // The data's declared channels against the constant weights; and, when C, H, W are all
  // static, prepack now through the N = 1 primitive.
  const std::vector<DimExpr>& x = g.param_types[g.data].shape();
  if (weight_ && x[1].is_constant() && x[1].constant() != weight_->shape()[0]) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s is declared %s but constant %s %s expects %d channels", g.function,
        g.Arg("data", g.data), g.param_types[g.data].ToString(), g.Arg("weight", g.weight),
        ShapeString(weight_->shape()), weight_->shape()[0]));
  }
  if (weight_ && weight_->num_elements() > 0 && x[1].is_constant() && x[2].is_constant() &&
      x[3].is_constant() && x[2].constant() > 0 && x[3].constant() > 0) {
    const int64_t dims[4] = {1, x[1].constant(), x[2].constant(), x[3].constant()};
    ASSIGN_OR_RETURN(DeconvShape s, Shape(dims, weight_->shape()));
    if (s.oh > 0 && s.ow > 0) {
      ASSIGN_OR_RETURN(auto primitive, GetPrimitive(s));
      (void)primitive;
    }
  }
  return absl::OkStatus();
}

std::shared_ptr<const memory> DeconvInstance::PackedWeights(const DeconvShape& s,
                                                            const memory::desc& layout) {
  for (const auto& [desc, mem] : packed_) {
    if (desc == layout) return mem;
  }
  const memory::desc plain = PlainWeights(s, group_.groups);
  memory user(plain, engine_, const_cast<uint8_t*>(weight_->data()));
  // The constant as stored (kept in weight_) where the layouts agree.
  std::shared_ptr<const memory> packed = PackedConstant(user, layout, engine_);
  packed_.emplace_back(layout, packed);
  return packed;
}

absl::StatusOr<std::shared_ptr<const DeconvInstance::Primitive>> DeconvInstance::GetPrimitive(
    const DeconvShape& s) {
  const DeconvGroup& g = group_;
  std::lock_guard<std::mutex> lock(mu_);
  const std::array<int64_t, 7> key = s.Key();
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  if (cache_.size() >= static_cast<size_t>(deconv_kernel_internal::kMaxCachedShapes)) {
    cache_.clear();  // in-flight runs keep their primitives alive (shared_ptr)
  }
  try {
    ScopedLibraryThreads threads;  // oneDNN sizes its blocking for the thread count it sees
    const memory::desc src_plain({s.n, s.c, s.h, s.w}, DataType::f32, Tag::nchw);
    const memory::desc dst_plain({s.n, s.oc, s.oh, s.ow}, DataType::f32, Tag::nchw);
    const memory::desc src({s.n, s.c, s.h, s.w}, DataType::f32, Tag::any);
    const memory::desc dst({s.n, s.oc, s.oh, s.ow}, DataType::f32, Tag::any);
    const memory::desc weights =
        weight_ ? WeightsDesc(s, g.groups, Tag::any) : PlainWeights(s, g.groups);
    const memory::dims strides = {g.stride[0], g.stride[1]};
    const memory::dims dilates = {g.dilation[0] - 1, g.dilation[1] - 1};
    const memory::dims pad_l = {g.pad[0], g.pad[1]};
    const memory::dims pad_r = {g.pad[2], g.pad[3]};
    // No bias argument and no post-ops: see BiasRelu.
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::deconvolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                                 dnnl::algorithm::deconvolution_direct, src,
                                                 weights, dst, strides, dilates, pad_l, pad_r);
    const dnnl::deconvolution_forward::primitive_desc pd(desc, attr, engine_);
    auto primitive = std::make_shared<Primitive>();
    Primitive& p = *primitive;
    p.deconv = dnnl::deconvolution_forward(pd);
    p.weights_plain = PlainWeights(s, g.groups);
    p.deconv_scratchpad = pd.scratchpad_desc();
    static_cast<PlainLayoutBridge&>(p) = MakePlainLayoutBridge(
        engine_, src_plain, pd.src_desc(), pd.dst_desc(), dst_plain, p.deconv_scratchpad);
    if (weight_) p.weights = PackedWeights(s, pd.weights_desc());
    cache_.emplace(key, primitive);
    return std::shared_ptr<const Primitive>(std::move(primitive));
  } catch (const std::exception& e) {
    return LibraryError(g.function, e);
  }
}

absl::Status DeconvInstance::CheckArg(const TensorArg& a, absl::string_view role, int index,
                                  int rank) const {
  return CheckF32Arg(group_.function,
                     index < group_.num_params ? group_.Arg(role, index) : std::string(role),
                     role, a, rank);
}

void DeconvInstance::FillWithBias(const float* bias, float* out, const DeconvShape& s) const {
  const int64_t plane = s.oh * s.ow;
  for (int64_t i = 0; i < s.n; ++i) {
    for (int64_t c = 0; c < s.oc; ++c) {
      float v = bias != nullptr ? bias[c] : 0.0f;
      if (group_.relu) v = std::max(v, 0.0f);
      std::fill_n(out + (i * s.oc + c) * plane, plane, v);
    }
  }
}

absl::Status DeconvInstance::Run(const KernelContext& ctx, absl::Span<const TensorArg> args) {
  const DeconvGroup& g = group_;
  if (static_cast<int>(args.size()) != g.num_params + 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: expected %d arguments (%d parameters, 1 result), got %d", g.function,
                        g.num_params + 1, g.num_params, args.size()));
  }
  const TensorArg& x = args[g.data];
  const TensorArg& w = args[g.weight];
  const TensorArg& y = args[g.num_params];
  RETURN_IF_ERROR(CheckArg(x, "data", g.data, 4));
  RETURN_IF_ERROR(CheckArg(w, "weight", g.weight, 4));
  RETURN_IF_ERROR(CheckArg(y, "result", g.num_params, 4));
  if (weight_ && !std::equal(w.shape.begin(), w.shape.end(), weight_->shape().begin(),
                             weight_->shape().end())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s is %s but the constant bound at load is %s", g.function, g.Arg("weight", g.weight),
        ShapeString(w.shape), ShapeString(weight_->shape())));
  }
  ASSIGN_OR_RETURN(const DeconvShape s, Shape(x.shape, w.shape));
  const float* bias_data = nullptr;
  if (g.has_bias()) {
    const TensorArg& b = args[g.bias];
    RETURN_IF_ERROR(CheckArg(b, "bias", g.bias, 1));
    if (b.shape[0] != s.oc) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: %s has %d elements but %s has %d output channels", g.function,
                          g.Arg("bias", g.bias), b.shape[0], g.Arg("weight", g.weight), s.oc));
    }
    bias_data = bias_ ? bias_->data_as<float>() : b.as<const float>();
  }
  if (y.shape[0] != s.n || y.shape[1] != s.oc || y.shape[2] != s.oh || y.shape[3] != s.ow) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: result is %s, expected [%d, %d, %d, %d]",
                                                      g.function, ShapeString(y.shape), s.n, s.oc,
                                                      s.oh, s.ow));
  }
  if (y.num_elements() == 0) return absl::OkStatus();
  if (s.c == 0 || s.h == 0 || s.w == 0 || s.kh == 0 || s.kw == 0) {
    FillWithBias(bias_data, y.as<float>(), s);
    return absl::OkStatus();
  }

  ASSIGN_OR_RETURN(std::shared_ptr<const Primitive> primitive, GetPrimitive(s));
  const Primitive& p = *primitive;
  uint8_t* scratch = nullptr;
  if (p.scratch_bytes > 0) {
    scratch = static_cast<uint8_t*>(ThreadScratch(p.scratch_bytes));
    if (scratch == nullptr) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%s: cannot allocate %d bytes of onednn scratch", g.function, p.scratch_bytes));
    }
  }
  try {
    ScopedLibraryThreads threads;
    dnnl::stream& stream = ThreadStream(engine_);
    // Memory objects are cheap handles: built per call (the conv kernel's re-pointed argument
    // maps save little at these sizes).
    auto with_scratchpad = [&](std::unordered_map<int, memory> args, const memory::desc& pad) {
      if (pad.get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, memory(pad, engine_, scratch));
      return args;
    };
    const memory src = p.reorder_in ? memory(p.src, engine_, scratch + p.src_offset)
                                    : memory(p.src_plain, engine_, x.data);
    const memory dst = p.reorder_out ? memory(p.dst, engine_, scratch + p.dst_offset)
                                     : memory(p.dst_plain, engine_, y.data);
    if (p.reorder_in) {
      p.reorder_in->execute(
          stream, with_scratchpad(
                      {{DNNL_ARG_FROM, memory(p.src_plain, engine_, x.data)}, {DNNL_ARG_TO, src}},
                      p.in_scratchpad));
    }
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, src},
        {DNNL_ARG_DST, dst},
        {DNNL_ARG_WEIGHTS, p.weights ? *p.weights : memory(p.weights_plain, engine_, w.data)},
    };
    p.deconv.execute(stream, with_scratchpad(std::move(args), p.deconv_scratchpad));
    if (p.reorder_out) {
      p.reorder_out->execute(
          stream, with_scratchpad(
                      {{DNNL_ARG_FROM, dst}, {DNNL_ARG_TO, memory(p.dst_plain, engine_, y.data)}},
                      p.out_scratchpad));
    }
    stream.wait();
  } catch (const std::exception& e) {
    return LibraryError(g.function, e);
  }
  if (g.has_bias() || g.relu) BiasRelu(bias_data, y.as<float>(), s);
  return absl::OkStatus();
}

void DeconvInstance::BiasRelu(const float* bias, float* out, const DeconvShape& s) const {
  const int64_t plane = s.oh * s.ow;
  const bool relu = group_.relu;
  for (int64_t i = 0; i < s.n; ++i) {
    for (int64_t c = 0; c < s.oc; ++c) {
      const float b = bias != nullptr ? bias[c] : 0.0f;
      float* row = out + (i * s.oc + c) * plane;
      for (int64_t k = 0; k < plane; ++k) {
        const float v = row[k] + b;
        row[k] = relu ? std::max(v, 0.0f) : v;
      }
    }
  }
}

// ---- compiled kernel -----------------------------------------------------------------------

class DeconvKernel final : public CompiledKernel {
 public:
  DeconvKernel(DeconvGroup group, const dnnl::engine& engine)
      : group_(std::move(group)), engine_(engine) {}

  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const> constants) const override {
    auto instance = std::make_unique<DeconvInstance>(group_, engine_);
    RETURN_IF_ERROR(instance->Load(constants));
    return std::unique_ptr<KernelInstance>(std::move(instance));
  }

  std::string Describe() const override {
    std::vector<std::string> fused;
    if (group_.has_bias()) fused.push_back("bias");
    if (group_.relu) fused.push_back("relu");
    std::string s = "onednn conv2d_transpose";
    if (!fused.empty()) absl::StrAppend(&s, "[", absl::StrJoin(fused, ","), "]");
    return s;
  }

 private:
  const DeconvGroup group_;
  const dnnl::engine& engine_;
};

}  // namespace

bool IsDeconvGroup(const Function& primitive) { return MatchDeconvGroup(primitive).has_value(); }

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileDeconvGroup(const Function& primitive) {
  std::optional<DeconvGroup> group = MatchDeconvGroup(primitive);
  if (!group) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "@%s: not a deconv group (a primitive function of nn.conv2d_transpose over f32 NCHW data "
        "and [C, OC/groups, KH, KW] weights with output_padding below the stride, optionally "
        "nn.bias_add on axis 1, then optionally nn.relu)",
        primitive.name()));
  }
  const dnnl::engine* engine = CpuEngine();
  if (engine == nullptr) {
    return absl::InternalError(absl::StrFormat("@%s: onednn: no cpu engine", primitive.name()));
  }
  return std::unique_ptr<CompiledKernel>(
      std::make_unique<DeconvKernel>(*std::move(group), *engine));
}


namespace {
bool DeconvRuns(const OpDef& op) { return OpIdOf(op) == kDeconvOp; }
bool DeconvFuses(const OpDef& op) {
  return OpIdOf(op) == kDeconvOp || IsEpilogueOp(OpIdOf(op), /*allow_add=*/false);
}
}  // namespace

const KernelProvider& DeconvKernelProvider() {
  static const GroupProvider provider({"onednn.conv2d_transpose", kNeedsKernelLibrary,
                                       &IsDeconvGroup, &CompileDeconvGroup, &DeconvRuns,
                                       &DeconvFuses});
  return provider;
}

}  // namespace hetpass
