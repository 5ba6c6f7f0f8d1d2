// Matching primitive-function bodies against the group shapes the kernel libraries fuse
// (oneDNN on the host, cuBLASLt on cuda): a library-neutral layer, so every library binds the
// same groups and the same registry ops. Internal to src/compile_engine.
#ifndef HETPASS_COMPILE_ENGINE_GROUP_MATCH_H_
#define HETPASS_COMPILE_ENGINE_GROUP_MATCH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "passes/ir/ir.h"
#include "passes/shape_funcs/op_ids.h"

namespace hetpass::group_match {

bool IsCallOf(const Node& n, OpId op);
bool IsF32Tensor(const Type& t, int rank);
// Index of `v` among the parameters of `body`, or -1 if it is not one of them.
int ParamIndex(const Block& body, const Value* v);
// An int attribute (default when absent); nullopt when it has another type.
std::optional<int64_t> IntAttr(const Node& n, absl::string_view name, int64_t default_value);
std::string ShapeString(absl::Span<const int64_t> shape);

// The group shape the library's primitives fuse, shared by the dense, conv2d and
// conv2d_transpose kernels:
//   %h = <anchor>(%data, %weight) {...}
//   %h = nn.bias_add(%h, %bias)            optional; with `allow_add` also add(%h, %bias) or
//                                          add(%bias, %h) (ONNX MatMul + Add exports)
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
  bool relu = false;

  bool has_bias() const { return bias >= 0; }
  // "data (%x)"
  std::string Arg(absl::string_view role, int param) const;
};
std::optional<AnchorEpilogue> MatchAnchorEpilogue(const Function& f, OpId anchor, bool allow_add);
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
