// The channel-layout reorder (reorder_kernel.h).
//
// Phases:
//   match     layout_transform of an f32 parameter between NCHW / NCHW<4|8|16>c, then a chain
//             of single-operand view ops, the last returned
//   instance  one oneDNN reorder per data shape, created on first sight (at Instantiate when
//             the data's shape is static) and cached under a mutex
//   run       arguments checked; the reorder executed on the thread's stream with
//             KernelLibraryThreads() OpenMP threads, from the data into the result's bytes
#include "compile_engine/reorder_kernel.h"

#include <array>
#include <dnnl.hpp>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
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

struct ReorderGroup {
  std::string function;  // "@name"
  int num_params = 0;
  int data = -1;
  std::string data_name;  // "%x"
  Type data_type;
  int64_t src = 0, dst = 0;        // blocks; 0 = NCHW
  std::vector<std::string> views;  // the view ops after the transform, in order
  int rank() const { return src == 0 ? 4 : 5; }
};

std::optional<ReorderGroup> MatchReorderGroup(const Function& f) {
  if (!IsPrimitive(f)) return std::nullopt;
  const Block& body = f.body();
  const auto& nodes = body.nodes();
  if (nodes.empty() || body.results().size() != 1) return std::nullopt;
  const Node& t = *nodes[0];
  if (!IsCallOf(t, OpId::kLayoutTransform) || t.num_operands() != 1 || t.num_results() != 1) {
    return std::nullopt;
  }
  ReorderGroup g;
  g.function = "@" + f.name();
  g.num_params = body.num_params();
  g.data = ParamIndex(body, t.operand(0));
  if (g.data < 0) return std::nullopt;
  // The registry's view of the attributes (the parser and infer-types require both).
  absl::StatusOr<Attrs> attrs = t.op()->CheckAttrs(t.attrs());
  if (!attrs.ok()) return std::nullopt;
  const std::optional<int64_t> src = ParseChannelLayout(attrs->GetString("src_layout"));
  const std::optional<int64_t> dst = ParseChannelLayout(attrs->GetString("dst_layout"));
  if (!src || !dst || *src == *dst || ChannelLayoutTag(*src) == Tag::undef ||
      ChannelLayoutTag(*dst) == Tag::undef) {
    return std::nullopt;
  }
  g.src = *src;
  g.dst = *dst;
  g.data_type = body.param(g.data)->type();
  if (!IsF32Tensor(g.data_type, g.rank())) return std::nullopt;
  if (g.src > 0) {
    const DimExpr& lanes = g.data_type.shape()[4];
    if (!lanes.is_constant() || lanes.constant() != g.src) return std::nullopt;
  }
  g.data_name = "%" + body.param(g.data)->name();
  const Value* cur = t.result(0);
  for (size_t i = 1; i < nodes.size(); ++i) {
    const Node& v = *nodes[i];
    if (v.kind() != NodeKind::kCall || v.op() == nullptr || !v.op()->is_view() ||
        v.num_operands() != 1 || v.num_results() != 1 || v.operand(0) != cur) {
      return std::nullopt;
    }
    g.views.push_back(v.op()->name());
    cur = v.result(0);
  }
  if (body.results()[0] != cur) return std::nullopt;
  if (!f.result_types().empty()) {
    const Type& r = f.result_types()[0];
    if (f.result_types().size() != 1 ||
        (!r.is_unset() && (!r.is_tensor() || r.dtype() != DType::kF32))) {
      return std::nullopt;
    }
  }
  return g;
}

class ReorderInstance final : public KernelInstance {
 public:
  ReorderInstance(const ReorderGroup& group, const dnnl::engine& engine)
      : group_(group), engine_(engine) {}

  absl::Status Load() {
    const std::vector<DimExpr>& x = group_.data_type.shape();
    Key key;
    for (int d = 0; d < 4; ++d) {
      if (!x[d].is_constant()) return absl::OkStatus();
      key[d] = x[d].constant();
    }
    if (key[0] * key[1] * key[2] * key[3] == 0 || Logical(key)[1] % Block(group_.dst) != 0) {
      return absl::OkStatus();  // the run says what is wrong, if it ever runs
    }
    return Get(key).status();
  }

  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override {
    const ReorderGroup& g = group_;
    if (static_cast<int>(args.size()) != g.num_params + 1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: expected %d arguments (%d parameters, 1 result), got %d",
                          g.function, g.num_params + 1, g.num_params, args.size()));
    }
    const TensorArg& x = args[g.data];
    const TensorArg& y = args[g.num_params];
    const std::string data = absl::StrFormat("data (%s)", g.data_name);
    RETURN_IF_ERROR(CheckF32Arg(g.function, data, "data", x, g.rank()));
    if (g.src > 0 && x.shape[4] != g.src) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: %s is %s, not in %s: its last dim is not %d", g.function, data,
                          ShapeString(x.shape), ChannelLayoutName(g.src), g.src));
    }
    const Key key = {x.shape[0], x.shape[1], x.shape[2], x.shape[3]};
    const std::array<int64_t, 4> dims = Logical(key);
    if (dims[1] % Block(g.dst) != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: %s has %d channels, which do not split into blocks of %d",
                          g.function, data, dims[1], g.dst));
    }
    if (y.dtype != DType::kF32 || y.num_elements() != x.num_elements()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: result is %s%s, expected %d f32 elements (the data's, in %s)", g.function,
          DTypeName(y.dtype), ShapeString(y.shape), x.num_elements(), ChannelLayoutName(g.dst)));
    }
    if (x.num_elements() == 0) return absl::OkStatus();
    ASSIGN_OR_RETURN(std::shared_ptr<const Primitive> p, Get(key));
    try {
      ScopedLibraryThreads threads;
      dnnl::stream& stream = ThreadStream(engine_);
      memory from(p->src, engine_, x.data);
      memory to(p->dst, engine_, y.data);
      p->reorder.execute(stream, from, to);
      stream.wait();
    } catch (const std::exception& e) {
      return LibraryError(g.function, e);
    }
    return absl::OkStatus();
  }

 private:
  using Key = std::array<int64_t, 4>;  // the data's first four dims as stored
  struct Primitive {
    memory::desc src, dst;
    dnnl::reorder reorder;
  };

  static int64_t Block(int64_t b) { return b == 0 ? 1 : b; }
  // The logical [N, C, H, W] of data stored as `key`.
  std::array<int64_t, 4> Logical(const Key& key) const {
    return {key[0], key[1] * Block(group_.src), key[2], key[3]};
  }

  absl::StatusOr<std::shared_ptr<const Primitive>> Get(const Key& key) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    if (cache_.size() >= static_cast<size_t>(reorder_kernel_internal::kMaxCachedShapes)) {
      cache_.clear();  // in-flight runs keep theirs alive (shared_ptr)
    }
    try {
      ScopedLibraryThreads threads;
      const std::array<int64_t, 4> d = Logical(key);
      const memory::dims dims = {d[0], d[1], d[2], d[3]};
      auto p = std::make_shared<Primitive>();
      p->src = memory::desc(dims, memory::data_type::f32, ChannelLayoutTag(group_.src));
      p->dst = memory::desc(dims, memory::data_type::f32, ChannelLayoutTag(group_.dst));
      p->reorder = dnnl::reorder(dnnl::reorder::primitive_desc(engine_, p->src, engine_, p->dst));
      std::shared_ptr<const Primitive> shared = std::move(p);
      cache_.emplace(key, shared);
      return shared;
    } catch (const std::exception& e) {
      return LibraryError(group_.function, e);
    }
  }

  const ReorderGroup group_;  // a copy: an instance may outlive its CompiledKernel
  const dnnl::engine& engine_;
  std::mutex mu_;
  absl::flat_hash_map<Key, std::shared_ptr<const Primitive>> cache_;  // guarded by mu_
};

class ReorderKernel final : public CompiledKernel {
 public:
  ReorderKernel(ReorderGroup group, const dnnl::engine& engine)
      : group_(std::move(group)), engine_(engine) {}

  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const> constants) const override {
    if (static_cast<int>(constants.size()) != group_.num_params) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: expected %d constants (one per parameter, null if not constant), got %d",
          group_.function, group_.num_params, constants.size()));
    }
    auto instance = std::make_unique<ReorderInstance>(group_, engine_);
    RETURN_IF_ERROR(instance->Load());
    return std::unique_ptr<KernelInstance>(std::move(instance));
  }

  std::string Describe() const override {
    std::string s = absl::StrCat("onednn reorder ", ChannelLayoutName(group_.src), "->",
                                 ChannelLayoutName(group_.dst));
    if (!group_.views.empty()) absl::StrAppend(&s, " [", absl::StrJoin(group_.views, ","), "]");
    return s;
  }

 private:
  const ReorderGroup group_;
  const dnnl::engine& engine_;
};

bool ReorderRuns(const OpDef& op) { return OpIdOf(op) == OpId::kLayoutTransform; }
bool ReorderFuses(const OpDef& op) { return ReorderRuns(op) || op.is_view(); }

}  // namespace

bool IsReorderGroup(const Function& primitive) {
  return MatchReorderGroup(primitive).has_value();
}

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileReorderGroup(const Function& primitive) {
  std::optional<ReorderGroup> group = MatchReorderGroup(primitive);
  if (!group) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "@%s: not a reorder group (a layout_transform of an f32 parameter between NCHW and "
        "NCHW<4|8|16>c, then only single-operand view ops)",
        primitive.name()));
  }
  const dnnl::engine* engine = CpuEngine();
  if (engine == nullptr) {
    return absl::InternalError(absl::StrFormat("@%s: onednn: no cpu engine", primitive.name()));
  }
  return std::unique_ptr<CompiledKernel>(
      std::make_unique<ReorderKernel>(*std::move(group), *engine));
}

const KernelProvider& ReorderKernelProvider() {
  static const GroupProvider provider({"onednn.reorder", kNeedsKernelLibrary, &IsReorderGroup,
                                       &CompileReorderGroup, &ReorderRuns, &ReorderFuses});
  return provider;
}

}  // namespace hetpass
