// Shared oneDNN plumbing and body-matching helpers (see onednn_common.h).
#include "compile_engine/onednn_common.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <variant>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compile_engine/dense_kernel.h"
#include "passes/shape_funcs/op_registry.h"

namespace hetpass::onednn {

bool IsCallOf(const Node& n, OpId op) {
  return n.kind() == NodeKind::kCall && n.op() != nullptr && OpIdOf(*n.op()) == op;
}

bool IsF32Tensor(const Type& t, int rank) {
  return t.is_tensor() && t.dtype() == DType::kF32 && t.rank() == rank;
}

int ParamIndex(const Block& body, const Value* v) {
  return v->is_param() && v->param_block() == &body ? v->index() : -1;
}

std::optional<int64_t> IntAttr(const Node& n, absl::string_view name, int64_t default_value) {
  const AttrValue* a = n.attrs().Find(name);
  if (a == nullptr) return default_value;
  if (const int64_t* v = std::get_if<int64_t>(a)) return *v;
  return std::nullopt;
}

std::string ShapeString(absl::Span<const int64_t> shape) {
  return absl::StrFormat("[%s]", absl::StrJoin(shape, ", "));
}

std::string AnchorEpilogue::Arg(absl::string_view role, int param) const {
  return absl::StrFormat("%s (%s)", role, param_names[param]);
}

std::optional<AnchorEpilogue> MatchAnchorEpilogue(const Function& f, OpId anchor, bool allow_add) {
  if (!IsPrimitive(f)) return std::nullopt;
  const Block& body = f.body();
  const auto& nodes = body.nodes();
  if (nodes.empty() || nodes.size() > 3 || body.results().size() != 1) return std::nullopt;

  AnchorEpilogue g;
  g.function = "@" + f.name();
  g.num_params = body.num_params();
  for (const auto& p : body.params()) {
    g.param_names.push_back("%" + p->name());
    g.param_types.push_back(p->type());
  }
  const Node& a = *nodes[0];
  if (!IsCallOf(a, anchor) || a.num_operands() != 2 || a.num_results() != 1) return std::nullopt;
  g.anchor = &a;
  g.data = ParamIndex(body, a.operand(0));
  g.weight = ParamIndex(body, a.operand(1));
  if (g.data < 0 || g.weight < 0 || g.data == g.weight) return std::nullopt;
  const Value* cur = a.result(0);

  size_t i = 1;
  if (i < nodes.size() &&
      (IsCallOf(*nodes[i], OpId::kNnBiasAdd) || (allow_add && IsCallOf(*nodes[i], OpId::kAdd)))) {
    const Node& b = *nodes[i];
    g.bias_node = &b;
    g.bias_is_add = IsCallOf(b, OpId::kAdd);
    if (b.num_operands() != 2 || b.num_results() != 1) return std::nullopt;
    const int cur_operand = b.operand(0) == cur ? 0 : (g.bias_is_add && b.operand(1) == cur ? 1 : -1);
    if (cur_operand < 0) return std::nullopt;
    g.bias = ParamIndex(body, b.operand(1 - cur_operand));
    if (g.bias < 0 || g.bias == g.data || g.bias == g.weight ||
        !IsF32Tensor(g.param_types[g.bias], 1)) {
      return std::nullopt;
    }
    cur = b.result(0);
    ++i;
  }
  if (i < nodes.size() && IsCallOf(*nodes[i], OpId::kNnRelu)) {
    const Node& relu = *nodes[i];
    if (relu.num_operands() != 1 || relu.num_results() != 1 || relu.operand(0) != cur) {
      return std::nullopt;
    }
    g.relu = true;
    cur = relu.result(0);
    ++i;
  }
  if (i != nodes.size() || body.results()[0] != cur) return std::nullopt;
  return g;
}

bool IsEpilogueOp(OpId op, bool allow_add) {
  return op == OpId::kNnBiasAdd || op == OpId::kNnRelu || (allow_add && op == OpId::kAdd);
}

bool DeclaredResultIsF32(const Function& f, int rank) {
  if (f.result_types().empty()) return true;
  if (f.result_types().size() != 1) return false;
  const Type& r = f.result_types()[0];
  return r.is_unset() || IsF32Tensor(r, rank);
}

absl::Status LibraryError(absl::string_view function, const std::exception& e) {
  if (const auto* d = dynamic_cast<const dnnl::error*>(&e)) {
    return absl::InternalError(absl::StrFormat("%s: onednn: %s (status %d)", function, d->what(),
                                               static_cast<int>(d->status)));
  }
  return absl::InternalError(absl::StrFormat("%s: onednn: %s", function, e.what()));
}

const dnnl::engine* CpuEngine() {
  static const dnnl::engine* engine = []() -> const dnnl::engine* {
    try {
      return new dnnl::engine(dnnl::engine::kind::cpu, 0);
    } catch (const dnnl::error&) {
      return nullptr;
    }
  }();
  return engine;
}

dnnl::stream& ThreadStream(const dnnl::engine& engine) {
  thread_local std::optional<dnnl::stream> stream;
  if (!stream) stream.emplace(engine);
  return *stream;
}

void* ThreadScratch(size_t bytes) {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<void, Free> buffer;
  thread_local size_t capacity = 0;
  if (bytes > capacity) {
    const size_t rounded = (bytes + 63) / 64 * 64;
    buffer.reset(std::aligned_alloc(64, rounded));
    capacity = buffer ? rounded : 0;
  }
  return buffer.get();
}

ScopedLibraryThreads::ScopedLibraryThreads()
    : previous_(omp_get_max_threads()), wanted_(KernelLibraryThreads()) {
  if (previous_ != wanted_) omp_set_num_threads(wanted_);
}

ScopedLibraryThreads::~ScopedLibraryThreads() {
  if (previous_ != wanted_) omp_set_num_threads(previous_);
}

PlainLayoutBridge MakePlainLayoutBridge(const dnnl::engine& engine,
                                        const dnnl::memory::desc& src_plain,
                                        const dnnl::memory::desc& src,
                                        const dnnl::memory::desc& dst,
                                        const dnnl::memory::desc& dst_plain,
                                        const dnnl::memory::desc& primitive_scratchpad) {
  PlainLayoutBridge b;
  b.src_plain = src_plain;
  b.dst_plain = dst_plain;
  b.src = src;
  b.dst = dst;
  dnnl::primitive_attr reorder_attr;
  reorder_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (src != src_plain) {
    const dnnl::reorder::primitive_desc rpd(engine, src_plain, engine, src, reorder_attr);
    b.reorder_in.emplace(rpd);
    b.in_scratchpad = rpd.scratchpad_desc();
  }
  if (dst != dst_plain) {
    const dnnl::reorder::primitive_desc rpd(engine, dst, engine, dst_plain, reorder_attr);
    b.reorder_out.emplace(rpd);
    b.out_scratchpad = rpd.scratchpad_desc();
  }
  auto aligned = [](size_t bytes) { return (bytes + 63) / 64 * 64; };
  b.src_offset = aligned(std::max({primitive_scratchpad.get_size(), b.in_scratchpad.get_size(),
                                   b.out_scratchpad.get_size()}));
  b.dst_offset = b.src_offset + (b.reorder_in ? aligned(src.get_size()) : 0);
  b.scratch_bytes = b.dst_offset + (b.reorder_out ? aligned(dst.get_size()) : 0);
  return b;
}

absl::Status CheckF32Arg(absl::string_view function, absl::string_view name,
                         absl::string_view short_name, const TensorArg& a, int rank) {
  if (a.dtype != DType::kF32 || static_cast<int>(a.shape.size()) != rank) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %s must be an f32 tensor of rank %d, got %s%s",
                                                      function, name, rank, DTypeName(a.dtype),
                                                      ShapeString(a.shape)));
  }
  for (int64_t d : a.shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: %s has a negative dim: %s", function,
                                                        short_name, ShapeString(a.shape)));
    }
  }
  if (a.data == nullptr && a.num_elements() > 0) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %s has no data", function, short_name));
  }
  return absl::OkStatus();
}

}  // namespace hetpass::onednn
