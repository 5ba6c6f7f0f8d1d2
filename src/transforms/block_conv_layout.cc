// block-conv-layout: convolution chains computed in the blocked channel layout NCHW<b>c.
//
// Why: a vectorised convolution (oneDNN's AVX-512 kernels) reads b channels of one pixel with
// one load, so it wants [N, C/b, H, W, b] (nChw16c) or NHWC, never NCHW. Given NCHW, the kernel
// reorders its input in and its output back on every call: in resnet_tiny that was ~20% of
// the convolution time, while ONNX Runtime's layout transformer (NCHWc) and TVM's AlterOpLayout
// keep whole chains blocked. This pass does the same in the IR, where the layouts are explicit
// types and every later pass (memory planning, the copy ledger, pass-viz) sees them.
//
// The rewrite, one forward sweep over each function body (top level; nested regions keep
// their ops, with uses of rewritten values renamed):
//
//   %y = nn.conv2d(%x, %w)                  %x_b = layout_transform(%x) {NCHW -> NCHW16c}
//                                    ==>    %y_b = nn.conv2d(%x_b, %w) {data_layout = NCHW16c,
//                                                                       out_layout = NCHW16c}
//                                           %y   = layout_transform(%y_b) {NCHW16c -> NCHW}
//
// and every value computed blocked gets a "twin": uses of %y by ops that can compute blocked
// read %y_b instead, so between two convolutions only the twin is used and dce removes the
// transform back. Ops that compute blocked:
//   - nn.conv2d, NCHW / OIHW, f32, constant input channels and output channels a multiple of
//     b; grouped only when each group's input and output channels are whole blocks, or
//     depthwise (a group per channel, no channel multiplier). The data is the input's twin if it
//     has one; else, with C divisible by b, a layout_transform of it (one per value, shared by its
//     convolutions); else (C below b: an image's 3 channels) plain NCHW data with a blocked
//     result, which oneDNN's first-layer kernels compute directly.
//   - nn.bias_add on the channel axis of a value with a twin: an `add` of the bias reshaped to
//     [C/b, 1, 1, b] (the same bytes: channel c is at [c / b, 0, 0, c % b]), which broadcasts
//     over the blocked tensor and which the conv kernels fuse as their bias.
//   - elementwise ops (elementwise_ops.def: relu, the residual add, ...) whose tensor operands
//     have twins of the result's NCHW shape or of a shape that broadcasts to it keeping the
//     channels (N, H, W each equal or 1: a squeeze-excite block's per-image channel scale
//     [N, C, 1, 1], whose twin [N, C/b, 1, 1, b] broadcasts over [N, C/b, H, W, b] the same
//     way), or broadcast the same way in both layouts: all dims 1 (scalars), or one value per
//     channel ([C, 1, 1] / [1, C, 1, 1]: an unfolded BatchNorm's scale and shift), reshaped
//     like a bias. An elementwise op computes the same function of each element wherever the
//     element is stored.
//   - sum / mean / max / min / prod over H and/or W with keepdims (global pooling): the same
//     axes of the blocked tensor; the transform back then moves one value per channel.
//   - nn.max_pool2d / nn.avg_pool2d (layout NCHW -> NCHW<b>c): a window over H and W pools each
//     channel alone, wherever the channel is stored. A ResNet stem's max pool sits between its
//     first convolution and the next; in NCHW it cost two transforms of the largest activation
//     of the network, and (being JIT kernels) the code generator's memory on a cold start.
// Everything else (max pool with indices, other reductions, reshapes, outputs) reads the NCHW
// value, i.e. the transform back, which stays exactly where such a use exists.
//
// Exactness: layout_transform only moves elements, and each rewritten op computes the same
// elements as before, so the results are unchanged (the kernels' arithmetic may differ, as
// any kernel choice may). The pass needs types (run infer-types first); new bindings take the
// device of the binding they stand for, so the pass may also run after plan-devices. It reruns
// dce and infer-types when it changed something.
#include "passes/transforms/block_conv_layout.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "passes/ir/builder.h"
#include "passes/shape_funcs/channel_layout.h"
#include "passes/shape_funcs/op_ids.h"
#include "passes/support/status_macros.h"
#include "passes/transforms/dce.h"
#include "passes/transforms/infer_types.h"

namespace hetpass {
namespace {

bool IsOp(const Node& n, OpId id) {
  return n.kind() == NodeKind::kCall && n.op() != nullptr && OpIdOf(*n.op()) == id;
}

// A rank-4 f32 tensor type with a constant channel dim; that dim, else -1.
int64_t ConstantChannels(const Type& t) {
  if (!t.is_tensor() || t.rank() != 4 || t.dtype() != DType::kF32 || !t.shape()[1].is_constant()) {
    return -1;
  }
  return t.shape()[1].constant();
}

class Rewriter {
 public:
  Rewriter(Block& body, int64_t block)
      : body_(body), block_(block), layout_(ChannelLayoutName(block)), builder_(&body) {}

  // Rebuilds the body; whether anything was rewritten.
  absl::StatusOr<bool> Run() {
    std::vector<std::unique_ptr<Node>> old = std::move(body_.mutable_nodes());
    body_.mutable_nodes().clear();
    bool changed = false;
    absl::Status error;
    for (std::unique_ptr<Node>& owned : old) {
      Node& n = *owned;
      Rename(n);
      if (error.ok()) {
        absl::StatusOr<bool> rewritten = Rewrite(n);
        if (rewritten.ok() && *rewritten) {
          changed = true;
          dropped_.push_back(std::move(owned));  // its results stay valid until the sweep ends
          continue;
        }
        // After an error the rest is kept as it is, so the body stays well formed.
        if (!rewritten.ok()) error = rewritten.status();
      }
      body_.Append(std::move(owned));
    }
    for (Value*& v : body_.mutable_results()) v = Renamed(v);
    if (!error.ok()) return error;
    return changed;
  }

 private:
  Value* Renamed(Value* v) const {
    auto it = renamed_.find(v);
    return it == renamed_.end() ? v : it->second;
  }

  // Renames the uses of rewritten values in `n`, nested regions included.
  void Rename(Node& n) {
    for (Value*& v : n.mutable_operands()) v = Renamed(v);
    for (int r = 0; r < n.num_regions(); ++r) RenameBlock(*n.region(r));
  }
  void RenameBlock(Block& b) {
    for (Value*& v : b.mutable_results()) v = Renamed(v);
    for (const auto& n : b.nodes()) Rename(*n);
  }

  // A new binding takes the location and device of the one it stands for (devices are unset
  // before plan-devices; a module placed by hand keeps its placement).
  static void Place(Value* v, const Node& at) {
    v->producer()->set_loc(at.loc());
    v->producer()->set_device(at.device());
  }

  Value* TwinOf(const Value* v) const {
    auto it = twin_.find(v);
    return it == twin_.end() ? nullptr : it->second;
  }

  absl::StatusOr<Value*> Transform(Value* v, int64_t from, int64_t to, const Node& at,
                                   std::string name) {
    ASSIGN_OR_RETURN(Value * out, builder_.Call(OpIdName(OpId::kLayoutTransform), {v},
                                                Attrs{{"src_layout", ChannelLayoutName(from)},
                                                      {"dst_layout", ChannelLayoutName(to)}},
                                                std::move(name)));
    Place(out, at);
    return out;
  }

  // Emits `blocked` (just built, the blocked form of n's result) and the transform back to
  // n's NCHW result, which every later use of that result reads.
  absl::Status Finish(Node& n, Value* blocked) {
    Value* old = n.result(0);
    Place(blocked, n);
    ASSIGN_OR_RETURN(Value * back, Transform(blocked, block_, 0, n, old->name()));
    back->set_type(old->type());
    old->set_name(absl::StrCat(old->name(), "_replaced"));
    renamed_[old] = back;
    twin_[back] = blocked;
    return absl::OkStatus();
  }

  std::string BlockedName(const Value* v) const {
    return absl::StrCat(v->name(), "_", absl::AsciiStrToLower(layout_));
  }

  absl::StatusOr<bool> Rewrite(Node& n) {
    if (n.kind() != NodeKind::kCall || n.op() == nullptr || n.num_results() != 1) return false;
    if (IsOp(n, OpId::kNnConv2d)) return RewriteConv(n);
    if (IsOp(n, OpId::kNnBiasAdd)) return RewriteBiasAdd(n);
    if (ElementwiseInfoOf(OpIdOf(*n.op())) != nullptr) return RewriteElementwise(n);
    switch (OpIdOf(*n.op())) {
      case OpId::kSum:
      case OpId::kMean:
      case OpId::kMax:
      case OpId::kMin:
      case OpId::kProd:
        return RewriteSpatialReduce(n);
      case OpId::kNnMaxPool2d:
      case OpId::kNnAvgPool2d:
        return RewritePool(n);
      default:
        return false;
    }
  }

  // A reduction over H and/or W only, keeping dims (global average pooling): the same axes of
  // the blocked tensor, so the transform back moves C values per image instead of C x H x W.
  absl::StatusOr<bool> RewriteSpatialReduce(Node& n) {
    Value* twin = n.num_operands() == 1 ? TwinOf(n.operand(0)) : nullptr;
    if (twin == nullptr) return false;
    ASSIGN_OR_RETURN(Attrs attrs, n.op()->CheckAttrs(n.attrs()));
    if (!attrs.GetBool("keepdims") || attrs.GetBool("exclude")) return false;
    std::vector<int64_t> axes;
    for (int64_t a : attrs.GetIntList("axis")) {
      if (a < 0) a += 4;
      if (a != 2 && a != 3) return false;
      axes.push_back(a);  // H and W keep their positions in NCHW<b>c
    }
    if (axes.empty()) return false;  // empty: every axis, the block included
    attrs.Set("axis", axes);
    ASSIGN_OR_RETURN(Value * y, builder_.Call(n.op()->name(), {twin}, std::move(attrs),
                                              BlockedName(n.result(0))));
    RETURN_IF_ERROR(Finish(n, y));
    return true;
  }

  // A 2-D pool of a value with a twin: the same window over the twin, layout NCHW<b>c.
  absl::StatusOr<bool> RewritePool(Node& n) {
    Value* twin = n.num_operands() == 1 ? TwinOf(n.operand(0)) : nullptr;
    if (twin == nullptr) return false;
    ASSIGN_OR_RETURN(Attrs attrs, n.op()->CheckAttrs(n.attrs()));
    if (attrs.GetString("layout") != "NCHW") return false;
    attrs.Set("layout", layout_);
    ASSIGN_OR_RETURN(Value * y, builder_.Call(n.op()->name(), {twin}, std::move(attrs),
                                              BlockedName(n.result(0))));
    RETURN_IF_ERROR(Finish(n, y));
    return true;
  }

  absl::StatusOr<bool> RewriteConv(Node& n) {
    ASSIGN_OR_RETURN(Attrs attrs, n.op()->CheckAttrs(n.attrs()));
    const std::string& out_layout = attrs.GetString("out_layout");
    if (n.num_operands() != 2 || attrs.GetString("data_layout") != "NCHW" ||
        attrs.GetString("kernel_layout") != "OIHW" ||
        (!out_layout.empty() && out_layout != "NCHW")) {
      return false;
    }
    Value* x = n.operand(0);
    const int64_t channels = ConstantChannels(x->type());
    const int64_t out_channels = ConstantChannels(n.result(0)->type());
    const int64_t groups = attrs.GetInt("groups");
    if (channels < 0 || out_channels < 0 || out_channels % block_ != 0 || groups < 1 ||
        channels % groups != 0 || out_channels % groups != 0) {
      return false;
    }
    // Groups: each group's channels in whole blocks, or depthwise (a group per channel, no
    // multiplier: oneDNN has no blocked kernel for a multiplier and would reorder anyway).
    const bool depthwise = groups == channels && out_channels == channels;
    if (groups > 1 &&
        !(channels % block_ == 0 && (depthwise || ((channels / groups) % block_ == 0 &&
                                                   (out_channels / groups) % block_ == 0)))) {
      return false;
    }
    Value* data = TwinOf(x);
    if (data == nullptr && channels % block_ == 0) {
      ASSIGN_OR_RETURN(data, Transform(x, 0, block_, n, BlockedName(x)));
      twin_[x] = data;
    }
    attrs.Set("data_layout", data != nullptr ? layout_ : std::string("NCHW"));
    attrs.Set("out_layout", layout_);
    ASSIGN_OR_RETURN(Value * y, builder_.Call(OpIdName(OpId::kNnConv2d),
                                              {data != nullptr ? data : x, n.operand(1)},
                                              std::move(attrs), BlockedName(n.result(0))));
    RETURN_IF_ERROR(Finish(n, y));
    return true;
  }

  // Whether `v` (rank 4) broadcasts to `t` with its channels as they are: the same C, and N,
  // H, W each equal to t's or 1. Its blocked twin then broadcasts over t's the same way.
  static bool BroadcastsKeepingChannels(const Type& v, const Type& t) {
    if (v.rank() != 4 || t.rank() != 4) return false;
    const std::vector<DimExpr>& a = v.shape();
    const std::vector<DimExpr>& b = t.shape();
    if (a[1] != b[1]) return false;
    for (int d : {0, 2, 3}) {
      if (a[d] != b[d] && !(a[d].is_constant() && a[d].constant() == 1)) return false;
    }
    return true;
  }

  // How an elementwise operand without a twin can join a blocked computation.
  enum class Operand { kNo, kAnyLayout, kPerChannel };
  static Operand Broadcast(const Type& t, int64_t channels) {
    if (t.rank() > 4) return Operand::kNo;
    bool ones = true;
    for (const DimExpr& d : t.shape()) ones = ones && d.is_constant() && d.constant() == 1;
    if (ones) return Operand::kAnyLayout;  // a scalar or [1, 1, 1]: the same in any layout
    // [C, 1, 1] or [1, C, 1, 1] (an unfolded BatchNorm's scale and shift): one value per channel.
    const std::vector<DimExpr>& s = t.shape();
    const size_t c = s.size() == 3 ? 0 : (s.size() == 4 ? 1 : s.size());
    if (c == s.size() || channels < 0 || !s[c].is_constant() || s[c].constant() != channels) {
      return Operand::kNo;
    }
    for (size_t i = 0; i < s.size(); ++i) {
      if (i != c && (!s[i].is_constant() || s[i].constant() != 1)) return Operand::kNo;
    }
    return Operand::kPerChannel;
  }

  // A per-channel vector (C values in channel order) as [C/b, 1, 1, b]: the same bytes, which
  // broadcast over [N, C/b, H, W, b] channel by channel.
  absl::StatusOr<Value*> PerChannel(Value* v, int64_t channels, const Node& at) {
    ASSIGN_OR_RETURN(
        Value * r,
        builder_.Call(OpIdName(OpId::kReshape), {v},
                      Attrs{{"newshape", std::vector<int64_t>{channels / block_, 1, 1, block_}}},
                      BlockedName(v)));
    Place(r, at);
    return r;
  }

  absl::StatusOr<bool> RewriteBiasAdd(Node& n) {
    Value* x = n.operand(0);
    Value* twin = TwinOf(x);
    const Type& b = n.operand(1)->type();
    const int64_t channels = ConstantChannels(x->type());
    if (twin == nullptr || n.num_operands() != 2 || channels < 0 || !b.is_tensor() ||
        b.rank() != 1 || b.dtype() != DType::kF32 || !b.shape()[0].is_constant() ||
        b.shape()[0].constant() != channels) {
      return false;
    }
    ASSIGN_OR_RETURN(const Attrs attrs, n.op()->CheckAttrs(n.attrs()));
    const int64_t axis = attrs.GetInt("axis");
    if (axis != 1 && axis != -3) return false;
    ASSIGN_OR_RETURN(Value * bias, PerChannel(n.operand(1), channels, n));
    ASSIGN_OR_RETURN(Value * y, builder_.Call(OpIdName(OpId::kAdd), {twin, bias}, Attrs{},
                                              BlockedName(n.result(0))));
    RETURN_IF_ERROR(Finish(n, y));
    return true;
  }

  absl::StatusOr<bool> RewriteElementwise(Node& n) {
    const Type& t = n.result(0)->type();
    if (!t.is_tensor() || t.rank() != 4) return false;
    const int64_t channels = ConstantChannels(t);
    std::vector<Value*> operands;
    bool any_twin = false;
    for (Value* v : n.operands()) {
      const Type& vt = v->type();
      if (!vt.is_tensor()) return false;
      if (Value* twin = TwinOf(v); twin != nullptr && BroadcastsKeepingChannels(vt, t)) {
        operands.push_back(twin);
        any_twin = true;
        continue;
      }
      switch (Broadcast(vt, channels)) {
        case Operand::kAnyLayout:
          operands.push_back(v);
          break;
        case Operand::kPerChannel: {
          ASSIGN_OR_RETURN(Value * r, PerChannel(v, channels, n));
          operands.push_back(r);
          break;
        }
        case Operand::kNo:
          return false;
      }
    }
    if (!any_twin) return false;
    ASSIGN_OR_RETURN(Value * y, builder_.Call(n.op()->name(), std::move(operands), n.attrs(),
                                              BlockedName(n.result(0))));
    RETURN_IF_ERROR(Finish(n, y));
    return true;
  }

  Block& body_;
  const int64_t block_;
  const std::string layout_;
  Builder builder_;
  absl::flat_hash_map<const Value*, Value*> renamed_;  // rewritten result -> its NCHW view
  absl::flat_hash_map<const Value*, Value*> twin_;     // NCHW value -> its blocked form
  std::vector<std::unique_ptr<Node>> dropped_;
};

class BlockConvLayoutPass : public Pass {
 public:
  explicit BlockConvLayoutPass(BlockConvLayoutOptions options) : options_(options) {}
  absl::string_view name() const override { return BlockConvLayoutOptions::kName; }

  absl::StatusOr<bool> Run(Module& module) override {
    if (!ParseChannelLayout(ChannelLayoutName(options_.block)) || options_.block < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "block-conv-layout: block must be between 1 and 4096, got ", options_.block));
    }
    bool changed = false;
    for (const auto& f : module.functions()) {
      if (IsPrimitive(*f)) continue;
      Rewriter rewriter(f->body(), options_.block);
      ASSIGN_OR_RETURN(bool c, rewriter.Run());
      changed |= c;
    }
    if (changed) {
      RETURN_IF_ERROR(CreateDcePass()->Run(module).status());
      RETURN_IF_ERROR(CreateInferTypesPass()->Run(module).status());
    }
    return changed;
  }

 private:
  const BlockConvLayoutOptions options_;
};

}  // namespace

std::unique_ptr<Pass> CreateBlockConvLayoutPass(const BlockConvLayoutOptions& options) {
  return std::make_unique<BlockConvLayoutPass>(options);
}

}  // namespace hetpass
