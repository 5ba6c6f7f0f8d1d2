// Helpers shared by the kernel tests and benchmarks (dense, conv): deterministic random f32
// data and the oracle, which is the compile engine's own reference kernel (registry reference
// kernels op by op) run on host tensors.
#ifndef HETPASS_TEST_SUPPORT_KERNEL_TEST_UTIL_H_
#define HETPASS_TEST_SUPPORT_KERNEL_TEST_UTIL_H_

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "passes/compile_engine/compile_engine.h"
#include "passes/compile_engine/kernel.h"
#include "passes/ir/tensor.h"
#include "passes/support/status_macros.h"
#include "passes/shape_funcs/primitive_function.h"

namespace hetpass::testing {

// Uniform in [-scale, scale), the same values for the same seed on every machine.
inline Tensor RandomF32(std::vector<int64_t> shape, uint64_t seed, double scale = 1.0) {
  Tensor t = Tensor::Zeros(DType::kF32, shape);
  float* p = t.mutable_data_as<float>();
  uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    p[i] =
        static_cast<float>((2.0 * static_cast<double>(s >> 11) / 9007199254740992.0 - 1) * scale);
  }
  return t;
}

inline TensorArg Arg(const Tensor& t) {
  return TensorArg{const_cast<uint8_t*>(t.data()), t.dtype(), absl::MakeConstSpan(t.shape())};
}

// Every result of primitive `f` on `params`, computed by CompileReferenceKernel.
inline absl::StatusOr<std::vector<Tensor>> InterpretAll(const Function& f, const std::vector<Tensor>& params) {
  ASSIGN_OR_RETURN(auto kernel, CompileReferenceKernel(f));
  ASSIGN_OR_RETURN(auto instance,
                   kernel->Instantiate(std::vector<const Tensor*>(params.size(), nullptr)));
  std::vector<ShapeInput> inputs;
  for (const Tensor& p : params) inputs.push_back(ShapeInput{p.type(), &p});
  ASSIGN_OR_RETURN(std::vector<Type> types, InferPrimitiveTypes(f, inputs));
  std::vector<Tensor> outs;
  for (const Type& t : types) {
    std::vector<int64_t> shape;
    for (const DimExpr& d : t.shape()) shape.push_back(d.constant());
    outs.push_back(Tensor::Zeros(t.dtype(), shape));
  }
  std::vector<TensorArg> args;
  for (const Tensor& p : params) args.push_back(Arg(p));
  for (Tensor& o : outs) args.push_back(TensorArg{o.mutable_data(), o.dtype(), absl::MakeConstSpan(o.shape())});
  RETURN_IF_ERROR(instance->Run(args));
  return outs;
}

// The single result of primitive `f` on `params`, computed by CompileReferenceKernel.
inline absl::StatusOr<Tensor> Interpret(const Function& f, const std::vector<Tensor>& params) {
  ASSIGN_OR_RETURN(std::vector<Tensor> outs, InterpretAll(f, params));
  return std::move(outs.at(0));
}

// Runs a fresh instance of `kernel` (one non-constant parameter) on `x` into an f32 output of
// `out_shape` filled with NaN first, so that an element the kernel never writes shows.
inline absl::StatusOr<Tensor> RunOnNaNFilled(const CompiledKernel& kernel, const Tensor& x,
                                             const std::vector<int64_t>& out_shape) {
  ASSIGN_OR_RETURN(auto instance, kernel.Instantiate(std::vector<const Tensor*>{nullptr}));
  Tensor out = Tensor::Zeros(DType::kF32, out_shape);
  float* o = out.mutable_data_as<float>();
  for (int64_t i = 0; i < out.num_elements(); ++i) o[i] = std::nanf("");
  RETURN_IF_ERROR(instance->Run(std::vector<TensorArg>{
      Arg(x), TensorArg{o, DType::kF32, absl::MakeConstSpan(out.shape())}}));
  return out;
}

}  // namespace hetpass::testing

#endif  // HETPASS_TEST_SUPPORT_KERNEL_TEST_UTIL_H_
