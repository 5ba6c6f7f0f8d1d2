// Native host kernels for single-op arange / dyn.full / dyn.zeros / dyn.ones groups; see
// creation_kernel.h for the groups taken and the semantics kept.
//
// Phases:
//   match   one call node of one of kOps, every operand a parameter of the body, its result
//           returned; the operands' declared ranks and dtypes in the op's set (scalars for
//           arange and fill_value, a 1-D integer shape for the fills); the dtype attribute
//           read with the registry's default (CheckAttrs).
//   run     the argument count; every operand's dtype and rank against its declaration; the
//           result's dtype against the attribute and its shape against what the values give
//           (the rule's length for arange, the shape operand for the fills); then the loop.
// The scalars are read through a rank-0 Tensor so that their conversions (u64 as double,
// f16 / bf16, saturating float -> int64) are Tensor::GetDouble / GetInt64 themselves, and the
// element encodings of the dtypes without a typed loop go through Tensor::SetDouble / SetInt64:
// the native results are the reference's bit for bit, by construction.
#include "compile_engine/creation_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
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

namespace hetpass {
namespace {

// ---- ops this file binds --------------------------------------------------------------------

enum class Kind { kArange, kFull, kZeros, kOnes };

struct OpEntry {
  OpId id;
  Kind kind;
  int arity;
};
constexpr OpEntry kOps[] = {
    {OpId::kArange, Kind::kArange, 3},
    {OpId::kDynFull, Kind::kFull, 2},
    {OpId::kDynZeros, Kind::kZeros, 1},
    {OpId::kDynOnes, Kind::kOnes, 1},
};

struct Operand {
  int param = 0;  // index into the arguments
  DType dtype = DType::kF32;
  int rank = 0;
};

struct CreationGroup {
  std::string function;  // "@name", for messages
  std::string op_name;   // for Describe
  Kind kind = Kind::kArange;
  int num_params = 0;
  DType result_dtype = DType::kF32;
  std::vector<Operand> operands;
};

// ---- match ----------------------------------------------------------------------------------

// The declared ranks and dtypes each op takes: scalars (any dtype Tensor reads) for arange's
// bounds and dyn.full's value, a 1-D integer vector for a shape.
bool OperandsSupported(Kind kind, const std::vector<Operand>& ops) {
  auto scalar = [&](int i) { return ops[i].rank == 0; };
  auto shape = [&](int i) { return ops[i].rank == 1 && IsInteger(ops[i].dtype); };
  switch (kind) {
    case Kind::kArange:
      return scalar(0) && scalar(1) && scalar(2);
    case Kind::kFull:
      return scalar(0) && shape(1);
    case Kind::kZeros:
    case Kind::kOnes:
      return shape(0);
  }
  return false;
}

std::optional<CreationGroup> MatchCreationGroup(const Function& f) {
  if (!IsPrimitive(f)) return std::nullopt;
  const Block& body = f.body();
  if (body.nodes().size() != 1 || body.results().size() != 1) return std::nullopt;
  const Node& n = *body.nodes()[0];
  if (n.kind() != NodeKind::kCall || n.num_results() != 1 || n.op() == nullptr ||
      body.results()[0] != n.result()) {
    return std::nullopt;
  }
  const OpDef* op = n.op();
  const auto* e = std::find_if(std::begin(kOps), std::end(kOps),
                               [&](const OpEntry& o) { return o.id == OpIdOf(*op); });
  if (e == std::end(kOps) || n.num_operands() != e->arity) return std::nullopt;
  CreationGroup g;
  g.function = "@" + f.name();
  g.op_name = std::string(op->name());
  g.kind = e->kind;
  g.num_params = body.num_params();
  for (const Value* v : n.operands()) {
    if (!v->is_param() || v->param_block() != &body || !v->type().is_tensor()) return std::nullopt;
    g.operands.push_back(Operand{v->index(), v->type().dtype(), v->type().rank()});
  }
  if (!OperandsSupported(g.kind, g.operands)) return std::nullopt;
  absl::StatusOr<Attrs> attrs = op->CheckAttrs(n.attrs());
  if (!attrs.ok()) return std::nullopt;
  g.result_dtype = attrs->GetDType("dtype");
  return g;
}

// ---- run-time checks and reads --------------------------------------------------------------

absl::Status Invalid(const CreationGroup& g, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(g.function, " (", g.op_name, "): ", what));
}

std::string ShapeStr(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::Status CheckArgs(const CreationGroup& g, absl::Span<const TensorArg> args) {
  if (static_cast<int>(args.size()) != g.num_params + 1) {
    return Invalid(g, absl::StrFormat("expects %d arguments, got %d", g.num_params + 1,
                                      args.size()));
  }
  for (size_t i = 0; i < g.operands.size(); ++i) {
    const Operand& o = g.operands[i];
    const TensorArg& a = args[o.param];
    if (a.dtype != o.dtype || static_cast<int>(a.shape.size()) != o.rank) {
      return Invalid(g, absl::StrFormat("operand %d must be %s of rank %d, got %s%s", i,
                                        DTypeName(o.dtype), o.rank, DTypeName(a.dtype),
                                        ShapeStr(a.shape)));
    }
  }
  const TensorArg& out = args[g.num_params];
  if (out.dtype != g.result_dtype) {
    return Invalid(g, absl::StrFormat("result must be %s, got %s", DTypeName(g.result_dtype),
                                      DTypeName(out.dtype)));
  }
  return absl::OkStatus();
}

// A rank-0 argument as a Tensor, so that reads convert exactly as the reference's do.
Tensor ScalarOf(const TensorArg& a) {
  Tensor t = Tensor::Zeros(a.dtype, {});
  std::memcpy(t.mutable_data(), a.data, DTypeSize(a.dtype));
  return t;
}

// Fills `n` elements of `size` bytes at `dst` with the element at `dst` (doubling copies).
void Replicate(uint8_t* dst, int64_t n, size_t size) {
  int64_t done = 1;
  while (done < n) {
    const int64_t c = std::min(done, n - done);
    std::memcpy(dst + done * size, dst, c * size);
    done += c;
  }
}

// ---- arange ---------------------------------------------------------------------------------

absl::Status RunArange(const CreationGroup& g, absl::Span<const TensorArg> args) {
  const Tensor start = ScalarOf(args[g.operands[0].param]);
  const Tensor stop = ScalarOf(args[g.operands[1].param]);
  const Tensor step = ScalarOf(args[g.operands[2].param]);
  const TensorArg& out = args[g.num_params];
  // The rule's length (ArangeLength with every value known), which sized the output.
  const double d_start = start.GetDouble(0), d_stop = stop.GetDouble(0),
               d_step = step.GetDouble(0);
  if (d_step == 0) return Invalid(g, "step must be non-zero");
  const double len = std::ceil((d_stop - d_start) / d_step);
  if (!(len < 9.0e18)) return Invalid(g, "length overflows int64");
  const int64_t n = static_cast<int64_t>(std::max(len, 0.0));
  if (out.shape.size() != 1 || out.shape[0] != n) {
    return Invalid(g, absl::StrFormat("result must be [%d], got %s", n, ShapeStr(out.shape)));
  }
  const DType dt = out.dtype;
  const bool exact = !IsFloat(dt) && !IsFloat(start.dtype()) && !IsFloat(step.dtype());
  if (exact) {
    // int64 arithmetic as the reference's; unsigned so that overflow wraps instead of being
    // undefined (the reference's int64 expression wraps on every target we build for).
    const uint64_t a = static_cast<uint64_t>(start.GetInt64(0));
    const uint64_t d = static_cast<uint64_t>(step.GetInt64(0));
    if (dt == DType::kI64) {
      int64_t* y = out.as<int64_t>();
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<int64_t>(a + static_cast<uint64_t>(i) * d);
    } else if (dt == DType::kI32) {
      int32_t* y = out.as<int32_t>();
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<int32_t>(a + static_cast<uint64_t>(i) * d);
    } else {
      uint8_t* y = out.as<uint8_t>();
      const int size = DTypeSize(dt);
      for (int64_t i = 0; i < n; ++i) {
        StoreInteger(dt, static_cast<int64_t>(a + static_cast<uint64_t>(i) * d), y + i * size);
      }
    }
    return absl::OkStatus();
  }
  if (dt == DType::kF32) {
    float* y = out.as<float>();
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(d_start + static_cast<double>(i) * d_step);
  } else if (dt == DType::kF64) {
    double* y = out.as<double>();
    for (int64_t i = 0; i < n; ++i) y[i] = d_start + static_cast<double>(i) * d_step;
  } else {
    // f16 / bf16, or a float ramp into an integer result (saturating): SetDouble encodes.
    Tensor e = Tensor::Zeros(dt, {});
    uint8_t* y = out.as<uint8_t>();
    const int size = DTypeSize(dt);
    for (int64_t i = 0; i < n; ++i) {
      e.SetDouble(0, d_start + static_cast<double>(i) * d_step);
      std::memcpy(y + i * size, e.data(), size);
    }
  }
  return absl::OkStatus();
}

// ---- dyn.full / dyn.zeros / dyn.ones --------------------------------------------------------

absl::Status RunFill(const CreationGroup& g, absl::Span<const TensorArg> args) {
  const TensorArg& shape = args[g.operands[g.kind == Kind::kFull ? 1 : 0].param];
  const TensorArg& out = args[g.num_params];
  const int size_of_shape = DTypeSize(shape.dtype);
  std::vector<int64_t> want(shape.shape[0]);
  for (size_t i = 0; i < want.size(); ++i) {
    want[i] = *LoadInteger(shape.dtype, static_cast<const uint8_t*>(shape.data) + i * size_of_shape);
    if (want[i] < 0) return Invalid(g, absl::StrFormat("shape value %d is negative", want[i]));
  }
  if (!std::equal(want.begin(), want.end(), out.shape.begin(), out.shape.end())) {
    return Invalid(g, absl::StrFormat("result must be %s, got %s", ShapeStr(want),
                                      ShapeStr(out.shape)));
  }
  // One element encoded as the reference's Fill encodes it.
  Tensor e = Tensor::Zeros(out.dtype, {});
  if (g.kind == Kind::kFull) {
    const Tensor value = ScalarOf(args[g.operands[0].param]);
    if (!IsFloat(value.dtype()) && !IsFloat(out.dtype)) {
      e.SetInt64(0, value.GetInt64(0));
    } else {
      e.SetDouble(0, value.GetDouble(0));
    }
  } else {
    e.SetDouble(0, g.kind == Kind::kOnes ? 1.0 : 0.0);
  }
  const int64_t n = out.num_elements();
  if (n == 0) return absl::OkStatus();
  const size_t size = DTypeSize(out.dtype);
  uint8_t* y = out.as<uint8_t>();
  std::memcpy(y, e.data(), size);
  Replicate(y, n, size);
  return absl::OkStatus();
}

// ---- kernels --------------------------------------------------------------------------------

class CreationInstance final : public KernelInstance {
 public:
  explicit CreationInstance(const CreationGroup& group) : group_(group) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override {
    RETURN_IF_ERROR(CheckArgs(group_, args));
    if (group_.kind == Kind::kArange) return RunArange(group_, args);
    return RunFill(group_, args);
  }

 private:
  const CreationGroup& group_;
};

class CreationKernel final : public CompiledKernel {
 public:
  explicit CreationKernel(CreationGroup group) : group_(std::move(group)) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const>) const override {
    return std::unique_ptr<KernelInstance>(std::make_unique<CreationInstance>(group_));
  }
  std::string Describe() const override { return "native " + group_.op_name; }

 private:
  const CreationGroup group_;
};

bool CreationRuns(const OpDef& op) {
  return std::any_of(std::begin(kOps), std::end(kOps),
                     [&](const OpEntry& e) { return e.id == OpIdOf(op); });
}

}  // namespace

bool IsCreationGroup(const Function& primitive) {
  return MatchCreationGroup(primitive).has_value();
}

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileCreationGroup(const Function& primitive) {
  if (std::optional<CreationGroup> g = MatchCreationGroup(primitive)) {
    return std::unique_ptr<CompiledKernel>(std::make_unique<CreationKernel>(*std::move(g)));
  }
  return absl::UnimplementedError(absl::StrFormat(
      "@%s: not a single arange, dyn.full, dyn.zeros or dyn.ones group", primitive.name()));
}

// Needs the kernel library flag like native.image: with it off (benchmarks, the tests of the
// fallbacks) the engine keeps to the JIT and the reference interpreter.
const KernelProvider& CreationKernelProvider() {
  static const GroupProvider provider({"native.creation", kNeedsKernelLibrary, nullptr,
                                       &CompileCreationGroup, &CreationRuns, nullptr});
  return provider;
}

}  // namespace hetpass
