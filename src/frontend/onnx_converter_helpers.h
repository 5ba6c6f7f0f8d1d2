// Internal to the ONNX frontend: the attribute and input helpers the per-family converters
// (onnx_convert_<family>.cc) share. Attribute readers return the ONNX schema default when the
// node does not set the attribute; input helpers turn a missing or unusable input into the
// Status a converter returns (ImportContext::Error or Unimplemented), never a crash.
#ifndef HETPASS_FRONTEND_ONNX_CONVERTER_HELPERS_H_
#define HETPASS_FRONTEND_ONNX_CONVERTER_HELPERS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "frontend/onnx_context.h"
#include "onnx/onnx_pb.h"

namespace hetpass::onnx_frontend {

// What a converter returns and takes (see Converter in onnx_context.h).
using Outs = absl::StatusOr<std::vector<Value*>>;
using Ins = std::vector<Value*>;

// ---- attribute helpers -----------------------------------------------------------------------

// The attribute `name` of `n`, or nullptr when the node does not set it.
const onnx::AttributeProto* FindAttr(const onnx::NodeProto& n, absl::string_view name);
// The attribute's value, or `def` when the node does not set it.
int64_t IntAttr(const onnx::NodeProto& n, absl::string_view name, int64_t def);
float FloatAttr(const onnx::NodeProto& n, absl::string_view name, float def);
std::string StringAttr(const onnx::NodeProto& n, absl::string_view name, std::string def);
std::optional<std::vector<int64_t>> IntsAttr(const onnx::NodeProto& n, absl::string_view name);

// ---- input helpers ---------------------------------------------------------------------------

// Input `i`, or nullptr when absent (an optional input left empty, or past the end).
Value* In(const Ins& in, size_t i);
// Input `i`, or an error naming it when absent.
absl::StatusOr<Value*> Need(ImportContext& ctx, const Ins& in, size_t i);
// Inputs 0 .. count - 1, all required.
absl::StatusOr<std::vector<Value*>> NeedFirst(ImportContext& ctx, const Ins& in, size_t count);

// The integer values of a constant input, or nullopt when it is computed.
std::optional<std::vector<int64_t>> ConstInts(ImportContext& ctx, const Value* v);
// The same, with Unimplemented ("<what> must be a constant") when it is computed.
absl::StatusOr<std::vector<int64_t>> RequireConstInts(ImportContext& ctx, const Value* v,
                                                      absl::string_view what);

// A possibly negative axis counted from the front.
int64_t NormAxis(int64_t axis, int rank);
// The rank of `v`, or Unimplemented when it is not known.
absl::StatusOr<int> NeedRank(ImportContext& ctx, const Value* v);

// One result as a converter's output list.
Outs One(absl::StatusOr<Value*> v);

// axes: an attribute below opset 13, a constant input from 13.
absl::StatusOr<std::optional<std::vector<int64_t>>> AxesOf(ImportContext& ctx,
                                                           const onnx::NodeProto& n,
                                                           const Ins& in, int64_t input_since);

// ---- op-building helpers --------------------------------------------------------------------

// `v` cast to `dt`, or `v` itself when its dtype is known to be `dt` already.
absl::StatusOr<Value*> CastTo(ImportContext& ctx, Value* v, DType dt);
// Dim `axis` of `x` as an i64 scalar, read from its shape (shape_of + take: no data of x is
// read; it folds to a constant where the dim is static).
absl::StatusOr<Value*> DimOf(ImportContext& ctx, Value* x, int64_t axis);
// [0, 1, .., d - 1] (i64) for an i64 scalar d, which may be computed (arange with a value
// stop: the device planner keeps d on the host).
absl::StatusOr<Value*> IotaTo(ImportContext& ctx, Value* d);
// [0, 1, .., d - 1] (i64) for dim `axis` of `x`, d read from its shape (no data of x is read;
// symbolic dims stay symbolic).
absl::StatusOr<Value*> DimIota(ImportContext& ctx, Value* x, int64_t axis);
// log(softmax(x)) over `axes` in the stable form x - m - log(sum(e^(x - m))), m the max over
// the same axes (keepdims reductions).
absl::StatusOr<Value*> LogSoftmaxOver(ImportContext& ctx, Value* x, std::vector<int64_t> axes);

// The activations built from elementwise ops, shared by their ONNX ops (Elu, LeakyRelu, ...)
// and the recurrent ops' `activations` attribute (onnx_convert_recurrent.cc).
absl::StatusOr<Value*> ExpMinusOne(ImportContext& ctx, Value* x, double alpha);  // alpha (e^x - 1)
absl::StatusOr<Value*> EluOf(ImportContext& ctx, Value* x, double alpha);
absl::StatusOr<Value*> LeakyReluOf(ImportContext& ctx, Value* x, double alpha);
absl::StatusOr<Value*> ThresholdedReluOf(ImportContext& ctx, Value* x, double alpha);
absl::StatusOr<Value*> HardSigmoidOf(ImportContext& ctx, Value* x, double alpha, double beta);
absl::StatusOr<Value*> SoftplusOf(ImportContext& ctx, Value* x);
absl::StatusOr<Value*> SoftsignOf(ImportContext& ctx, Value* x);

}  // namespace hetpass::onnx_frontend

#endif  // HETPASS_FRONTEND_ONNX_CONVERTER_HELPERS_H_
