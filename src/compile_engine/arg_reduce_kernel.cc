// Native host kernels for single-op argmax / argmin groups; see arg_reduce_kernel.h for the
// groups taken and the semantics kept.
//
// Phases:
//   match   one call node of argmax / argmin whose operand is a parameter and whose result is
//           returned; data f32 / f64 / i32 / i64; the attributes (registry defaults via
//           CheckAttrs) give a valid reduced-axis mask for the data's rank.
//   run     the argument count and dtypes; the result shape against the data shape reduced
//           (keepdims: unit axes); no reduced axis of size 0; then the reference's single pass
//           over the data in row-major order, typed instead of through Tensor::GetDouble.
#include "compile_engine/arg_reduce_kernel.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compile_engine/group_provider.h"
#include "passes/shape_funcs/op_ids.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/concrete_shapes.h"

namespace hetpass {
namespace {

struct ArgGroup {
  std::string function;  // "@name", for messages
  std::string op_name;   // for Describe
  bool is_max = true;
  bool last = false;  // select_last_index
  bool keepdims = false;
  int num_params = 0;
  int param = 0;
  DType data_dtype = DType::kF32;
  DType result_dtype = DType::kI32;
  std::vector<bool> reduced;  // per data axis
};

bool DataSupported(DType t) {
  return t == DType::kF32 || t == DType::kF64 || t == DType::kI32 || t == DType::kI64;
}

std::optional<ArgGroup> MatchArgGroup(const Function& f) {
  if (!IsPrimitive(f)) return std::nullopt;
  const Block& body = f.body();
  if (body.nodes().size() != 1 || body.results().size() != 1) return std::nullopt;
  const Node& n = *body.nodes()[0];
  if (n.kind() != NodeKind::kCall || n.num_results() != 1 || n.op() == nullptr ||
      body.results()[0] != n.result() || n.num_operands() != 1) {
    return std::nullopt;
  }
  const OpId id = OpIdOf(*n.op());
  if (id != OpId::kArgmax && id != OpId::kArgmin) return std::nullopt;
  const Value* v = n.operand(0);
  if (!v->is_param() || v->param_block() != &body || !v->type().is_tensor() ||
      !DataSupported(v->type().dtype())) {
    return std::nullopt;
  }
  absl::StatusOr<Attrs> attrs = n.op()->CheckAttrs(n.attrs());
  if (!attrs.ok()) return std::nullopt;
  ArgGroup g;
  g.function = "@" + f.name();
  g.op_name = std::string(n.op()->name());
  g.is_max = id == OpId::kArgmax;
  g.last = attrs->GetBool("select_last_index");
  g.keepdims = attrs->GetBool("keepdims");
  g.num_params = body.num_params();
  g.param = v->index();
  g.data_dtype = v->type().dtype();
  g.result_dtype = attrs->GetDType("dtype");
  if (!IsInteger(g.result_dtype)) return std::nullopt;
  std::optional<std::vector<bool>> mask =
      ReducedAxisMask(attrs->GetIntList("axis"), attrs->GetBool("exclude"), v->type().rank());
  if (!mask) return std::nullopt;
  g.reduced = *std::move(mask);
  return g;
}

absl::Status Invalid(const ArgGroup& g, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(g.function, " (", g.op_name, "): ", what));
}

std::string ShapeStr(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

// The reference's loop (reduce.cc ReduceKernel with Accumulate), typed: `o` the output
// position of the kept axes, `pos` the position over the reduced axes, both row-major.
template <typename T>
void ArgLoop(const ArgGroup& g, const T* x, absl::Span<const int64_t> xs, int64_t n_out,
             std::vector<int64_t>& arg) {
  std::vector<double> best(n_out, 0.0);
  std::vector<char> seen(n_out, 0);
  std::vector<int64_t> idx(xs.size(), 0);
  int64_t total = 1;
  for (int64_t d : xs) total *= d;
  for (int64_t i = 0; i < total; ++i) {
    int64_t o = 0, pos = 0;
    for (size_t a = 0; a < xs.size(); ++a) {
      if (g.reduced[a]) {
        pos = pos * xs[a] + idx[a];
      } else {
        o = o * xs[a] + idx[a];
      }
    }
    const double v = static_cast<double>(x[i]);
    const bool better = g.is_max ? v > best[o] : v < best[o];
    if (!seen[o] || better || (g.last && v == best[o])) {
      seen[o] = 1;
      best[o] = v;
      arg[o] = pos;
    }
    for (int a = static_cast<int>(xs.size()) - 1; a >= 0; --a) {
      if (++idx[a] < xs[a]) break;
      idx[a] = 0;
    }
  }
}

absl::Status RunArg(const ArgGroup& g, absl::Span<const TensorArg> args) {
  if (static_cast<int>(args.size()) != g.num_params + 1) {
    return Invalid(g, absl::StrFormat("expects %d arguments, got %d", g.num_params + 1,
                                      args.size()));
  }
  const TensorArg& data = args[g.param];
  const TensorArg& out = args[g.num_params];
  if (data.dtype != g.data_dtype || data.shape.size() != g.reduced.size()) {
    return Invalid(g, absl::StrFormat("data must be %s of rank %d, got %s%s",
                                      DTypeName(g.data_dtype), g.reduced.size(),
                                      DTypeName(data.dtype), ShapeStr(data.shape)));
  }
  if (out.dtype != g.result_dtype) {
    return Invalid(g, absl::StrFormat("result must be %s, got %s", DTypeName(g.result_dtype),
                                      DTypeName(out.dtype)));
  }
  std::vector<int64_t> want;
  for (size_t a = 0; a < g.reduced.size(); ++a) {
    if (!g.reduced[a]) {
      want.push_back(data.shape[a]);
      continue;
    }
    if (data.shape[a] == 0) return Invalid(g, absl::StrFormat("cannot reduce axis %d of size 0", a));
    if (g.keepdims) want.push_back(1);
  }
  if (!std::equal(want.begin(), want.end(), out.shape.begin(), out.shape.end())) {
    return Invalid(g, absl::StrFormat("result must be %s, got %s", ShapeStr(want),
                                      ShapeStr(out.shape)));
  }
  const int64_t n_out = out.num_elements();
  std::vector<int64_t> arg(n_out, -1);
  switch (g.data_dtype) {
    case DType::kF32: ArgLoop(g, data.as<const float>(), data.shape, n_out, arg); break;
    case DType::kF64: ArgLoop(g, data.as<const double>(), data.shape, n_out, arg); break;
    case DType::kI32: ArgLoop(g, data.as<const int32_t>(), data.shape, n_out, arg); break;
    case DType::kI64: ArgLoop(g, data.as<const int64_t>(), data.shape, n_out, arg); break;
    default: return Invalid(g, "unsupported data dtype");
  }
  uint8_t* y = out.as<uint8_t>();
  const int size = DTypeSize(out.dtype);
  for (int64_t o = 0; o < n_out; ++o) StoreInteger(out.dtype, arg[o], y + o * size);
  return absl::OkStatus();
}

class ArgInstance final : public KernelInstance {
 public:
  explicit ArgInstance(const ArgGroup& group) : group_(group) {}
  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override {
    return RunArg(group_, args);
  }

 private:
  const ArgGroup& group_;
};

class ArgKernel final : public CompiledKernel {
 public:
  explicit ArgKernel(ArgGroup group) : group_(std::move(group)) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const>) const override {
    return std::unique_ptr<KernelInstance>(std::make_unique<ArgInstance>(group_));
  }
  std::string Describe() const override { return "native " + group_.op_name; }

 private:
  const ArgGroup group_;
};

bool ArgRuns(const OpDef& op) {
  return OpIdOf(op) == OpId::kArgmax || OpIdOf(op) == OpId::kArgmin;
}

}  // namespace

bool IsArgReduceGroup(const Function& primitive) { return MatchArgGroup(primitive).has_value(); }

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileArgReduceGroup(const Function& primitive) {
  if (std::optional<ArgGroup> g = MatchArgGroup(primitive)) {
    return std::unique_ptr<CompiledKernel>(std::make_unique<ArgKernel>(*std::move(g)));
  }
  return absl::UnimplementedError(absl::StrFormat(
      "@%s: not a single argmax / argmin group of f32, f64, i32 or i64 data", primitive.name()));
}

// Needs the kernel library flag like the other native providers: with it off the engine keeps
// to the JIT and the reference interpreter.
const KernelProvider& ArgReduceKernelProvider() {
  static const GroupProvider provider({"native.argreduce", kNeedsKernelLibrary, nullptr,
                                       &CompileArgReduceGroup, &ArgRuns, nullptr});
  return provider;
}

}  // namespace hetpass
