// What pass-viz knows about one function before drawing it, and the parts of it a picture may
// draw as one node or leave out.
//
//   uses              every operand use of every value, nested regions included
//   shape_subgraph    integer-valued compute bindings whose every use is a `value` input of a
//                     shape function or another shape-subgraph binding (one reverse
//                     program-order sweep: a binding's users are decided before it)
//   shape components  the host shape arithmetic of a block: shape queries that feed only the
//                     shape subgraph, with that subgraph, split into connected components
//                     (union-find over operand edges within one block). A compact picture draws
//                     each component of two or more bindings as one node with its op counts
//                     (shape_of -> take -> concatenate -> reshape target becomes one node).
//   written_by        after manifest-alloc, the kernel invokes that write each explicit output
//                     tensor: the data's real producer, for drawing and for neighbourhoods
//   Neighbourhood     the copy view's selection: the bindings within k data hops of a seed (a
//                     copy), backwards through operands and forwards through uses. Stepping
//                     into shape arithmetic costs no hop, so the shape-function subgraph that
//                     needed a copy is always shown up to the op that reads it; the if/loop
//                     owners of every selected binding are selected too (regions are drawn
//                     inside them).
#ifndef HETPASS_TOOLS_VIZ_FUNCTION_INFO_H_
#define HETPASS_TOOLS_VIZ_FUNCTION_INFO_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "passes/ir/ir.h"
#include "passes/ir/printer.h"

namespace hetpass::viz {

bool IsShapeQuery(const Node& n);
// The tensors a destination-passing kernel invoke writes (its last `outputs = k` operands).
std::vector<const Value*> KernelOutputs(const Node& n);

struct FunctionInfo {
  explicit FunctionInfo(const Function& f);

  // The component of a collapsible binding (nullptr: drawn on its own).
  const std::vector<const Node*>* ComponentOf(const Node* n) const;
  // Bindings within `hops` data hops of `seed` (seed included), in no particular order; with
  // `distance`, each one's hop count from the seed (the minimum over the ways it was reached;
  // shape arithmetic and if/loop owners take the distance of what brought them in).
  absl::flat_hash_set<const Node*> Neighbourhood(
      const Node* seed, int hops, absl::flat_hash_map<const Node*, int>* distance = nullptr) const;

  ValueNames names;
  absl::flat_hash_map<const Node*, int> ordinal;  // program order, for unnamed bindings
  absl::flat_hash_set<const Node*> shape_subgraph;
  absl::flat_hash_map<const Value*, int> use_count;  // operand uses
  absl::flat_hash_map<const Value*, std::vector<std::pair<const Node*, int>>> uses;
  // The destination-passing invokes writing each tensor, in program order.
  absl::flat_hash_map<const Value*, std::vector<const Node*>> written_by;
  // Components of two or more bindings, each in program order.
  std::vector<std::vector<const Node*>> components;
  absl::flat_hash_map<const Node*, int> component_of;  // index into components
};

}  // namespace hetpass::viz

#endif  // HETPASS_TOOLS_VIZ_FUNCTION_INFO_H_
