// Structural equality and hashing: two modules are equal when they have the same functions
// with the same bindings, up to renaming of values (alpha-equivalence). Names, locations and
// parameter values for bind-params are not compared; devices, types, attributes and constant
// data are.
#ifndef HETPASS_IR_STRUCTURAL_H_
#define HETPASS_IR_STRUCTURAL_H_

#include <cstddef>
#include <string>

#include "passes/ir/ir.h"

namespace hetpass {

// On inequality, `why` (if given) receives the first difference found.
bool StructurallyEqual(const Module& a, const Module& b, std::string* why = nullptr);
bool StructurallyEqual(const Function& a, const Function& b, std::string* why = nullptr);
size_t StructuralHash(const Module& module);
size_t StructuralHash(const Function& function);

}  // namespace hetpass

#endif  // HETPASS_IR_STRUCTURAL_H_
