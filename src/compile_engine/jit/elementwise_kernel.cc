// Phase 4 of the CPU JIT for elementwise / broadcast groups (the algorithm: lowering.cc): the
// compiled loop nest's run-time side (argument checks, the broadcast shape program, stride
// computation, dim collapsing, the choice between `fast` and `generic`), the kernel objects
// and the "llvm.elementwise" provider.
#include "compile_engine/jit/kernels.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compile_engine/group_provider.h"
#include "compile_engine/jit/llvm_emitter.h"
#include "compile_engine/jit/llvm_jit.h"
#include "compile_engine/jit/loop_plan.h"
#include "compile_engine/jit/run_checks.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/concrete_shapes.h"

namespace hetpass {
namespace {

using namespace ::hetpass::jit_internal;  // NOLINT: the JIT's own internals


using KernelFn = int32_t (*)(void* const* bases, const int64_t* dims, const int64_t* strides);
using Shape = ShapeVector;  // shape_funcs/concrete_shapes.h

struct Program {
  Plan plan;
  Lowered lowered;
  std::unique_ptr<JitCode> code;
  KernelFn fast = nullptr;
  KernelFn generic = nullptr;  // nullptr for static shapes (never needed)
  std::string description;
};





absl::Status RunProgram(const Program& p, absl::Span<const TensorArg> args) {
  const Plan& plan = p.plan;
  const Lowered& lowered = p.lowered;
  const int np = plan.num_params;
  auto invalid = [&](const std::string& message) {
    return absl::InvalidArgumentError(absl::StrCat("@", plan.fn, ": ", message));
  };
  if (static_cast<int>(args.size()) != np + 1) {
    return invalid(absl::StrCat("kernel expects ", np + 1, " arguments (", np,
                                " parameters and 1 result), got ", args.size()));
  }
  auto arg_name = [&](int i) {
    return i < np ? absl::StrCat("argument ", i, " (", plan.names[i], ")")
                  : absl::StrCat("argument ", i, " (result 0)");
  };
  // Arguments against the declared types (dtype, rank, static dims).
  for (int i = 0; i <= np; ++i) {
    const int v = i < np ? i : plan.result;
    const TensorArg& a = args[i];
    if (a.dtype != plan.dtypes[v]) {
      return invalid(absl::StrCat(arg_name(i), " has dtype ", DTypeName(a.dtype), ", expected ",
                                  DTypeName(plan.dtypes[v])));
    }
    bool ok = static_cast<int>(a.shape.size()) == plan.rank(v);
    for (size_t d = 0; ok && d < a.shape.size(); ++d) {
      const DimExpr& declared = plan.dims[v][d];
      ok = a.shape[d] >= 0 && (!declared.is_constant() || declared.constant() == a.shape[d]);
    }
    if (!ok) {
      return invalid(absl::StrCat(arg_name(i), " has shape ", ShapeString(a.shape),
                                  ", which does not fit its type ", TypeString(plan, v)));
    }
  }
  // The broadcast shape program.
  absl::InlinedVector<Shape, 8> shapes(plan.dtypes.size());
  for (int i = 0; i < np; ++i) shapes[i].assign(args[i].shape.begin(), args[i].shape.end());
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    RETURN_IF_ERROR(BroadcastStepShape(plan, plan.steps[k], np + static_cast<int>(k),
                                       absl::MakeSpan(shapes)));
  }
  const TensorArg& out = args[np];
  const Shape& expected = shapes[plan.result];
  if (!std::equal(expected.begin(), expected.end(), out.shape.begin(), out.shape.end())) {
    return invalid(absl::StrCat(arg_name(np), " has shape ", ShapeString(out.shape),
                                ", expected the broadcast shape ", ShapeString(expected)));
  }
  if (out.num_elements() == 0) return absl::OkStatus();
  if (out.data == nullptr) return invalid(absl::StrCat(arg_name(np), " has no data"));
  for (int i = 0; i < np; ++i) {
    const TensorArg& a = args[i];
    if (a.num_elements() == 0) continue;
    if (a.data == nullptr) return invalid(absl::StrCat(arg_name(i), " has no data"));
    if (!Overlaps(a, out)) continue;
    // The only overlap the parallel inner loop allows: the very same elements.
    const bool same =
        a.data == out.data && DTypeSize(a.dtype) == DTypeSize(out.dtype) &&
        std::equal(a.shape.begin(), a.shape.end(), out.shape.begin(), out.shape.end());
    if (!same) {
      return invalid(absl::StrCat(arg_name(i),
                                  " overlaps the output without being the same buffer of the "
                                  "same shape"));
    }
  }

  // Per-slot strides over the output dims, then collapsed loop levels.
  const int rank = lowered.out_rank;
  const int depth = lowered.depth;
  const int slots = static_cast<int>(lowered.accesses.size()) + 1;
  absl::InlinedVector<int64_t, 48> st(static_cast<size_t>(slots) * std::max(rank, 1), 0);
  int64_t out_stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    st[d] = out_stride;
    out_stride *= out.shape[d];
  }
  for (int a = 0; a < slots - 1; ++a) {
    const Access& access = lowered.accesses[a];
    const absl::Span<const int64_t> shape = args[access.param].shape;
    int64_t contiguous = 1;
    for (int j = static_cast<int>(shape.size()) - 1; j >= 0; --j) {
      if (shape[j] != 1) st[(a + 1) * rank + access.pos[j]] = contiguous;
      contiguous *= shape[j];
    }
  }
  absl::InlinedVector<int64_t, 6> level_dims;
  absl::InlinedVector<int64_t, 48> level_strides;  // [level][slot]
  for (int d = 0; d < rank; ++d) {
    const int64_t n = out.shape[d];
    if (n == 1) continue;
    if (!level_dims.empty()) {
      const size_t last = level_dims.size() - 1;
      bool merge = true;
      for (int s = 0; s < slots && merge; ++s) {
        merge = level_strides[last * slots + s] == st[s * rank + d] * n;
      }
      if (merge) {
        level_dims[last] *= n;
        for (int s = 0; s < slots; ++s) level_strides[last * slots + s] = st[s * rank + d];
        continue;
      }
    }
    level_dims.push_back(n);
    for (int s = 0; s < slots; ++s) level_strides.push_back(st[s * rank + d]);
  }
  const int used = static_cast<int>(level_dims.size());
  absl::InlinedVector<int64_t, 6> dims(depth, 1);
  absl::InlinedVector<int64_t, 48> strides(static_cast<size_t>(slots) * depth, 0);
  for (int l = 0; l < used; ++l) {
    const int level = depth - used + l;
    dims[level] = level_dims[l];
    for (int s = 0; s < slots; ++s) strides[s * depth + level] = level_strides[l * slots + s];
  }
  // `fast` assumes the statically classified inner strides; a unit inner level takes any.
  const int inner = depth - 1;
  bool fast = true;
  for (int s = 0; s < slots; ++s) {
    const int64_t want = (s == 0 || lowered.accesses[s - 1].inner_contiguous) ? 1 : 0;
    int64_t& have = strides[s * depth + inner];
    if (dims[inner] == 1) have = want;
    fast = fast && have == want;
  }

  absl::InlinedVector<void*, 8> bases(slots);
  bases[0] = out.data;
  for (int a = 0; a < slots - 1; ++a) bases[a + 1] = args[lowered.accesses[a].param].data;
  const KernelFn fn = fast ? p.fast : p.generic;
  if (fn == nullptr) {
    return absl::InternalError(absl::StrCat("@", plan.fn,
                                            ": the inner strides of static shapes "
                                            "differ from the compiled ones"));
  }
  const int32_t flags = fn(bases.data(), dims.data(), strides.data());
  if ((flags & kFlagDivisionByZero) != 0) return invalid("integer division by zero");
  return absl::OkStatus();
}

using JitElementwiseKernel = JitProgramKernel<Program, &RunProgram>;


struct Prepared {
  Plan plan;
  Lowered lowered;
  BuiltModule built;
};

// The plan and the unoptimised module (fixed symbol names: see llvm_jit.h).
absl::StatusOr<Prepared> Prepare(const Function& primitive) {
  Prepared p;
  ASSIGN_OR_RETURN(p.plan, AnalyzeGroup(primitive));
  ASSIGN_OR_RETURN(p.lowered, LowerPlan(p.plan));
  p.built = BuildModule(p.plan, p.lowered, kKernelSymbol);
  return p;
}

}  // namespace

bool IsJitElementwise(const Function& primitive) {
  absl::StatusOr<Plan> plan = AnalyzeGroup(primitive);
  return plan.ok() && LowerPlan(*plan).ok();
}

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileJitElementwise(
    const Function& primitive, const JitElementwiseOptions& options) {
  ASSIGN_OR_RETURN(LlvmJit * jit, LlvmJit::Get());
  ASSIGN_OR_RETURN(Prepared prepared, Prepare(primitive));
  auto program = std::make_shared<Program>();
  program->plan = std::move(prepared.plan);
  program->lowered = std::move(prepared.lowered);
  program->description = DescribePlan(program->plan);
  std::vector<std::string> symbols = {prepared.built.fast_name};
  if (!prepared.built.generic_name.empty()) symbols.push_back(prepared.built.generic_name);
  ASSIGN_OR_RETURN(program->code,
                   jit->Compile(std::move(prepared.built.context), std::move(prepared.built.module),
                                symbols, jit->KernelOptions(primitive.name(), JitLoops::kVectorize, options.dump_llvm_ir,
                                                   options.cache)));
  program->fast = reinterpret_cast<KernelFn>(program->code->symbol(0));
  if (symbols.size() > 1) program->generic = reinterpret_cast<KernelFn>(program->code->symbol(1));
  return std::make_unique<JitElementwiseKernel>(std::move(program));
}

absl::StatusOr<std::string> JitElementwiseOptimizedIr(const Function& primitive) {
  ASSIGN_OR_RETURN(LlvmJit * jit, LlvmJit::Get());
  ASSIGN_OR_RETURN(Prepared prepared, Prepare(primitive));
  RETURN_IF_ERROR(jit->Optimize(*prepared.built.module));
  return LlvmJit::PrintModule(*prepared.built.module);
}

JitCounts ProcessJitCounts() {
  absl::StatusOr<LlvmJit*> jit = LlvmJit::Get();
  if (!jit.ok()) return {};
  const LlvmJitStats s = (*jit)->stats();
  return {s.codegens, s.cache_loads};
}

namespace {
bool JitElementwiseOp(const OpDef& op) {
  const Lowering* l = FindLowering(OpIdOf(op));
  return l != nullptr && l->form != OpForm::kInjective;
}
}  // namespace

const KernelProvider& JitElementwiseProvider() {
  static const GroupProvider provider(
      {"llvm.elementwise", kNeedsJit, &IsJitElementwise,
       nullptr, &JitElementwiseOp, &JitElementwiseOp,
       [](const Function& f, const KernelTarget& target) {
         JitElementwiseOptions options;
         options.cache = target.kernel_cache;
         return CompileJitElementwise(f, options);
       }});
  return provider;
}

}  // namespace hetpass
