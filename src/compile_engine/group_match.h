// Matching primitive-function bodies against the group shapes the kernel libraries fuse
// (oneDNN on the host, cuBLASLt and cuDNN on cuda): a library-neutral layer, so every library
// binds the same groups and the same registry ops, reads their attributes with the registry's
// semantics, and computes a call's concrete problem (and refuses a bad one) in the same words.
// Internal to src/compile_engine.
#ifndef HETPASS_COMPILE_ENGINE_GROUP_MATCH_H_
#define HETPASS_COMPILE_ENGINE_GROUP_MATCH_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "passes/ir/ir.h"
#include "passes/runtime/tensor_arg.h"
#include "passes/shape_funcs/op_ids.h"

namespace hetpass::group_match {

bool IsCallOf(const Node& n, OpId op);
bool IsF32Tensor(const Type& t, int rank);
// Index of `v` among the parameters of `body`, or -1 if it is not one of them.
int ParamIndex(const Block& body, const Value* v);
// An int attribute (default when absent); nullopt when it has another type.
std::optional<int64_t> IntAttr(const Node& n, absl::string_view name, int64_t default_value);
std::string ShapeString(absl::Span<const int64_t> shape);
// Checks a kernel argument: f32 of `rank`, no negative dim, data present when non-empty (unless
// !needs_data: a constant the instance prepacked, whose bytes the VM may have released).
// Errors are InvalidArgument "<function>: <name> must be an f32 tensor of rank R, got ..."
// (`short_name` in the dim and data messages).
absl::Status CheckF32Arg(absl::string_view function, absl::string_view name,
                         absl::string_view short_name, const TensorArg& a, int rank,
                         bool needs_data = true);

// The group shape the library's primitives fuse, shared by the dense, conv2d and
// conv2d_transpose kernels:
//   %h = <anchor>(%data, %weight) {...}
//   %h = nn.bias_add(%h, %bias)            optional; with `allow_add` also add(%h, %bias) or
//                                          add(%bias, %h) (ONNX MatMul + Add exports)
//   %h = add(%h, %residual)                optional, with `allow_residual` only: a parameter
//                                          of exactly %h's type (either operand order; a
//                                          ResNet block's skip connection)
//   %h = nn.relu(%h)                       optional
//   return %h
// with data, weight and bias distinct parameters and the bias an f32 vector. What depends on
// the anchor (ranks, attributes, the bias axis, the declared result type) its kernel checks
// on the match.
struct AnchorEpilogue {
  std::string function;  // "@name", for errors
  int num_params = 0;
  std::vector<std::string> param_names;  // "%x"
  std::vector<Type> param_types;
  const Node* anchor = nullptr;
  int data = -1;
  int weight = -1;
  const Node* bias_node = nullptr;  // the bias_add / add, or nullptr
  bool bias_is_add = false;
  int bias = -1;  // -1: no bias
  int residual = -1;  // -1: no residual add
  bool relu = false;

  bool has_bias() const { return bias >= 0; }
  bool has_residual() const { return residual >= 0; }
  // "data (%x)"
  std::string Arg(absl::string_view role, int param) const;
};
// `bias_rank`: the bias parameter's rank (1: a vector; 4: a blocked conv's [OC/b, 1, 1, b]).
std::optional<AnchorEpilogue> MatchAnchorEpilogue(const Function& f, OpId anchor, bool allow_add,
                                                  int bias_rank = 1, bool allow_residual = false);
// The ops such a group may hold besides its anchor (providers' Fuses).
bool IsEpilogueOp(OpId op, bool allow_add);
// True when the function declares no result type, or one f32 tensor of `rank` (an f16 result
// would be a cast the library kernels lack).
bool DeclaredResultIsF32(const Function& f, int rank);


// nn.dense [+ bias] [+ relu] over f32 data [.., K] (leading dims flattened into M) and
// weights [N, K]; the bias on the last axis (bias_add) or an `add` of an [N] vector.
struct DenseGroup : AnchorEpilogue {
  int data_rank = 2;
};
std::optional<DenseGroup> MatchDenseGroup(const Function& f);

// The window attributes of nn.conv2d and nn.conv2d_transpose with the registry's semantics
// (src/shape_funcs/nn.cc): strides and dilation 1 or 2 positive ints ([s] means [s, s]);
// padding 1 int (all sides), 2 (top/bottom, left/right) or 4 (top, left, bottom, right).
struct ConvWindow {
  std::array<int64_t, 2> stride = {1, 1};
  std::array<int64_t, 2> dilation = {1, 1};
  std::array<int64_t, 4> pad = {0, 0, 0, 0};  // top, left, bottom, right
  int64_t groups = 1;
  // top == bottom and left == right (cuDNN's legacy descriptors have one pad per axis).
  bool symmetric_padding() const { return pad[0] == pad[2] && pad[1] == pad[3]; }
};

// nn.conv2d [+ bias] [+ residual] [+ nn.relu] over f32 data and OIHW weights
// [OC, C / groups, KH, KW]; the residual add only on a blocked result (the host's layout: a
// ResNet block's conv + skip + relu as one library call; cuDNN's provider refuses it).
// Data and result are NCHW [N, C, H, W] or blocked NCHW<b>c [N, C/b, H, W, b] for b in
// {4, 8, 16} (channel_layout.h; data_layout / out_layout). The bias is nn.bias_add on axis 1
// / -3 of an NCHW result, or, on a blocked result, an `add` of an [OC/b, 1, 1, b] parameter
// (block-conv-layout's form of a bias: the same bytes as the [OC] vector).
struct ConvGroup : AnchorEpilogue, ConvWindow {
  int64_t in_block = 0;   // data layout; 0 = NCHW
  int64_t out_block = 0;  // result layout; 0 = NCHW
};
std::optional<ConvGroup> MatchConvGroup(const Function& f);

// A conv call's problem: data [n, c, h, w], weight [oc, icg, kh, kw], output [n, oc, oh, ow].
struct ConvShape {
  int64_t n, c, h, w, oc, icg, kh, kw, oh, ow;
  std::array<int64_t, 8> Key() const { return {n, c, h, w, oc, icg, kh, kw}; }
};
// The problem for data `x` (rank 4, or 5 in a blocked layout: its logical dims are used) and
// weight `w` (rank 4), or InvalidArgument naming the function
// and argument when the channels or groups do not fit or the window is larger than the padded
// input; the output is floor((H + top + bottom - dil*(KH-1) - 1) / s) + 1.
absl::StatusOr<ConvShape> ConvShapeOf(const ConvGroup& g, absl::Span<const int64_t> x,
                                      absl::Span<const int64_t> w);

// nn.conv2d_transpose [+ nn.bias_add] [+ nn.relu] over f32 data [N, C, H, W] and weights
// [C, OC / groups, KH, KW], with output_padding below the stride on each axis: both libraries
// (oneDNN's deconvolution, cuDNN's backward-data) check the sizes as a forward convolution of
// the output, (OH - 1 - dil*(KH-1) + top + bottom) / stride + 1 == H with integer division,
// which admits exactly the registry's OH when output_padding < stride. Other groups are left
// to the reference kernel.
struct DeconvGroup : AnchorEpilogue, ConvWindow {
  std::array<int64_t, 2> output_padding = {0, 0};
};
std::optional<DeconvGroup> MatchDeconvGroup(const Function& f);

// A deconv call's problem: data [n, c, h, w], weight [c, ocg, kh, kw], output [n, oc, oh, ow]
// with oc = ocg * groups.
struct DeconvShape {
  int64_t n, c, h, w, ocg, kh, kw, oc, oh, ow;
  std::array<int64_t, 7> Key() const { return {n, c, h, w, ocg, kh, kw}; }
};
// The problem, or InvalidArgument naming the function and argument when the channels or groups
// do not fit or the padding crops more than the output;
// OH = s*(H-1) + output_padding + dil*(KH-1) + 1 - top - bottom.
absl::StatusOr<DeconvShape> DeconvShapeOf(const DeconvGroup& g, absl::Span<const int64_t> x,
                                          absl::Span<const int64_t> w);

// One nn.batch_matmul (NumPy matmul: [.., M, K] x [.., K, N], batch dims broadcast) of two f32
// parameters of rank 2..max_rank (the same one twice is fine), its result returned.
struct BatchMatmulGroup {
  std::string function;  // "@name"
  int num_params = 0;
  int a = -1, b = -1;
  int a_rank = 0, b_rank = 0, out_rank = 0;
  std::vector<std::string> param_names;
  std::string Arg(absl::string_view role, int param) const;
};
std::optional<BatchMatmulGroup> MatchBatchMatmulGroup(const Function& f, int max_rank);
// The result shape of a batch_matmul of `a` and `b` (ranks >= 2): the batch dims broadcast,
// then [M, N]; nullopt when K or a batch dim does not match. `a_padded` / `b_padded` get the
// operands' shapes padded with leading 1s to the result's rank.
std::optional<std::vector<int64_t>> BatchMatmulShape(absl::Span<const int64_t> a, absl::Span<const int64_t> b,
                                                     std::vector<int64_t>* a_padded, std::vector<int64_t>* b_padded);

}  // namespace hetpass::group_match

#endif  // HETPASS_COMPILE_ENGINE_GROUP_MATCH_H_
