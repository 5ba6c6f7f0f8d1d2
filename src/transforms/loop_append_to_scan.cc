// loop-append-to-scan: rewrites the "append one piece per iteration" loop.
//
// Exporters turn a Python loop that appends to a list and then concatenates it (Mask R-CNN's
// mask pasting: `res_append = concatenate(res_append, mask)`) into an ONNX Loop whose carried
// tensor grows by one Concat per iteration. Each iteration copies the whole accumulator, so n
// iterations copy O(n^2) bytes (maskrcnn_tiny: ~26% of an inference). The result is the initial
// value followed by the pieces in order, which is what a scan output builds in O(n):
//
//   %acc_n = loop(..., %init) (..., %acc) {            %unused, %s = loop(..., %init) (..., %acc) {
//     ...                                                ...
//     %next = concatenate(%acc, %x)          ==>         %row = squeeze(%x) {axis = [0]}
//     yield %c, %next                                    yield %c, %acc, %row
//   }                                                  }
//                                                      %n = take(shape_of(%s), 0)
//                                                      %acc_n = if (greater(%n, 0)) {
//                                                        yield concatenate(%init, %s)
//                                                      } else { yield %init }
//
// Why it is exact: concatenation along axis 0 is associative, so init ++ x_1 ++ ... ++ x_n =
// init ++ stack(x_1 .. x_n) when every x_i has one row. The concatenate after the loop checks
// the pieces' other dims against init's, as the per-iteration one did; pieces that disagree with
// each other fail in the scan's stacking. Both errors are still errors, only raised after the
// loop. A loop that runs zero times yields init itself: the stacked output then has no rows and
// element dims its type may not know, so it is never concatenated.
//
// Conditions, all checked (otherwise the loop is left as it is):
//   - carried value k is yielded as a call of concatenate with exactly two operands, along
//     axis 0, whose first operand is the carried parameter k itself;
//   - that parameter has no other use in the body (nested regions included), and the
//     concatenation's result no use but that yield;
//   - the piece has the carried value's rank and dtype and dim 0 the constant 1.
// The carried value then passes through the body untouched (no copy), and its final value is
// no longer used. New values are typed by running infer-types again, only when something
// changed.
#include "passes/transforms/loop_append_to_scan.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "passes/ir/builder.h"
#include "passes/shape_funcs/op_ids.h"
#include "passes/support/status_macros.h"
#include "passes/transforms/infer_types.h"

namespace hetpass {
namespace {

// Uses of `v` as an operand or a block result anywhere in `block`, nested regions included.
int CountUses(const Block& block, const Value* v) {
  int uses = static_cast<int>(std::count(block.results().begin(), block.results().end(), v));
  for (const auto& n : block.nodes()) {
    uses += static_cast<int>(std::count(n->operands().begin(), n->operands().end(), v));
    for (int r = 0; r < n->num_regions(); ++r) uses += CountUses(*n->region(r), v);
  }
  return uses;
}

// Replaces every use of `from` in `block` (nested regions included) by `to`.
void ReplaceUses(Block& block, const Value* from, Value* to) {
  for (Value*& v : block.mutable_results()) {
    if (v == from) v = to;
  }
  for (const auto& n : block.nodes()) {
    for (Value*& v : n->mutable_operands()) {
      if (v == from) v = to;
    }
    for (int r = 0; r < n->num_regions(); ++r) ReplaceUses(*n->region(r), from, to);
  }
}

bool IsOp(const Node& n, OpId id) {
  return n.kind() == NodeKind::kCall && n.op() != nullptr && OpIdOf(*n.op()) == id;
}

// The concatenate that appends to carried value k of `loop`, if the rewrite applies to it.
Node* AppendOf(const Node& loop, int k) {
  const Block& body = *loop.region(0);
  const Value* acc = body.param(2 + k);
  const Value* next = body.results()[1 + k];
  Node* cat = next->producer();
  if (cat == nullptr || cat->parent() != &body || !IsOp(*cat, OpId::kConcatenate) ||
      cat->num_operands() != 2 || cat->operand(0) != acc) {
    return nullptr;
  }
  const Type& t = acc->type();
  const Type& x = cat->operand(1)->type();
  if (!t.is_tensor() || !x.is_tensor() || t.rank() == 0 || x.rank() != t.rank() ||
      x.dtype() != t.dtype() || !x.shape()[0].is_constant() || x.shape()[0].constant() != 1) {
    return nullptr;
  }
  const int64_t axis = cat->attrs().GetInt("axis");
  if (axis != 0 && axis != -t.rank()) return nullptr;
  if (CountUses(body, acc) != 1 || CountUses(body, next) != 1) return nullptr;
  return cat;
}

class LoopAppendToScanPass : public Pass {
 public:
  absl::string_view name() const override { return LoopAppendToScanOptions::kName; }

  absl::StatusOr<bool> Run(Module& module) override {
    bool changed = false;
    for (const auto& f : module.functions()) {
      ASSIGN_OR_RETURN(bool c, RewriteBlock(f->body(), f->body()));
      changed |= c;
    }
    if (changed) RETURN_IF_ERROR(CreateInferTypesPass()->Run(module).status());
    return changed;
  }

 private:
  // Rewrites the loops of `block` (and of every nested region); `root` is the function body,
  // where uses of a rewritten loop's result are replaced.
  static absl::StatusOr<bool> RewriteBlock(Block& block, Block& root) {
    bool changed = false;
    for (size_t i = 0; i < block.nodes().size(); ++i) {
      Node& n = *block.nodes()[i];
      for (int r = 0; r < n.num_regions(); ++r) {
        ASSIGN_OR_RETURN(bool c, RewriteBlock(*n.region(r), root));
        changed |= c;
      }
      if (n.kind() != NodeKind::kLoop) continue;
      size_t added = 0;  // bindings inserted after the loop, which stays at index i
      for (int k = 0; k < n.num_operands() - 2; ++k) {
        Node* cat = AppendOf(n, k);
        if (cat == nullptr) continue;
        ASSIGN_OR_RETURN(size_t a, Rewrite(block, i, k, cat, root));
        added += a;
        changed = true;
      }
      i += added;
    }
    return changed;
  }

  // Rewrites carried value k of the loop at block.nodes()[at] (see the file comment); the
  // number of bindings added after the loop.
  static absl::StatusOr<size_t> Rewrite(Block& block, size_t at, int k, Node* cat, Block& root) {
    Node& loop = *block.nodes()[at];
    Block& body = *loop.region(0);
    Value* acc = body.param(2 + k);
    Value* init = loop.operand(2 + k);
    Value* final_value = loop.result(k);

    // The body: the piece's row becomes a scan output, the accumulator passes through.
    Builder in_body(&body);
    ASSIGN_OR_RETURN(Value* row, in_body.Call(OpIdName(OpId::kSqueeze), {cat->operand(1)},
                                              Attrs{{"axis", std::vector<int64_t>{0}}}));
    std::vector<Value*> yields = body.results();
    yields[1 + k] = acc;
    yields.push_back(row);
    body.set_results(std::move(yields));
    std::vector<std::unique_ptr<Node>>& body_nodes = body.mutable_nodes();
    body_nodes.erase(std::find_if(body_nodes.begin(), body_nodes.end(),
                                  [&](const std::unique_ptr<Node>& p) { return p.get() == cat; }));
    Value* stacked = loop.AddResult(Type(), absl::StrCat(final_value->name(), "_rows"));

    // After the loop: init when it ran zero times, else init followed by the rows.
    const size_t before = block.nodes().size();
    Builder after(&block);
    ASSIGN_OR_RETURN(Value* shape, after.Call(OpIdName(OpId::kShapeOf), {stacked}));
    Value* zero = after.Constant(Tensor::FromInt64s(DType::kI64, {}, std::vector<int64_t>{0}));
    ASSIGN_OR_RETURN(Value* rows, after.Call(OpIdName(OpId::kTake), {shape, zero}));
    ASSIGN_OR_RETURN(Value* any, after.Call(OpIdName(OpId::kGreater), {rows, zero}));
    auto branch = std::make_unique<Node>(NodeKind::kIf);
    branch->AddOperand(any);
    branch->set_loc(loop.loc());
    Builder then_branch(branch->region(0));
    ASSIGN_OR_RETURN(Value* joined, then_branch.Call(OpIdName(OpId::kConcatenate), {init, stacked},
                                                     Attrs{{"axis", int64_t{0}}}));
    branch->region(0)->set_results({joined});
    branch->region(1)->set_results({init});
    Value* result = branch->AddResult(Type(), final_value->name());
    block.Append(std::move(branch));
    const size_t added = block.nodes().size() - before;
    std::vector<std::unique_ptr<Node>>& nodes = block.mutable_nodes();
    std::rotate(nodes.begin() + static_cast<std::ptrdiff_t>(at + 1),
                nodes.begin() + static_cast<std::ptrdiff_t>(before), nodes.end());
    for (size_t j = at + 1; j <= at + added; ++j) nodes[j]->set_loc(loop.loc());

    // Every use of the loop's final accumulator now reads the if's result.
    final_value->set_name(absl::StrCat(final_value->name(), "_unused"));
    ReplaceUses(root, final_value, result);
    return added;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateLoopAppendToScanPass(const LoopAppendToScanOptions&) {
  return std::make_unique<LoopAppendToScanPass>();
}

}  // namespace hetpass
