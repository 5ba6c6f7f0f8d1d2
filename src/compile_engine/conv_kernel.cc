// The conv2d kernel (nn.conv2d [+ bias] [+ residual add] [+ nn.relu] as one fused oneDNN
// convolution)
// exists because convolutions are nearly all the work of the ResNet-like models
// (shared/models/resnet_tiny_dynamic_batch: 15 convs, batch symbolic) and the registry's
// reference conv is a scalar loop in double precision, fit to be an oracle, not a kernel. The
// structure follows dense_kernel.cc: per-shape primitives cached under a mutex, constant
// weights reordered once, bias and ReLU fused (see conv_kernel.h for the design).
//
// Phases:
//   match        group_match::MatchConvGroup (shared with cuda's cuDNN kernel): the body is
//                conv2d -> [bias] -> [add residual] -> [relu] over distinct f32 parameters, the
//                residual (a ResNet block's skip connection, blocked results only) fused as
//                oneDNN's `sum` post-op: the result buffer is filled with the residual, then
//                the convolution adds into it (bias first, ReLU after), so a block's last conv
//                is one library call instead of a conv and a JIT add+relu over its output;
//                strides /
//                padding / dilation / groups normalised to the registry's semantics
//   instantiate  constants checked against the declared types and each other (channels,
//                groups, bias size); constant weights reordered once into the layout oneDNN
//                picks, at load when the data's C, H, W are static (by creating the N = 1
//                primitive), else on the first run
//   layouts      NCHW data and result: src/dst `any` (oneDNN picks, e.g. nhwc for brgconv) with
//                reorders from and to NCHW around it. Blocked data or result (NCHW<b>c, from
//                block-conv-layout): oneDNN's own nChw<b>c, so a chain of convolutions runs
//                without reorders; only if oneDNN has no optimised kernel for those layouts
//                (a reference implementation) does it fall back to `any` with reorders.
//   winograd     blocked 16-channel 3x3 stride-1 undilated ungrouped convolutions with at least
//                32 input and output channels use oneDNN's Winograd F(2x2, 3x3) kernel on
//                AVX-512: measured on this project's machine (1 thread, batch 1) 21.5 vs 26 us
//                at 32 channels 16x16, 17 vs 27 us at 64 channels 8x8, but 41 vs 30 us at 16
//                channels 32x32, hence the 32-channel floor. Its rounding differs from direct
//                convolution's in the last bits (~1e-6 relative), like any reassociation.
//                Tiered: oneDNN's Winograd weight transform is slow (~0.7 ms for 64x64x3x3,
//                against 10 us for the direct layout; resnet_tiny's six such convs added ~2.6
//                ms to a ~4 ms load), so a shape starts on the direct kernel and switches to
//                Winograd on its kWinogradAfterRuns-th run, which pays the transform: loading
//                stays cheap, a shape that keeps running gets the faster kernel.
//   run          arguments checked (count, dtype, rank, channels, groups, bias, output shape);
//                the primitive for this (data shape, weight shape) taken from the instance's
//                cache or created; executed on a per-thread stream and a per-thread user
//                scratchpad (ThreadScratch) with KernelLibraryThreads() OpenMP threads
#include "compile_engine/conv_kernel.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <array>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compile_engine/dense_kernel.h"
#include "compile_engine/group_provider.h"
#include "compile_engine/onednn_common.h"
#include "passes/shape_funcs/channel_layout.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/status_macros.h"

namespace hetpass {
namespace {

using namespace ::hetpass::onednn;  // NOLINT: the shared oneDNN helpers

using dnnl::memory;
using Tag = memory::format_tag;
using DataType = memory::data_type;

// The registry ops this kernel implements.
constexpr OpId kConvOp = OpId::kNnConv2d;

// ---- match (group_match.h, shared with cuda's cuDNN kernel) ---------------------------------

using group_match::ConvGroup;
using group_match::ConvShape;
using group_match::MatchConvGroup;

// ---- oneDNN plumbing (as in dense_kernel.cc) -------------------------------------------------

// OIHW row-major as oneDNN weights: oihw, or goihw [g, oc/g, icg, kh, kw] when grouped.
memory::desc WeightsDesc(const ConvShape& s, int64_t groups, Tag tag) {
  if (groups == 1) return memory::desc({s.oc, s.icg, s.kh, s.kw}, DataType::f32, tag);
  return memory::desc({groups, s.oc / groups, s.icg, s.kh, s.kw}, DataType::f32, tag);
}

memory::desc PlainWeights(const ConvShape& s, int64_t groups) {
  return WeightsDesc(s, groups, groups == 1 ? Tag::oihw : Tag::goihw);
}

// Whether the group's convolutions run as Winograd (see the file comment): the window, the
// layouts and the weight's channels, all static, and an AVX-512 machine.
bool UsesWinograd(const ConvGroup& g) {
  const std::vector<DimExpr>& w = g.param_types[g.weight].shape();
  for (const DimExpr& d : w) {
    if (!d.is_constant()) return false;
  }
  const int64_t oc = w[0].constant(), ic = w[1].constant();
  return g.in_block == 16 && g.out_block == 16 && g.groups == 1 && w[2].constant() == 3 &&
         w[3].constant() == 3 && g.stride == std::array<int64_t, 2>{1, 1} &&
         g.dilation == std::array<int64_t, 2>{1, 1} && oc % 16 == 0 && ic % 16 == 0 && oc >= 32 &&
         ic >= 32 && dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core;
}

// ---- instance ------------------------------------------------------------------------------

class ConvInstance final : public KernelInstance {
 public:
  ConvInstance(ConvGroup group, const dnnl::engine& engine)
      : group_(std::move(group)), engine_(engine), winograd_(UsesWinograd(group_)) {}

  absl::Status Load(absl::Span<const Tensor* const> constants);
  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override;
  bool Absorbed(int param) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return param == group_.weight && weight_ && weight_->absorbed();
  }

 private:
  // The data pointers of one call.
  struct Pointers {
    void* x;        // data, plain NCHW
    void* y;        // result, plain NCHW
    void* w;        // run-time weights, plain (g)oihw (unused with packed constants)
    void* bias;     // null without bias_add
    void* scratch;  // the thread's scratch region (see Primitive::scratch_bytes)
  };
  // Execute arguments of the three steps (reorder in, convolution, reorder out).
  struct ExecArgs {
    std::unordered_map<int, memory> in, conv, out;
  };

  // One convolution for one (data shape, weight shape), on the layouts oneDNN picked for
  // src/dst (`any`) with reorders from and to the caller's layout (NCHW or nChw<b>c) around it
  // when those differ; blocked callers ask for their own layout first (no reorders).
  struct Primitive : PlainLayoutBridge {  // layouts, reorders and the scratch region
    dnnl::convolution_forward conv;
    std::shared_ptr<const memory> weights;  // the packed constant, null for run-time weights
    memory::desc weights_plain, bias;
    memory::desc conv_scratchpad;  // user-managed
    // Execute arguments built once and re-pointed per call (set_data_handle); one caller at a
    // time uses them, a caller finding them busy builds its own.
    mutable std::mutex args_mu;
    mutable std::optional<ExecArgs> args;  // guarded by args_mu
    // Winograd tiering (see the file comment): a direct primitive of a Winograd-eligible
    // group counts its runs and is replaced by the Winograd one at kWinogradAfterRuns.
    bool winograd = false;
    // With a residual and a result reordered out: the residual into the convolution's dst.
    std::optional<dnnl::reorder> residual_in;
    mutable std::atomic<bool> upgrade{false};
    mutable std::atomic<int> runs{0};
  };

  // The sum post-op adds the convolution into what the destination holds: the residual is
  // copied there first (a reorder into oneDNN's layout when the result is reordered out).
  void FillResidual(const Primitive& p, const Pointers& ptr, const TensorArg& residual,
                    dnnl::stream& stream) const;
  ExecArgs MakeArgs(const Primitive& p, const Pointers& ptr) const;
  static void Repoint(const Primitive& p, const Pointers& ptr, ExecArgs& args);

  // The problem for data [n, c, h, w] and weight [oc, icg, kh, kw], or InvalidArgument if the
  // channels, groups or window do not fit.
  absl::StatusOr<ConvShape> Shape(absl::Span<const int64_t> x, absl::Span<const int64_t> w) const;
  // The cached primitive for `s`, built (direct) on first request.
  absl::StatusOr<std::shared_ptr<const Primitive>> GetPrimitive(const ConvShape& s);
  // Replaces `seen`, the direct primitive of a Winograd-eligible shape, by the Winograd one
  // (or keeps it, no longer upgradable, where oneDNN has no Winograd kernel for the shape).
  absl::StatusOr<std::shared_ptr<const Primitive>> Upgrade(const ConvShape& s,
                                                           const Primitive* seen);
  // A new primitive for `s`, Winograd if asked and available. Requires mu_.
  absl::StatusOr<std::shared_ptr<Primitive>> Build(const ConvShape& s, bool winograd);
  // The constant weights in `layout`, reordered on first request. Requires mu_.
  std::shared_ptr<const memory> PackedWeights(const ConvShape& s, const memory::desc& layout);
  absl::Status CheckArg(const TensorArg& a, absl::string_view role, int index, int rank) const;
  // C, KH or KW == 0: the sums are empty, the result is the (ReLU'd) bias [+ residual].
  void RunEmptyReduction(const float* bias, const float* residual, float* out,
                         const ConvShape& s) const;

  const ConvGroup group_;
  const dnnl::engine& engine_;
  const bool winograd_;
  std::optional<PackedWeight> weight_;  // the constant weights (held once: onednn_common.h)
  std::optional<Tensor> bias_;    // the constant bias

  mutable std::mutex mu_;
  absl::flat_hash_map<std::array<int64_t, 8>, std::shared_ptr<const Primitive>>
      cache_;  // guarded by mu_
};

absl::StatusOr<ConvShape> ConvInstance::Shape(absl::Span<const int64_t> x,
                                              absl::Span<const int64_t> w) const {
  return group_match::ConvShapeOf(group_, x, w);
}

absl::Status ConvInstance::Load(absl::Span<const Tensor* const> constants) {
  const ConvGroup& g = group_;
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
    weight_.emplace(*constants[g.weight], engine_);
    if (weight_->shape()[0] % g.groups != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: constant %s has %d output channels, not divisible by %d groups",
                          g.function, g.Arg("weight", g.weight), weight_->shape()[0], g.groups));
    }
  }
  if (g.has_bias() && constants[g.bias] != nullptr) {
    RETURN_IF_ERROR(check(g.bias, "bias"));
    bias_ = *constants[g.bias];
    if (weight_ && bias_->num_elements() != weight_->shape()[0]) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: constant %s has %d elements but constant %s has %d output channels",
                          g.function, g.Arg("bias", g.bias), bias_->num_elements(),
                          g.Arg("weight", g.weight), weight_->shape()[0]));
    }
  }
  // The data's declared channels against the constant weights; and, when C, H, W are all
  // static, prepack now through the N = 1 primitive.
  const std::vector<DimExpr>& x = g.param_types[g.data].shape();
  const int64_t channels_per_block = g.in_block > 0 ? g.in_block : 1;
  if (weight_ && x[1].is_constant() &&
      x[1].constant() * channels_per_block != weight_->shape()[1] * g.groups) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s is declared %s but constant %s %s expects %d channels (%d groups)", g.function,
        g.Arg("data", g.data), g.param_types[g.data].ToString(), g.Arg("weight", g.weight),
        ShapeString(weight_->shape()), weight_->shape()[1] * g.groups, g.groups));
  }
  if (weight_ && weight_->num_elements() > 0 && x[1].is_constant() && x[2].is_constant() &&
      x[3].is_constant()) {
    const int64_t dims[4] = {1, x[1].constant(), x[2].constant(), x[3].constant()};
    ASSIGN_OR_RETURN(ConvShape s, Shape(dims, weight_->shape()));
    if (s.c > 0) {
      ASSIGN_OR_RETURN(auto primitive, GetPrimitive(s));
      (void)primitive;
    }
  }
  return absl::OkStatus();
}

std::shared_ptr<const memory> ConvInstance::PackedWeights(const ConvShape& s,
                                                          const memory::desc& layout) {
  return weight_->Get(PlainWeights(s, group_.groups), layout);
}

absl::StatusOr<std::shared_ptr<const ConvInstance::Primitive>> ConvInstance::GetPrimitive(
    const ConvShape& s) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::array<int64_t, 8> key = s.Key();
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  if (cache_.size() >= static_cast<size_t>(conv_kernel_internal::kMaxCachedShapes)) {
    cache_.clear();  // in-flight runs keep their primitives alive (shared_ptr)
  }
  ASSIGN_OR_RETURN(std::shared_ptr<Primitive> primitive, Build(s, /*winograd=*/false));
  primitive->upgrade = winograd_ && (group_.in_block > 0 || group_.out_block > 0);
  cache_.emplace(key, primitive);
  return std::shared_ptr<const Primitive>(std::move(primitive));
}

absl::StatusOr<std::shared_ptr<const ConvInstance::Primitive>> ConvInstance::Upgrade(
    const ConvShape& s, const Primitive* seen) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(s.Key());
  if (it != cache_.end() && it->second.get() != seen) return it->second;  // upgraded meanwhile
  ASSIGN_OR_RETURN(std::shared_ptr<Primitive> winograd, Build(s, /*winograd=*/true));
  seen->upgrade = false;
  if (!winograd->winograd) {  // oneDNN has no Winograd kernel for this problem after all
    if (it != cache_.end()) return it->second;
    return std::shared_ptr<const Primitive>(std::move(winograd));
  }
  cache_[s.Key()] = winograd;
  return std::shared_ptr<const Primitive>(std::move(winograd));
}

absl::StatusOr<std::shared_ptr<ConvInstance::Primitive>> ConvInstance::Build(const ConvShape& s,
                                                                             bool use_winograd) {
  const ConvGroup& g = group_;
  try {
    ScopedLibraryThreads threads;  // oneDNN sizes its blocking for the thread count it sees
    // The caller's layouts, and what the convolution is asked for: oneDNN's choice (`any`)
    // for NCHW callers, the caller's own blocked layout otherwise.
    // MatchConvGroup admits blocks 0 (NCHW), 4, 8 and 16: each has a oneDNN tag.
    const memory::desc src_plain({s.n, s.c, s.h, s.w}, DataType::f32, ChannelLayoutTag(g.in_block));
    const memory::desc dst_plain({s.n, s.oc, s.oh, s.ow}, DataType::f32,
                                 ChannelLayoutTag(g.out_block));
    const bool blocked = g.in_block > 0 || g.out_block > 0;
    const memory::desc src_any({s.n, s.c, s.h, s.w}, DataType::f32, Tag::any);
    const memory::desc dst_any({s.n, s.oc, s.oh, s.ow}, DataType::f32, Tag::any);
    const memory::desc weights =
        weight_ ? WeightsDesc(s, g.groups, Tag::any) : PlainWeights(s, g.groups);
    const memory::desc bias({s.oc}, DataType::f32, Tag::a);
    const memory::dims strides = {g.stride[0], g.stride[1]};
    const memory::dims dilates = {g.dilation[0] - 1, g.dilation[1] - 1};
    const memory::dims pad_l = {g.pad[0], g.pad[1]};
    const memory::dims pad_r = {g.pad[2], g.pad[3]};
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (g.relu || g.has_residual()) {
      dnnl::post_ops ops;
      if (g.has_residual()) ops.append_sum(1.0f);  // dst = conv + bias + dst
      if (g.relu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(ops);
    }
    const auto prop = dnnl::prop_kind::forward_inference;
    auto make_pd = [&](dnnl::algorithm algo, const memory::desc& src, const memory::desc& dst) {
      const dnnl::convolution_forward::desc desc =
          g.has_bias() ? dnnl::convolution_forward::desc(prop, algo, src, weights, bias, dst,
                                                         strides, dilates, pad_l, pad_r)
                       : dnnl::convolution_forward::desc(prop, algo, src, weights, dst, strides,
                                                         dilates, pad_l, pad_r);
      return dnnl::convolution_forward::primitive_desc(desc, attr, engine_);
    };
    std::optional<dnnl::convolution_forward::primitive_desc> chosen;
    bool is_winograd = false;
    if (winograd_ && use_winograd) {
      try {
        chosen = make_pd(dnnl::algorithm::convolution_winograd, src_plain, dst_plain);
        is_winograd = true;
      } catch (const dnnl::error&) {
        // No Winograd kernel for this problem: direct below.
      }
    }
    if (!chosen && blocked) {
      chosen = make_pd(dnnl::algorithm::convolution_direct, src_plain, dst_plain);
      // A reference implementation is ~100x slower than reordering around an optimised one.
      if (absl::StartsWith(chosen->impl_info_str(), "ref")) chosen.reset();
    }
    if (!chosen) chosen = make_pd(dnnl::algorithm::convolution_direct, src_any, dst_any);
    const dnnl::convolution_forward::primitive_desc& pd = *chosen;
    auto primitive = std::make_shared<Primitive>();
    Primitive& p = *primitive;
    p.conv = dnnl::convolution_forward(pd);
    p.weights_plain = PlainWeights(s, g.groups);
    p.bias = bias;
    p.conv_scratchpad = pd.scratchpad_desc();
    static_cast<PlainLayoutBridge&>(p) = MakePlainLayoutBridge(
        engine_, src_plain, pd.src_desc(), pd.dst_desc(), dst_plain, p.conv_scratchpad);
    if (weight_) p.weights = PackedWeights(s, pd.weights_desc());
    p.winograd = is_winograd;
    if (g.has_residual() && p.reorder_out) {
      p.residual_in.emplace(dnnl::reorder::primitive_desc(engine_, dst_plain, engine_, p.dst));
    }
    return primitive;
  } catch (const std::exception& e) {
    return LibraryError(g.function, e);
  }
}

absl::Status ConvInstance::CheckArg(const TensorArg& a, absl::string_view role, int index,
                                  int rank) const {
  return CheckF32Arg(group_.function,
                     index < group_.num_params ? group_.Arg(role, index) : std::string(role),
                     role, a, rank,
                     // Constant weights run from the instance's pack, never from the argument.
                     /*needs_data=*/!(index == group_.weight && weight_));
}

void ConvInstance::RunEmptyReduction(const float* bias, const float* residual, float* out,
                                     const ConvShape& s) const {
  const std::array<int64_t, 4> dims = {s.n, s.oc, s.oh, s.ow};
  for (int64_t i = 0; i < s.n; ++i) {
    for (int64_t c = 0; c < s.oc; ++c) {
      const float b = bias != nullptr ? bias[c] : 0.0f;
      for (int64_t h = 0; h < s.oh; ++h) {
        for (int64_t w = 0; w < s.ow; ++w) {
          const int64_t at = ChannelLayoutOffset(dims, group_.out_block, i, c, h, w);
          float v = residual != nullptr ? b + residual[at] : b;
          if (group_.relu) v = std::max(v, 0.0f);
          out[at] = v;
        }
      }
    }
  }
}

void ConvInstance::FillResidual(const Primitive& p, const Pointers& ptr,
                                const TensorArg& residual, dnnl::stream& stream) const {
  if (p.residual_in) {
    p.residual_in->execute(
        stream, {{DNNL_ARG_FROM, memory(p.dst_plain, engine_, residual.data)},
                 {DNNL_ARG_TO, memory(p.dst, engine_,
                                      static_cast<uint8_t*>(ptr.scratch) + p.dst_offset)}});
  } else if (residual.data != ptr.y) {
    std::memcpy(ptr.y, residual.data, residual.nbytes());
  }
}

absl::Status ConvInstance::Run(const KernelContext& ctx, absl::Span<const TensorArg> args) {
  const ConvGroup& g = group_;
  if (static_cast<int>(args.size()) != g.num_params + 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: expected %d arguments (%d parameters, 1 result), got %d", g.function,
                        g.num_params + 1, g.num_params, args.size()));
  }
  const TensorArg& x = args[g.data];
  const TensorArg& w = args[g.weight];
  const TensorArg& y = args[g.num_params];
  RETURN_IF_ERROR(CheckArg(x, "data", g.data, g.in_block > 0 ? 5 : 4));
  RETURN_IF_ERROR(CheckArg(w, "weight", g.weight, 4));
  RETURN_IF_ERROR(CheckArg(y, "result", g.num_params, g.out_block > 0 ? 5 : 4));
  if (g.in_block > 0 && x.shape[4] != g.in_block) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %s is %s, not in NCHW%dc", g.function,
                                                      g.Arg("data", g.data), ShapeString(x.shape),
                                                      g.in_block));
  }
  if (weight_ && !std::equal(w.shape.begin(), w.shape.end(), weight_->shape().begin(),
                             weight_->shape().end())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s is %s but the constant bound at load is %s", g.function, g.Arg("weight", g.weight),
        ShapeString(w.shape), ShapeString(weight_->shape())));
  }
  ASSIGN_OR_RETURN(const ConvShape s, Shape(x.shape, w.shape));
  const float* bias_data = nullptr;
  if (g.has_bias()) {
    const TensorArg& b = args[g.bias];
    RETURN_IF_ERROR(CheckArg(b, "bias", g.bias, g.out_block > 0 ? 4 : 1));
    if (b.num_elements() != s.oc) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: %s has %d elements but %s has %d output channels", g.function, g.Arg("bias", g.bias),
          b.num_elements(), g.Arg("weight", g.weight), s.oc));
    }
    if (bias_ && bias_->num_elements() != s.oc) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: %s has %d output channels but the constant %s bound at load has %d elements",
          g.function, g.Arg("weight", g.weight), s.oc, g.Arg("bias", g.bias),
          bias_->num_elements()));
    }
    bias_data = bias_ ? bias_->data_as<float>() : b.as<const float>();
  }
  std::vector<int64_t> want = {s.n, s.oc, s.oh, s.ow};
  if (g.out_block > 0) {
    if (s.oc % g.out_block != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: %d output channels do not split into blocks of %d", g.function, s.oc, g.out_block));
    }
    want = {s.n, s.oc / g.out_block, s.oh, s.ow, g.out_block};
  }
  if (!std::equal(y.shape.begin(), y.shape.end(), want.begin(), want.end())) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: result is %s, expected %s", g.function,
                                                      ShapeString(y.shape), ShapeString(want)));
  }
  const TensorArg* residual = g.has_residual() ? &args[g.residual] : nullptr;
  if (residual != nullptr) {
    RETURN_IF_ERROR(CheckArg(*residual, "residual", g.residual, static_cast<int>(want.size())));
    if (!std::equal(residual->shape.begin(), residual->shape.end(), want.begin(), want.end())) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: %s is %s but the convolution's result is %s", g.function,
          g.Arg("residual", g.residual), ShapeString(residual->shape), ShapeString(want)));
    }
  }
  if (y.num_elements() == 0) return absl::OkStatus();
  if (s.c == 0 || s.kh == 0 || s.kw == 0) {
    RunEmptyReduction(bias_data, residual != nullptr ? residual->as<const float>() : nullptr,
                      y.as<float>(), s);
    return absl::OkStatus();
  }

  ASSIGN_OR_RETURN(std::shared_ptr<const Primitive> primitive, GetPrimitive(s));
  if (primitive->upgrade.load(std::memory_order_relaxed) &&
      primitive->runs.fetch_add(1, std::memory_order_relaxed) + 1 >=
          conv_kernel_internal::kWinogradAfterRuns) {
    ASSIGN_OR_RETURN(primitive, Upgrade(s, primitive.get()));
  }
  const Primitive& p = *primitive;
  Pointers ptr{x.data, y.data, w.data, const_cast<float*>(bias_data), nullptr};
  if (p.scratch_bytes > 0) {
    ptr.scratch = ThreadScratch(p.scratch_bytes);
    if (ptr.scratch == nullptr) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%s: cannot allocate %d bytes of onednn scratch", g.function, p.scratch_bytes));
    }
  }
  try {
    ScopedLibraryThreads threads;
    dnnl::stream& stream = ThreadStream(engine_);
    auto execute = [&](const ExecArgs& a) {
      if (p.reorder_in) p.reorder_in->execute(stream, a.in);
      if (residual != nullptr) FillResidual(p, ptr, *residual, stream);
      p.conv.execute(stream, a.conv);
      if (p.reorder_out) p.reorder_out->execute(stream, a.out);
    };
    std::unique_lock<std::mutex> lock(p.args_mu, std::try_to_lock);
    if (lock.owns_lock()) {
      if (!p.args) {
        p.args = MakeArgs(p, ptr);
      } else {
        Repoint(p, ptr, *p.args);
      }
      execute(*p.args);
    } else {
      execute(MakeArgs(p, ptr));
    }
    stream.wait();
  } catch (const std::exception& e) {
    return LibraryError(g.function, e);
  }
  return absl::OkStatus();
}

// Which memory each argument of each step is. The packed constant weights are the one argument
// that is not re-pointed per call.
ConvInstance::ExecArgs ConvInstance::MakeArgs(const Primitive& p, const Pointers& ptr) const {
  ExecArgs a;
  auto at = [&](size_t offset) { return static_cast<uint8_t*>(ptr.scratch) + offset; };
  if (p.conv_scratchpad.get_size() > 0) {
    a.conv.emplace(DNNL_ARG_SCRATCHPAD, memory(p.conv_scratchpad, engine_, ptr.scratch));
  }
  if (p.reorder_in) {
    a.in.emplace(DNNL_ARG_FROM, memory(p.src_plain, engine_, ptr.x));
    a.in.emplace(DNNL_ARG_TO, memory(p.src, engine_, at(p.src_offset)));
    if (p.in_scratchpad.get_size() > 0) {
      a.in.emplace(DNNL_ARG_SCRATCHPAD, memory(p.in_scratchpad, engine_, ptr.scratch));
    }
    a.conv.emplace(DNNL_ARG_SRC, memory(p.src, engine_, at(p.src_offset)));
  } else {
    a.conv.emplace(DNNL_ARG_SRC, memory(p.src_plain, engine_, ptr.x));
  }
  if (p.reorder_out) {
    a.conv.emplace(DNNL_ARG_DST, memory(p.dst, engine_, at(p.dst_offset)));
    a.out.emplace(DNNL_ARG_FROM, memory(p.dst, engine_, at(p.dst_offset)));
    a.out.emplace(DNNL_ARG_TO, memory(p.dst_plain, engine_, ptr.y));
    if (p.out_scratchpad.get_size() > 0) {
      a.out.emplace(DNNL_ARG_SCRATCHPAD, memory(p.out_scratchpad, engine_, ptr.scratch));
    }
  } else {
    a.conv.emplace(DNNL_ARG_DST, memory(p.dst_plain, engine_, ptr.y));
  }
  a.conv.emplace(DNNL_ARG_WEIGHTS,
                 p.weights ? *p.weights : memory(p.weights_plain, engine_, ptr.w));
  if (group_.has_bias()) a.conv.emplace(DNNL_ARG_BIAS, memory(p.bias, engine_, ptr.bias));
  return a;
}

void ConvInstance::Repoint(const Primitive& p, const Pointers& ptr, ExecArgs& a) {
  auto at = [&](size_t offset) { return static_cast<uint8_t*>(ptr.scratch) + offset; };
  auto set = [](std::unordered_map<int, memory>& m, int arg, void* data) {
    if (auto it = m.find(arg); it != m.end()) it->second.set_data_handle(data);
  };
  for (auto* m : {&a.in, &a.conv, &a.out}) set(*m, DNNL_ARG_SCRATCHPAD, ptr.scratch);
  set(a.in, DNNL_ARG_FROM, ptr.x);
  set(a.in, DNNL_ARG_TO, at(p.src_offset));
  set(a.conv, DNNL_ARG_SRC, p.reorder_in ? at(p.src_offset) : ptr.x);
  set(a.conv, DNNL_ARG_DST, p.reorder_out ? at(p.dst_offset) : ptr.y);
  set(a.out, DNNL_ARG_FROM, at(p.dst_offset));
  set(a.out, DNNL_ARG_TO, ptr.y);
  if (!p.weights) set(a.conv, DNNL_ARG_WEIGHTS, ptr.w);
  set(a.conv, DNNL_ARG_BIAS, ptr.bias);
}

// ---- compiled kernel -----------------------------------------------------------------------

class ConvKernel final : public CompiledKernel {
 public:
  ConvKernel(ConvGroup group, const dnnl::engine& engine)
      : group_(std::move(group)), engine_(engine) {}

  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const> constants) const override {
    auto instance = std::make_unique<ConvInstance>(group_, engine_);
    RETURN_IF_ERROR(instance->Load(constants));
    return std::unique_ptr<KernelInstance>(std::move(instance));
  }

  std::string Describe() const override {
    std::vector<std::string> fused;
    if (group_.has_bias()) fused.push_back("bias");
    if (group_.has_residual()) fused.push_back("residual");
    if (group_.relu) fused.push_back("relu");
    std::string s = "onednn conv2d";
    if (!fused.empty()) absl::StrAppend(&s, "[", absl::StrJoin(fused, ","), "]");
    if (group_.in_block > 0 || group_.out_block > 0) {
      absl::StrAppend(&s, " ", ChannelLayoutName(group_.in_block), "->",
                      ChannelLayoutName(group_.out_block));
    }
    if (UsesWinograd(group_)) {
      absl::StrAppend(&s, " winograd from run ", conv_kernel_internal::kWinogradAfterRuns);
    }
    absl::StrAppend(&s, " packed");
    return s;
  }

 private:
  const ConvGroup group_;
  const dnnl::engine& engine_;
};

}  // namespace

bool IsConvGroup(const Function& primitive) { return MatchConvGroup(primitive).has_value(); }

int64_t OnednnConvBlock() {
  static const int64_t block = [] {
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    if (isa >= dnnl::cpu_isa::avx512_core) return int64_t{16};
    if (isa >= dnnl::cpu_isa::avx2) return int64_t{8};
    return int64_t{0};
  }();
  return block;
}

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileConvGroup(const Function& primitive) {
  std::optional<ConvGroup> group = MatchConvGroup(primitive);
  if (!group) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "@%s: not a conv group (a primitive function of nn.conv2d over f32 NCHW or NCHW<b>c "
        "(b = 4, 8, 16) data and OIHW weights, optionally a bias, then (blocked) optionally a "
        "residual add, then optionally nn.relu)",
        primitive.name()));
  }
  const dnnl::engine* engine = CpuEngine();
  if (engine == nullptr) {
    return absl::InternalError(absl::StrFormat("@%s: onednn: no cpu engine", primitive.name()));
  }
  return std::unique_ptr<CompiledKernel>(std::make_unique<ConvKernel>(*std::move(group), *engine));
}


namespace {
bool ConvRuns(const OpDef& op) { return OpIdOf(op) == kConvOp; }
bool ConvFuses(const OpDef& op) {
  // add: a blocked result's bias or residual (MatchConvGroup).
  return OpIdOf(op) == kConvOp || IsEpilogueOp(OpIdOf(op), /*allow_add=*/true);
}
}  // namespace

const KernelProvider& ConvKernelProvider() {
  static const GroupProvider provider({"onednn.conv2d", kNeedsKernelLibrary, &IsConvGroup,
                                       &CompileConvGroup, &ConvRuns, &ConvFuses});
  return provider;
}

}  // namespace hetpass
