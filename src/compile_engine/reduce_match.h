// Reduction and softmax groups (the group shapes reduce_kernel.h documents), matched once for
// every device that runs them: the host's native kernels (reduce_kernel.cc) and the cuda
// device's NVRTC kernels (cuda/nvrtc_reduce.cc). Also the argument checks both run, so a
// mismatch reads the same on every device.
#ifndef HETPASS_COMPILE_ENGINE_REDUCE_MATCH_H_
#define HETPASS_COMPILE_ENGINE_REDUCE_MATCH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "passes/compile_engine/kernel.h"
#include "passes/ir/ir.h"

namespace hetpass::reduce_match {

enum class StepKind {
  kNegative, kAbs, kSquare, kAdd, kSubtract, kMultiply, kDivide, kPower,
  // Extended steps (device kernels only): every other unary elementwise op, and maximum /
  // minimum with a scalar.
  kRelu, kExp, kSigmoid, kTanh, kSqrt, kLog, kFloor, kCeil, kMaximum, kMinimum,
};
enum class ReduceKind { kSum, kMean, kProd, kMax, kMin };

struct Step {
  StepKind kind;
  int scalar = -1;           // parameter index of the scalar operand, -1 for unary steps
  bool scalar_left = false;  // op(c, x)
};

struct Signature {
  std::string function;  // "@name"
  int num_params = 0;
  std::vector<std::string> param_names;
  std::vector<int> scalar_rank;  // per parameter: its rank if a step's scalar, else -1
  std::string Arg(absl::string_view role, int param) const {
    return absl::StrFormat("%s (%s)", role, param_names[param]);
  }
};

struct ReduceGroup {
  Signature sig;
  int data = -1;
  int rank = 0;
  std::vector<bool> reduced;  // per input axis
  bool keepdims = false;
  ReduceKind kind = ReduceKind::kSum;
  DType dtype = DType::kF32;  // of the data and the result
  std::vector<Step> prologue, epilogue;
  std::string ops;  // "power,mean"
};

struct SoftmaxGroup {
  Signature sig;
  int rank = 0;
  int axis = 0;
};

// A reduction group: steps on one f32 parameter, one sum/mean/prod/max/min, steps. `extended`
// (a kernel that indexes every axis set itself and computes every step): any reduced axis set,
// the extended steps, and also f64 / i32 / i64 data without steps; else the reduced axes must be
// adjacent.
std::optional<ReduceGroup> MatchReduce(const Function& f, bool extended);
// The single nn.softmax of an f32 parameter, returned.
std::optional<SoftmaxGroup> MatchSoftmax(const Function& f);

// The shape of the reduction's result for an input of `in_shape` (keepdims honoured).
std::vector<int64_t> ReducedShape(const ReduceGroup& g, absl::Span<const int64_t> in_shape);

// ---- argument checks (InvalidArgument naming the function and the argument) ----
std::string ShapeStr(absl::Span<const int64_t> shape);
absl::Status CheckCount(const Signature& sig, absl::Span<const TensorArg> args);
// A `dtype` tensor of `rank` with non-negative dims and data unless empty.
absl::Status CheckTensor(const Signature& sig, const TensorArg& t, const std::string& name, int rank,
                         DType dtype = DType::kF32);
// Every scalar parameter: f32 of its declared rank, all dims 1.
absl::Status CheckScalars(const Signature& sig, absl::Span<const TensorArg> args);
absl::Status CheckResult(const Signature& sig, const TensorArg& out, absl::Span<const int64_t> want,
                         DType dtype = DType::kF32);

// The input viewed as [outer, len, inner] row-major, `len` the product of the axes marked in
// `mask` (which must be adjacent), `outer` of the axes before them, `inner` after.
struct LineView {
  int64_t outer = 1, len = 1, inner = 1;
};
LineView ViewOf(absl::Span<const int64_t> shape, const std::vector<bool>& mask);

// Capabilities (KernelProvider::Runs / Fuses of the providers that take these groups).
bool IsReduceOp(const OpDef& op);
bool ReduceRuns(const OpDef& op);
// With `extended`, the extended steps fuse too.
bool ReduceFuses(const OpDef& op, bool extended);

}  // namespace hetpass::reduce_match

#endif  // HETPASS_COMPILE_ENGINE_REDUCE_MATCH_H_
