// The 2-D pooling kernel (nn.max_pool2d / nn.avg_pool2d as one oneDNN pooling_v2_forward)
// exists because the registry's reference pooling is a scalar double loop, ~20x slower than
// oneDNN on the pools every ResNet / ShuffleNet stem has. See pool_kernel.h for why oneDNN's
// result is exactly the reference's, and for what is refused.
//
// Phases:
//   match     one nn.max_pool2d / nn.avg_pool2d call of an f32 rank-4 (NCHW) or rank-5
//             (NCHW<4|8|16>c) parameter, returned; attributes read with the registry's
//             defaults (CheckAttrs) and semantics (pairs of 1 or 2 positive ints, padding of 1,
//             2 or 4 ints); a static H, W
//             is planned now and refused when it would not run on oneDNN (PlanShape), as is
//             avg + count_include_pad + ceil_mode over a symbolic H or W
//   plan      per call shape, per axis: the output size by the registry's rule, oneDNN's right
//             padding R (the ceil_mode overhang added), whether R overhangs the user's padding
//             and whether some window has no tap inside the input; from these, whether the
//             shape runs on oneDNN or on the registry's reference kernel (pool_kernel.h)
//   instance  one primitive (or the reference decision) per data shape, cached under a mutex;
//             created at Instantiate when the data's shape is static
//   run       arguments checked (count, dtype, rank, output shape); executed on the thread's
//             stream and user scratchpad with KernelLibraryThreads() OpenMP threads; for max,
//             outputs equal to -FLT_MAX (oneDNN's starting value) are rescanned and become
//             -inf unless a tap holds -FLT_MAX (the reference starts from -inf)
#include "compile_engine/pool_kernel.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <dnnl.hpp>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compile_engine/group_match.h"
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
constexpr OpId kMaxPoolOp = OpId::kNnMaxPool2d;
constexpr OpId kAvgPoolOp = OpId::kNnAvgPool2d;

// Window attributes above this are refused: the size arithmetic below stays far from int64's
// limits (a real window is a few elements; type inference already rejects windows larger than
// the padded input).
constexpr int64_t kMaxWindowAttr = int64_t{1} << 30;

constexpr float kLowest = std::numeric_limits<float>::lowest();

// ---- match ---------------------------------------------------------------------------------

// One spatial axis of the window (pool_kernel.h's K, S, D, P0, P1).
struct Axis {
  int64_t kernel = 1, stride = 1, dilation = 1, pad_begin = 0, pad_end = 0;
  int64_t Extent() const { return dilation * (kernel - 1) + 1; }
};

struct PoolGroup {
  std::string function;  // "@name", for errors
  int num_params = 0;
  int data = -1;
  std::string data_name;  // "%x"
  Type data_type;         // as declared
  int64_t block = 0;      // the layout: 0 = NCHW, else NCHW<block>c (4, 8 or 16)
  const OpDef* op = nullptr;
  Attrs attrs;  // with the registry's defaults: what the reference fallback is called with
  bool is_max = true;
  bool include_pad = false;  // avg only
  bool ceil_mode = false;
  std::array<Axis, 2> axes;  // height, width

  std::string Arg(absl::string_view role) const {
    return absl::StrFormat("%s (%s)", role, data_name);
  }
  int rank() const { return block == 0 ? 4 : 5; }
};

// How one axis of one call shape runs (see pool_kernel.h).
struct AxisPlan {
  int64_t out = 0;         // the registry's output size; <= 0 when the window does not fit
  int64_t pad_r = 0;       // oneDNN's padding_r: P1, or the last window's reach when larger
  bool overhang = false;   // pad_r > P1: ceil_mode's last window reaches past the padding
  bool has_empty = false;  // some window has no tap inside the input
};

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

AxisPlan PlanAxis(const Axis& a, int64_t in, bool ceil_mode) {
  AxisPlan p;
  int64_t span = in + a.pad_begin + a.pad_end - a.Extent();
  if (ceil_mode) span += a.stride - 1;
  p.out = FloorDiv(span, a.stride) + 1;
  if (p.out <= 0) return p;
  const int64_t reach = (p.out - 1) * a.stride + a.Extent() - in - a.pad_begin;
  p.pad_r = std::max(a.pad_end, reach);
  p.overhang = reach > a.pad_end;
  for (int64_t o = 0; o < p.out && !p.has_empty; ++o) {
    // The first tap at or after the input's start, then whether it is before its end.
    const int64_t start = o * a.stride - a.pad_begin;
    const int64_t j = start >= 0 ? 0 : (-start + a.dilation - 1) / a.dilation;
    p.has_empty = j >= a.kernel || start + j * a.dilation >= in;
  }
  return p;
}

struct ShapePlan {
  std::array<AxisPlan, 2> axes;
  bool onednn = false;  // false: the registry's reference kernel runs this shape
};

ShapePlan PlanShape(const PoolGroup& g, int64_t h, int64_t w) {
  ShapePlan s;
  s.axes = {PlanAxis(g.axes[0], h, g.ceil_mode), PlanAxis(g.axes[1], w, g.ceil_mode)};
  const AxisPlan& ph = s.axes[0];
  const AxisPlan& pw = s.axes[1];
  if (h <= 0 || w <= 0 || ph.out <= 0 || pw.out <= 0) return s;  // oneDNN takes no empty input
  if (g.is_max) {
    s.onednn = true;  // empty windows: -FLT_MAX, fixed to -inf after the run
  } else if (g.include_pad) {
    s.onednn = !ph.overhang && !pw.overhang;  // divisor K*K, the reference's count
  } else {
    s.onednn = !ph.has_empty && !pw.has_empty;  // the reference's 0 for an empty window
  }
  return s;
}

// A pair attribute (pool_size, strides, dilation): 1 or 2 positive ints.
bool ReadPair(const Attrs& attrs, absl::string_view name, int64_t Axis::*field,
              std::array<Axis, 2>& axes) {
  const std::vector<int64_t>& v = attrs.GetIntList(name);
  if (v.size() != 1 && v.size() != 2) return false;
  axes[0].*field = v[0];
  axes[1].*field = v.back();
  return v[0] > 0 && v.back() > 0 && v[0] <= kMaxWindowAttr && v.back() <= kMaxWindowAttr;
}

std::optional<PoolGroup> MatchPoolGroup(const Function& f) {
  if (!IsPrimitive(f)) return std::nullopt;
  const Block& body = f.body();
  if (body.nodes().size() != 1 || body.results().size() != 1) return std::nullopt;
  const Node& n = *body.nodes()[0];
  const bool is_max = IsCallOf(n, kMaxPoolOp);
  if ((!is_max && !IsCallOf(n, kAvgPoolOp)) || n.num_operands() != 1 || n.num_results() != 1 ||
      body.results()[0] != n.result(0)) {
    return std::nullopt;
  }
  PoolGroup g;
  g.function = "@" + f.name();
  g.num_params = body.num_params();
  g.data = ParamIndex(body, n.operand(0));
  if (g.data < 0) return std::nullopt;
  g.op = n.op();
  absl::StatusOr<Attrs> attrs = g.op->CheckAttrs(n.attrs());
  if (!attrs.ok()) return std::nullopt;
  g.attrs = *std::move(attrs);
  // NCHW, or the blocked layouts oneDNN pools in place (block-conv-layout's).
  const std::optional<int64_t> block = ParseChannelLayout(g.attrs.GetString("layout"));
  if (!block || (*block != 0 && *block != 4 && *block != 8 && *block != 16)) return std::nullopt;
  g.block = *block;
  const Type& type = body.param(g.data)->type();
  if (!IsF32Tensor(type, g.rank()) || !DeclaredResultIsF32(f, g.rank())) return std::nullopt;
  if (g.block > 0) {
    const DimExpr& lanes = type.shape()[4];
    if (!lanes.is_constant() || lanes.constant() != g.block) return std::nullopt;
  }
  g.data_name = "%" + body.param(g.data)->name();
  g.data_type = type;
  if (!ReadPair(g.attrs, "pool_size", &Axis::kernel, g.axes) ||
      !ReadPair(g.attrs, "strides", &Axis::stride, g.axes) ||
      !ReadPair(g.attrs, "dilation", &Axis::dilation, g.axes)) {
    return std::nullopt;
  }
  const std::vector<int64_t>& p = g.attrs.GetIntList("padding");
  std::array<int64_t, 4> pad;  // top, left, bottom, right
  if (p.size() == 1) {
    pad = {p[0], p[0], p[0], p[0]};
  } else if (p.size() == 2) {
    pad = {p[0], p[1], p[0], p[1]};
  } else if (p.size() == 4) {
    pad = {p[0], p[1], p[2], p[3]};
  } else {
    return std::nullopt;
  }
  for (int64_t v : pad) {
    if (v < 0 || v > kMaxWindowAttr) return std::nullopt;
  }
  g.axes[0].pad_begin = pad[0];
  g.axes[1].pad_begin = pad[1];
  g.axes[0].pad_end = pad[2];
  g.axes[1].pad_end = pad[3];
  g.is_max = is_max;
  g.ceil_mode = g.attrs.GetBool("ceil_mode");
  g.include_pad = !is_max && g.attrs.GetBool("count_include_pad");
  // The refusals that can be decided now (pool_kernel.h).
  const DimExpr& h = type.shape()[2];
  const DimExpr& w = type.shape()[3];
  if (h.is_constant() && w.is_constant()) {
    if (!PlanShape(g, h.constant(), w.constant()).onednn) return std::nullopt;
  } else if (g.include_pad && g.ceil_mode) {
    return std::nullopt;  // a symbolic size may overhang
  }
  return g;
}

// ---- instance ------------------------------------------------------------------------------

class PoolInstance final : public KernelInstance {
 public:
  PoolInstance(const PoolGroup& group, const dnnl::engine& engine)
      : group_(group), engine_(engine) {}

  absl::Status Load(absl::Span<const Tensor* const> constants);
  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override;

 private:
  // One data shape: its oneDNN primitive, or the decision to run the reference kernel.
  struct Primitive {
    ShapePlan plan;
    std::optional<dnnl::pooling_v2_forward> pool;  // absent: the reference kernel runs
    memory::desc src, dst, scratchpad;
  };
  using Key = std::array<int64_t, 4>;  // the data's N, C (C/b blocked), H, W

  absl::StatusOr<std::shared_ptr<const Primitive>> GetPrimitive(const Key& x);
  absl::Status RunReference(const TensorArg& x, const TensorArg& y) const;
  // -FLT_MAX outputs of a max pool whose taps hold no -FLT_MAX become -inf (pool_kernel.h).
  void FixLowest(const float* x, float* y, const Key& xs, const ShapePlan& plan) const;

  const PoolGroup group_;  // a copy: an instance may outlive its CompiledKernel
  const dnnl::engine& engine_;
  std::mutex mu_;
  absl::flat_hash_map<Key, std::shared_ptr<const Primitive>> cache_;  // guarded by mu_
};

absl::Status PoolInstance::Load(absl::Span<const Tensor* const> constants) {
  const PoolGroup& g = group_;
  if (static_cast<int>(constants.size()) != g.num_params) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: expected %d constants (one per parameter, null if not constant), got %d", g.function,
        g.num_params, constants.size()));
  }
  // A static data shape gets its primitive now, so the first call does not create it.
  const std::vector<DimExpr>& x = g.data_type.shape();
  Key key;
  for (int d = 0; d < 4; ++d) {
    if (!x[d].is_constant()) return absl::OkStatus();
    key[d] = x[d].constant();
  }
  if (key[0] * key[1] == 0) return absl::OkStatus();
  return GetPrimitive(key).status();
}

absl::StatusOr<std::shared_ptr<const PoolInstance::Primitive>> PoolInstance::GetPrimitive(
    const Key& x) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = cache_.find(x); it != cache_.end()) return it->second;
  if (cache_.size() >= static_cast<size_t>(pool_kernel_internal::kMaxCachedShapes)) {
    cache_.clear();  // in-flight runs keep their primitives alive (shared_ptr)
  }
  const PoolGroup& g = group_;
  auto p = std::make_shared<Primitive>();
  p->plan = PlanShape(g, x[2], x[3]);
  if (p->plan.onednn) {
    try {
      ScopedLibraryThreads threads;  // oneDNN sizes its blocking for the thread count it sees
      const AxisPlan& ph = p->plan.axes[0];
      const AxisPlan& pw = p->plan.axes[1];
      // oneDNN's dims are the logical NCHW ones; the tag says where they are stored.
      const int64_t channels = g.block == 0 ? x[1] : x[1] * g.block;
      const Tag tag = ChannelLayoutTag(g.block);  // MatchPoolGroup admits 0, 4, 8, 16
      p->src = memory::desc({x[0], channels, x[2], x[3]}, DataType::f32, tag);
      p->dst = memory::desc({x[0], channels, ph.out, pw.out}, DataType::f32, tag);
      const Axis& ah = g.axes[0];
      const Axis& aw = g.axes[1];
      const dnnl::algorithm algo = g.is_max        ? dnnl::algorithm::pooling_max
                                   : g.include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                                   : dnnl::algorithm::pooling_avg_exclude_padding;
      // oneDNN's dilation is ours - 1 (0: dense windows).
      const dnnl::pooling_v2_forward::desc desc(
          dnnl::prop_kind::forward_inference, algo, p->src, p->dst, {ah.stride, aw.stride},
          {ah.kernel, aw.kernel}, {ah.dilation - 1, aw.dilation - 1}, {ah.pad_begin, aw.pad_begin},
          {ph.pad_r, pw.pad_r});
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      const dnnl::pooling_v2_forward::primitive_desc pd(desc, attr, engine_);
      p->pool.emplace(pd);
      p->scratchpad = pd.scratchpad_desc();
    } catch (const dnnl::error& e) {
      // oneDNN refuses this problem (e.g. a window entirely in its padding): the reference
      // kernel runs it, exactly.
      if (e.status != dnnl_invalid_arguments && e.status != dnnl_unimplemented) {
        return LibraryError(g.function, e);
      }
      p->pool.reset();
    } catch (const std::exception& e) {
      return LibraryError(g.function, e);
    }
  }
  std::shared_ptr<const Primitive> shared = std::move(p);
  cache_.emplace(x, shared);
  return shared;
}

absl::Status PoolInstance::RunReference(const TensorArg& x, const TensorArg& y) const {
  const PoolGroup& g = group_;
  ASSIGN_OR_RETURN(Tensor in, Tensor::FromBytes(
                                  DType::kF32, {x.shape.begin(), x.shape.end()},
                                  absl::string_view(static_cast<const char*>(x.data), x.nbytes())));
  const Type out_type =
      Type::Tensor(DType::kF32, std::vector<DimExpr>(y.shape.begin(), y.shape.end()));
  ASSIGN_OR_RETURN(std::vector<Tensor> outs, g.op->reference()(absl::MakeConstSpan(&in, 1), g.attrs,
                                                               absl::MakeConstSpan(&out_type, 1)));
  if (outs.size() != 1 || outs[0].nbytes() != y.nbytes()) {
    return absl::InternalError(absl::StrFormat("%s: the reference %s gave an unexpected result",
                                               g.function, g.op->name()));
  }
  if (y.nbytes() > 0) std::memcpy(y.data, outs[0].data(), y.nbytes());
  return absl::OkStatus();
}

void PoolInstance::FixLowest(const float* x, float* y, const Key& xs, const ShapePlan& plan) const {
  const int64_t oh = plan.axes[0].out, ow = plan.axes[1].out;
  // Element (plane, h, w, lane) is at ((plane * H + h) * W + w) * lanes + lane: lanes 1 in
  // NCHW, the block's channels blocked.
  const int64_t lanes = group_.block == 0 ? 1 : group_.block;
  const int64_t total = xs[0] * xs[1] * oh * ow * lanes;
  // The common case has none: one vectorisable pass over the output.
  int64_t hits = 0;
  for (int64_t i = 0; i < total; ++i) hits += y[i] == kLowest;
  if (hits == 0) return;
  const Axis& ah = group_.axes[0];
  const Axis& aw = group_.axes[1];
  for (int64_t i = 0; i < total; ++i) {
    if (y[i] != kLowest) continue;
    const int64_t lane = i % lanes, pixel = i / lanes;
    const int64_t plane = pixel / (oh * ow), oy = pixel / ow % oh, ox = pixel % ow;
    const float* xp = x + plane * xs[2] * xs[3] * lanes + lane;
    bool held = false;
    for (int64_t kh = 0; kh < ah.kernel && !held; ++kh) {
      const int64_t ih = oy * ah.stride - ah.pad_begin + kh * ah.dilation;
      if (ih < 0 || ih >= xs[2]) continue;
      for (int64_t kw = 0; kw < aw.kernel && !held; ++kw) {
        const int64_t iw = ox * aw.stride - aw.pad_begin + kw * aw.dilation;
        held = iw >= 0 && iw < xs[3] && xp[(ih * xs[3] + iw) * lanes] == kLowest;
      }
    }
    if (!held) y[i] = -std::numeric_limits<float>::infinity();
  }
}

absl::Status PoolInstance::Run(const KernelContext& ctx, absl::Span<const TensorArg> args) {
  const PoolGroup& g = group_;
  if (static_cast<int>(args.size()) != g.num_params + 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: expected %d arguments (%d parameters, 1 result), got %d", g.function,
                        g.num_params + 1, g.num_params, args.size()));
  }
  const TensorArg& x = args[g.data];
  const TensorArg& y = args[g.num_params];
  RETURN_IF_ERROR(CheckF32Arg(g.function, g.Arg("data"), "data", x, g.rank()));
  RETURN_IF_ERROR(CheckF32Arg(g.function, "result", "result", y, g.rank()));
  if (g.block > 0 && x.shape[4] != g.block) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s is %s, not in %s: its last dim is not %d", g.function,
                        g.Arg("data"), ShapeString(x.shape), ChannelLayoutName(g.block), g.block));
  }
  const Key xs = {x.shape[0], x.shape[1], x.shape[2], x.shape[3]};
  const AxisPlan ph = PlanAxis(g.axes[0], xs[2], g.ceil_mode);
  const AxisPlan pw = PlanAxis(g.axes[1], xs[3], g.ceil_mode);
  if (ph.out <= 0 || pw.out <= 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s is %s: the pooling window does not fit the padded input",
                        g.function, g.Arg("data"), ShapeString(x.shape)));
  }
  std::vector<int64_t> want = {xs[0], xs[1], ph.out, pw.out};
  if (g.block > 0) want.push_back(g.block);
  if (!std::equal(y.shape.begin(), y.shape.end(), want.begin(), want.end())) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: result is %s, expected %s", g.function,
                                                      ShapeString(y.shape), ShapeString(want)));
  }
  if (y.num_elements() == 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::shared_ptr<const Primitive> primitive, GetPrimitive(xs));
  const Primitive& p = *primitive;
  if (!p.pool) return RunReference(x, y);
  try {
    ScopedLibraryThreads threads;
    dnnl::stream& stream = ThreadStream(engine_);
    std::unordered_map<int, memory> margs;
    margs.emplace(DNNL_ARG_SRC, memory(p.src, engine_, x.data));
    margs.emplace(DNNL_ARG_DST, memory(p.dst, engine_, y.data));
    if (p.scratchpad.get_size() > 0) {
      void* scratch = ThreadScratch(p.scratchpad.get_size());
      if (scratch == nullptr) {
        return absl::ResourceExhaustedError(absl::StrFormat(
            "%s: cannot allocate %d bytes of onednn scratch", g.function, p.scratchpad.get_size()));
      }
      margs.emplace(DNNL_ARG_SCRATCHPAD, memory(p.scratchpad, engine_, scratch));
    }
    p.pool->execute(stream, margs);
    stream.wait();
  } catch (const std::exception& e) {
    return LibraryError(g.function, e);
  }
  if (g.is_max) FixLowest(x.as<const float>(), y.as<float>(), xs, p.plan);
  return absl::OkStatus();
}

// ---- compiled kernel -----------------------------------------------------------------------

class PoolKernel final : public CompiledKernel {
 public:
  PoolKernel(PoolGroup group, const dnnl::engine& engine)
      : group_(std::move(group)), engine_(engine) {}

  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const> constants) const override {
    auto instance = std::make_unique<PoolInstance>(group_, engine_);
    RETURN_IF_ERROR(instance->Load(constants));
    return std::unique_ptr<KernelInstance>(std::move(instance));
  }

  std::string Describe() const override {
    std::string name = group_.is_max        ? "onednn max_pool2d"
                       : group_.include_pad ? "onednn avg_pool2d[include_pad]"
                                            : "onednn avg_pool2d";
    if (group_.block > 0) absl::StrAppend(&name, "[", ChannelLayoutName(group_.block), "]");
    return name;
  }

 private:
  const PoolGroup group_;
  const dnnl::engine& engine_;
};

}  // namespace

bool IsPoolGroup(const Function& primitive) { return MatchPoolGroup(primitive).has_value(); }

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompilePoolGroup(const Function& primitive) {
  std::optional<PoolGroup> group = MatchPoolGroup(primitive);
  if (!group) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "@%s: not a pool group (one nn.max_pool2d or nn.avg_pool2d of an f32 NCHW or "
        "NCHW<4|8|16>c parameter "
        "that oneDNN computes exactly as the reference kernel)",
        primitive.name()));
  }
  const dnnl::engine* engine = CpuEngine();
  if (engine == nullptr) {
    return absl::InternalError(absl::StrFormat("@%s: onednn: no cpu engine", primitive.name()));
  }
  return std::unique_ptr<CompiledKernel>(std::make_unique<PoolKernel>(*std::move(group), *engine));
}

namespace {
bool PoolRuns(const OpDef& op) { return OpIdOf(op) == kMaxPoolOp || OpIdOf(op) == kAvgPoolOp; }
}  // namespace

const KernelProvider& PoolKernelProvider() {
  static const GroupProvider provider(
      {"onednn.pool2d", kNeedsKernelLibrary, &IsPoolGroup, &CompilePoolGroup, &PoolRuns, nullptr});
  return provider;
}

}  // namespace hetpass
