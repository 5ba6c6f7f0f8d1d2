// Phase 4 of the CPU JIT for groups with injective ops (the algorithm of the elementwise path is
// in lowering.cc; this file explains the injective path): the run-time shape program, the
// kernel objects and the "llvm.injective" provider.
//
// Groups of elementwise ops plus injective ops (transpose, reshape, dyn.reshape, expand_dims,
// squeeze, strided_slice, dyn.strided_slice, take, concatenate, broadcast_to,
// dyn.broadcast_to), as TVM schedules them: ONE scalar loop nest over the output index space;
// the result's element at an index is evaluated by walking the expression back to the
// parameters, each op mapping its output index to its operands' indices:
//   elementwise  right-aligned broadcast (a unit dim reads index 0); bias: the data's axis
//   transpose    in[perm[j]] = out[j]
//   reshape      linearise over the result's dims, delinearise over the data's (run-time dims)
//   expand_dims  drop the new axes;  squeeze: insert 0 at the dropped dims
//   strided_slice  in[j] = start[j] + out[j] * stride[j] (start/stride computed by Run from the
//                attributes or, for dyn.strided_slice, from the run-time begin/end/strides)
//   take         read the index at the middle dims, resolve it by the mode (clip, wrap, fast)
//   concatenate  a branch per input on the axis index range; only that input is read
//   broadcast_to right-aligned broadcast
// Loads of a (value, index) pair are shared within one element; loop-invariant index
// arithmetic is hoisted by LLVM (O3). There are no intermediate buffers. The innermost loop
// carries llvm.loop.parallel_accesses (Run refuses any overlap of the output with an input),
// so LLVM vectorises it where that pays (contiguous reads, e.g. the rows of a take) without
// run-time alias checks; outer loops are neither vectorised nor unrolled (compile time).
// Reshape divides by run-time dims with multipliers computed by Run (a 64-bit multiply
// instead of a 64-bit divide per dim and element, exact below 2^32 elements); a second entry
// point with plain udiv serves element counts from 2^32 on.
//
// squeeze without axes drops the dims that are statically 1 (as the shape rule does at
// compile time); the reference kernel, run on concrete shapes, would also drop a symbolic dim
// that is 1 at run time and then miss the declared rank.
//
// Known gaps (Unimplemented, so the reference kernels run them): dyn.squeeze, dyn.unsqueeze,
// tile, nn.pad, image.resize2d; dyn.* operands computed inside the group; take in mode "fast"
// on computed indices.
//
// Run (per call, host): the shape program on concrete shapes (every op's shape rule, with the
// reference kernels' errors: element counts of reshape, squeezed dims that are not 1, slice
// strides of 0, broadcast_to targets, take on an empty axis and, in mode "fast", every index
// checked like the reference does even if no output element reads it); the run-time values of
// dyn.* operands are read from their arguments (parameters of the group, on the host); every
// intermediate must fit its declared type (the emitted code uses declared constant dims); then
// dims of every value and the slice starts/strides are passed to the entry point. The output
// must not overlap any input (the kernel reads inputs at permuted indices). The arithmetic of
// broadcasting, reshape, strided_slice and broadcast_to is shape_funcs/concrete_shapes.h's,
// which is property-tested against the registry's rules.
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
#include "compile_engine/jit/injective_run.h"
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


using Ints = absl::InlinedVector<int64_t, 8>;

struct InjectiveProgram {
  Plan plan;
  InjectiveLayout layout;
  std::unique_ptr<JitCode> code;
  KernelFn fn = nullptr;       // (bases, dims, aux)
  KernelFn fn_wide = nullptr;  // element counts >= 2^32 (layout.needs_wide only)
  std::string description;
};


// The values of a 0-D or 1-D integer argument.
Ints HostInts(const TensorArg& a) {
  Ints out;
  const int64_t n = a.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    const void* p = static_cast<const char*>(a.data) + i * DTypeSize(a.dtype);
    out.push_back(LoadInteger(a.dtype, p).value_or(0));
  }
  return out;
}

// The shape of injective step `v`; slices also fill their start/stride entries of aux.
absl::Status InjectiveStepShape(const Plan& plan, const Step& step, int v,
                                absl::Span<const TensorArg> args, absl::Span<Shape> shapes,
                                int64_t* aux, bool tensors_on_host) {
  const std::vector<int>& a = step.args;
  const Shape& in = shapes[a[0]];
  Shape& out = shapes[v];
  out.clear();
  switch (step.op) {
    case JitOp::kTranspose:
      for (int64_t p : step.ints) out.push_back(in[p]);
      return absl::OkStatus();
    case JitOp::kReshape:
    case JitOp::kDynReshape: {
      Ints host;
      const absl::Span<const int64_t> target =
          step.op == JitOp::kReshape ? absl::MakeConstSpan(step.ints)
                                     : absl::MakeConstSpan(host = HostInts(args[a[1]]));
      if (static_cast<int>(target.size()) != plan.rank(v)) {
        return absl::InvalidArgumentError(absl::StrCat("newshape has ", target.size(),
                                                       " values for a result of rank ",
                                                       plan.rank(v)));
      }
      RETURN_IF_ERROR(ReshapeShape(in, target, out));
      for (size_t k = 1; k < in.size(); ++k) {
        const uint64_t d = static_cast<uint64_t>(in[k]);
        aux[k] = d <= 1 ? 0 : static_cast<int64_t>(UINT64_MAX / d + 1);
      }
      return absl::OkStatus();
    }
    case JitOp::kExpandDims:
      out = in;
      out.insert(out.begin() + step.axis, step.num, 1);
      return absl::OkStatus();
    case JitOp::kSqueeze:
      for (size_t j = 0; j < in.size(); ++j) {
        if (step.ints[j] == 0) {
          out.push_back(in[j]);
        } else if (in[j] != 1) {
          return absl::InvalidArgumentError(
              absl::StrCat("cannot squeeze axis ", j, " of size ", in[j]));
        }
      }
      return absl::OkStatus();
    case JitOp::kStridedSlice:
      return StridedSliceShape(
          in, SliceArgs{step.begin, step.end, step.strides, step.axes, step.size_mode}, out, aux);
    case JitOp::kDynStridedSlice: {
      const Ints begin = HostInts(args[a[1]]), end = HostInts(args[a[2]]);
      const Ints strides = HostInts(args[a[3]]);
      return StridedSliceShape(in, SliceArgs{begin, end, strides, {}, step.size_mode}, out, aux);
    }
    case JitOp::kTake: {
      const Shape& indices = shapes[a[1]];
      const int64_t axis = step.axis, n = in[axis];
      out.assign(in.begin(), in.begin() + axis);
      out.insert(out.end(), indices.begin(), indices.end());
      out.insert(out.end(), in.begin() + axis + 1, in.end());
      int64_t outer = 1, num_indices = 1;
      for (int64_t j = 0; j < axis; ++j) outer *= in[j];
      for (int64_t d : indices) num_indices *= d;
      if (outer == 0 || num_indices == 0) return absl::OkStatus();  // nothing is resolved
      if (n <= 0) {
        return absl::InvalidArgumentError("take: no index is in range for an axis of size 0");
      }
      // On a device the kernel flags an index out of range itself (the device's error word).
      if (step.mode != TakeMode::kFast || !tensors_on_host) return absl::OkStatus();
      for (int64_t i : HostInts(args[a[1]])) {
        if (i < -n || i >= n) {
          return absl::InvalidArgumentError(
              absl::StrCat("take: index ", i, " is out of range for an axis of size ", n));
        }
      }
      return absl::OkStatus();
    }
    case JitOp::kConcatenate:
      out = in;
      for (size_t i = 1; i < a.size(); ++i) {
        const Shape& s = shapes[a[i]];
        for (size_t d = 0; d < s.size(); ++d) {
          if (static_cast<int64_t>(d) == step.axis) {
            out[d] += s[d];
          } else if (s[d] != out[d]) {
            return absl::InvalidArgumentError(absl::StrCat(
                "concatenate: input ", i, " has ", s[d], " at axis ", d, ", expected ", out[d]));
          }
        }
      }
      return absl::OkStatus();
    case JitOp::kBroadcastTo:
    case JitOp::kDynBroadcastTo: {
      Ints host;
      const absl::Span<const int64_t> target =
          step.op == JitOp::kBroadcastTo ? absl::MakeConstSpan(step.ints)
                                         : absl::MakeConstSpan(host = HostInts(args[a[1]]));
      if (static_cast<int>(target.size()) != plan.rank(v)) {
        return absl::InvalidArgumentError(absl::StrCat("broadcast_to: target has ", target.size(),
                                                       " dims for a result of rank ", plan.rank(v)));
      }
      return BroadcastToShape(in, target, out, /*both_ways=*/step.op == JitOp::kDynBroadcastTo);
    }
    case JitOp::kLayoutTransform: {
      const int64_t src = step.ints[0], dst = step.ints[1];
      if (src > 0 && in[4] != src) {
        return absl::InvalidArgumentError(
            absl::StrCat("layout_transform: data's last dim is ", in[4], ", not its block ", src));
      }
      const int64_t channels = src > 0 ? in[1] * src : in[1];
      if (dst == 0) {
        out.insert(out.end(), {in[0], channels, in[2], in[3]});
        return absl::OkStatus();
      }
      if (channels % dst != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "layout_transform: ", channels, " channels do not split into blocks of ", dst));
      }
      out.insert(out.end(), {in[0], channels / dst, in[2], in[3], dst});
      return absl::OkStatus();
    }
    default:
      return absl::InternalError("not an injective op");
  }
}

}  // namespace

namespace jit_internal {

absl::Status PrepareInjective(const Plan& plan, const InjectiveLayout& layout,
                              absl::Span<const TensorArg> args, bool tensors_on_host,
                              InjectiveLaunch* launch) {
  const int np = plan.num_params;
  auto invalid = [&](const std::string& message) {
    return absl::InvalidArgumentError(absl::StrCat("@", plan.fn, ": ", message));
  };
  if (static_cast<int>(args.size()) != np + 1) {
    return invalid(absl::StrCat("kernel expects ", np + 1, " arguments (", np,
                                " parameters and 1 result), got ", args.size()));
  }
  for (int i = 0; i <= np; ++i) {
    const int v = i < np ? i : plan.result;
    if (args[i].dtype != plan.dtypes[v] || static_cast<int>(args[i].shape.size()) != plan.rank(v)) {
      return invalid(absl::StrCat("argument ", i, " is ", DTypeName(args[i].dtype),
                                  ShapeString(args[i].shape), ", which does not fit its type ",
                                  TypeString(plan, v)));
    }
    if (args[i].data == nullptr && args[i].num_elements() > 0) {
      return invalid(absl::StrCat("argument ", i, " has no data"));
    }
  }
  // The shape program; every value must fit its declared type.
  absl::InlinedVector<Shape, 8> shapes(plan.dtypes.size());
  // Sized at least 1: the GPU kernel's parameter arrays are never empty.
  launch->aux.assign(std::max(layout.num_aux, 1), 0);
  for (int i = 0; i < np; ++i) shapes[i].assign(args[i].shape.begin(), args[i].shape.end());
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const Step& step = plan.steps[k];
    const int v = np + static_cast<int>(k);
    if (step.form != OpForm::kInjective) {
      RETURN_IF_ERROR(BroadcastStepShape(plan, step, v, absl::MakeSpan(shapes)));
    } else {
      const int offset = layout.aux_offset[k];
      absl::Status s = InjectiveStepShape(plan, step, v, args, absl::MakeSpan(shapes),
                                          offset >= 0 ? launch->aux.data() + offset : nullptr,
                                          tensors_on_host);
      if (!s.ok()) return invalid(absl::StrCat(step.op_name, " ", plan.names[v], ": ", s.message()));
    }
  }
  for (size_t v = 0; v < shapes.size(); ++v) {
    bool ok = static_cast<int>(shapes[v].size()) == plan.rank(v);
    for (size_t d = 0; ok && d < shapes[v].size(); ++d) {
      const DimExpr& declared = plan.dims[v][d];
      ok = shapes[v][d] >= 0 && (!declared.is_constant() || declared.constant() == shapes[v][d]);
    }
    if (!ok) {
      return invalid(absl::StrCat(plan.names[v], " has shape ", ShapeString(shapes[v]),
                                  ", which does not fit its type ", TypeString(plan, v)));
    }
  }
  const TensorArg& out = args[np];
  const Shape& expected = shapes[plan.result];
  if (!std::equal(expected.begin(), expected.end(), out.shape.begin(), out.shape.end())) {
    return invalid(absl::StrCat("argument ", np, " (result 0) has shape ", ShapeString(out.shape),
                                ", expected ", ShapeString(expected)));
  }
  launch->out_elements = out.num_elements();
  if (launch->out_elements == 0) return absl::OkStatus();
  // An elementwise-only plan (the GPU kernels take those too) reads each input at the output's
  // index, or at a broadcast one: an input that IS the output, with the output's shape, is
  // read at exactly the element its thread then writes, so it may update in place (the
  // library-head / elementwise-tail split relies on it).
  bool elementwise_only = true;
  for (const Step& step : plan.steps) elementwise_only &= step.form != OpForm::kInjective;
  for (int i = 0; i < np; ++i) {
    if (args[i].num_elements() == 0) continue;
    if (elementwise_only && args[i].data == out.data && args[i].shape == out.shape) continue;
    if (Overlaps(args[i], out)) {
      return invalid(absl::StrCat("argument ", i, " (", plan.names[i],
                                  ") overlaps the output; the injective JIT reads its inputs at "
                                  "permuted indices"));
    }
  }
  launch->dims.assign(std::max(layout.num_dims, 1), 0);
  for (size_t v = 0; v < shapes.size(); ++v) {
    std::copy(shapes[v].begin(), shapes[v].end(), launch->dims.begin() + layout.dim_offset[v]);
  }
  launch->bases.assign(np + 1, nullptr);
  launch->bases[0] = out.data;
  for (int i = 0; i < np; ++i) launch->bases[i + 1] = args[i].data;
  launch->wide = false;
  for (const Shape& s : shapes) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    launch->wide |= n >= (int64_t{1} << 32);
  }
  return absl::OkStatus();
}

}  // namespace jit_internal

namespace {

absl::Status RunInjective(const InjectiveProgram& p, absl::Span<const TensorArg> args) {
  InjectiveLaunch launch;
  RETURN_IF_ERROR(PrepareInjective(p.plan, p.layout, args, /*tensors_on_host=*/true, &launch));
  if (launch.out_elements == 0) return absl::OkStatus();
  const KernelFn fn = launch.wide && p.fn_wide != nullptr ? p.fn_wide : p.fn;
  const int32_t flags = fn(launch.bases.data(), launch.dims.data(), launch.aux.data());
  auto invalid = [&](const std::string& message) {
    return absl::InvalidArgumentError(absl::StrCat("@", p.plan.fn, ": ", message));
  };
  if ((flags & kFlagDivisionByZero) != 0) return invalid("integer division by zero");
  if ((flags & kFlagIndexOutOfRange) != 0) return invalid("take: index out of range");
  return absl::OkStatus();
}

using JitInjectiveKernel = JitProgramKernel<InjectiveProgram, &RunInjective>;


}  // namespace

bool IsJitInjective(const Function& primitive) { return AnalyzeInjective(primitive).ok(); }

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileJitInjective(
    const Function& primitive, const JitElementwiseOptions& options) {
  ASSIGN_OR_RETURN(LlvmJit * jit, LlvmJit::Get());
  auto program = std::make_shared<InjectiveProgram>();
  ASSIGN_OR_RETURN(program->plan, AnalyzeInjective(primitive));
  program->layout = MakeLayout(program->plan);
  program->description = DescribePlan(program->plan);
  BuiltModule built = BuildInjectiveModule(program->plan, program->layout, kKernelSymbol);
  std::vector<std::string> symbols = {built.fast_name};
  if (!built.generic_name.empty()) symbols.push_back(built.generic_name);
  ASSIGN_OR_RETURN(program->code,
                   jit->Compile(std::move(built.context), std::move(built.module), symbols,
                                jit->KernelOptions(primitive.name(), JitLoops::kScalar, options.dump_llvm_ir,
                                                   options.cache)));
  program->fn = reinterpret_cast<KernelFn>(program->code->symbol(0));
  if (symbols.size() > 1) program->fn_wide = reinterpret_cast<KernelFn>(program->code->symbol(1));
  return std::make_unique<JitInjectiveKernel>(std::move(program));
}

namespace {
bool JitInjectiveOp(const OpDef& op) { return FindLowering(OpIdOf(op)) != nullptr; }
}  // namespace

const KernelProvider& JitInjectiveProvider() {
  static const GroupProvider provider(
      {"llvm.injective", kNeedsJit, &IsJitInjective,
       nullptr, &JitInjectiveOp, &JitInjectiveOp,
       [](const Function& f, const KernelTarget& target) {
         JitElementwiseOptions options;
         options.cache = target.kernel_cache;
         return CompileJitInjective(f, options);
       }});
  return provider;
}

}  // namespace hetpass
