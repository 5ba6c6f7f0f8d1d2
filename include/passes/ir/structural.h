// Structural equality and hashing: two modules are equal when they have the same functions
// with the same bindings, up to renaming of values (alpha-equivalence). Names, locations and
// parameter values for bind-params are not compared; devices, types, attributes and constant
// data are.
#ifndef HETPASS_IR_STRUCTURAL_H_
#define HETPASS_IR_STRUCTURAL_H_

#include <cstddef>
#include <string>

#include "absl/types/span.h"
#include "passes/ir/ir.h"

namespace hetpass {

// On inequality, `why` (if given) receives the first difference found.
bool StructurallyEqual(const Module& a, const Module& b, std::string* why = nullptr);
bool StructurallyEqual(const Function& a, const Function& b, std::string* why = nullptr);
size_t StructuralHash(const Module& module);
size_t StructuralHash(const Function& function);

// Groups of op calls compared as the primitive function outlining them would be (fuse-ops'
// Outline, the compile engine's candidate groups), without building it: `members` in order are
// its body; the values they use but do not define are its parameters, in first-use order, each
// with its type and device; `outputs` (results of members, or values the members use) are its
// results. As above, names and locations are not compared; ops, attributes, devices, result
// types and the wiring are. Members are op calls (NodeKind::kCall): a group holding any other
// kind of node equals no group. Equal groups hash alike.
size_t GroupStructuralHash(absl::Span<const Node* const> members, absl::Span<Value* const> outputs);
bool GroupsStructurallyEqual(absl::Span<const Node* const> a, absl::Span<Value* const> a_outputs,
                             absl::Span<const Node* const> b, absl::Span<Value* const> b_outputs);

}  // namespace hetpass

#endif  // HETPASS_IR_STRUCTURAL_H_
