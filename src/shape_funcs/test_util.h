// Helpers for the op-family tests: build inputs, run the shape rule (symbolic or concrete) and
// the reference kernel through the public registry.
#ifndef HETPASS_SRC_SHAPE_FUNCS_TEST_UTIL_H_
#define HETPASS_SRC_SHAPE_FUNCS_TEST_UTIL_H_

#include <deque>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "passes/ir/tensor.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/status_macros.h"

namespace hetpass::testing {

inline DimExpr S(absl::string_view name) { return DimExpr::Symbol(name); }
inline Type T(DType dt, std::vector<DimExpr> shape) { return Type::Tensor(dt, std::move(shape)); }
inline Type F32(std::vector<DimExpr> shape) { return T(DType::kF32, std::move(shape)); }

inline Tensor FT(std::vector<int64_t> shape, std::vector<double> v) {
  return Tensor::FromDoubles(DType::kF32, std::move(shape), v);
}
inline Tensor IT(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return Tensor::FromInt64s(DType::kI64, std::move(shape), v);
}
inline Tensor I64s(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return IT({n}, std::move(v));
}
inline Tensor I64Scalar(int64_t v) { return IT({}, {v}); }

// An input whose type is known and whose contents are not.
inline ShapeInput In(Type t) { return ShapeInput{std::move(t)}; }
// An input with data (constant or run time): type from the tensor.
inline ShapeInput InV(const Tensor& t) { return ShapeInput{t.type(), &t}; }
// An integer input with symbolic contents (a shape_of result) of static length.
inline ShapeInput InSym(const std::vector<DimExpr>& v, DType dt = DType::kI64) {
  return ShapeInput{T(dt, {static_cast<int64_t>(v.size())}), nullptr, &v};
}

// A scalar integer input with one symbolic value.
inline ShapeInput InSymScalar(const std::vector<DimExpr>& v, DType dt = DType::kI64) {
  return ShapeInput{T(dt, {}), nullptr, &v};
}

inline const OpDef* Op(absl::string_view name) {
  const OpDef* def = OpRegistry::Global().Find(name);
  EXPECT_NE(def, nullptr) << "op '" << name << "' is not registered";
  return def;
}

// CheckAttrs then InferTypes (the path the type checker takes).
inline absl::StatusOr<std::vector<Type>> Infer(absl::string_view name, const Attrs& attrs,
                                               std::vector<ShapeInput> inputs) {
  const OpDef* def = Op(name);
  if (def == nullptr) return absl::NotFoundError("no op");
  ASSIGN_OR_RETURN(Attrs checked, def->CheckAttrs(attrs));
  return def->InferTypes(checked, std::move(inputs));
}

// Output types printed and joined: "f32[n, 512]" or "f32[2], i64[2]".
inline std::string Str(const std::vector<Type>& types) {
  std::vector<std::string> parts;
  for (const Type& t : types) parts.push_back(t.ToString());
  return absl::StrJoin(parts, ", ");
}

// Infers and prints, or returns the error message.
inline std::string InferStr(absl::string_view name, const Attrs& attrs,
                            std::vector<ShapeInput> inputs) {
  auto r = Infer(name, attrs, std::move(inputs));
  if (!r.ok()) return std::string("error: ") + std::string(r.status().message());
  return Str(*r);
}

// The shape function (concrete mode, data passed for every input so the mask alone decides
// what the rule may read) then the reference kernel.
inline absl::StatusOr<std::vector<Tensor>> RunRef(absl::string_view name, const Attrs& attrs,
                                                  const std::vector<Tensor>& inputs) {
  const OpDef* def = Op(name);
  if (def == nullptr) return absl::NotFoundError("no op");
  ASSIGN_OR_RETURN(Attrs checked, def->CheckAttrs(attrs));
  std::vector<ShapeInput> ins;
  for (const Tensor& t : inputs) ins.push_back(InV(t));
  ASSIGN_OR_RETURN(std::vector<Type> types, def->InferTypes(checked, std::move(ins)));
  return def->reference()(inputs, checked, types);
}

inline std::vector<double> Doubles(const Tensor& t) { return t.ToDoubles(); }
inline std::vector<int64_t> Ints(const Tensor& t) { return t.ToInt64s(); }

// Symbolic values of output 0 (value propagation, unrestricted context), printed.
inline std::string SymValuesStr(absl::string_view name, const Attrs& attrs,
                                std::vector<ShapeInput> inputs) {
  const OpDef* def = Op(name);
  if (def == nullptr || !def->symbolic_value_rule()) return "<no rule>";
  auto checked = def->CheckAttrs(attrs);
  if (!checked.ok()) return "<bad attrs>";
  ShapeContext ctx(*def, *checked, std::move(inputs), /*enforce_mask=*/false);
  auto v = def->symbolic_value_rule()(ctx);
  if (!v) return "<unknown>";
  return ShapeToString((*v)[0]);
}

}  // namespace hetpass::testing

#endif  // HETPASS_SRC_SHAPE_FUNCS_TEST_UTIL_H_
