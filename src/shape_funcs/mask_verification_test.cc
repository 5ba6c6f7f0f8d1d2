// Mask verification: proves, for every registered op, that its per-input dependence mask is
// neither under- nor over-declared, and that its shape rule, symbolic inference and reference
// kernel agree.
//
// Every op must have a random valid-input generator in Generators() (test/support/
// op_generators.h, shared with test/unit/op_runtime_test.cc); an op without one fails the
// test, so a new op cannot skip verification. For kTrials random trials per op (more, up to
// kMaxTrials, while a declared bit has not yet shown its influence):
//   (a) the shape rule runs in concrete mode (the shape function) with data only for inputs
//       whose mask includes `value` (others get value = nullptr): it must succeed and record no
//       mask violation (an under-declared mask reads what it did not declare);
//   (b) for every input declaring `value`, its contents are perturbed (same shape: a step of
//       one element, two elements swapped, one negated; several tries per trial): across the
//       trials this must change an output SHAPE at least once (a different type, another
//       number of outputs). A perturbation that only turns success into an error does NOT
//       count: a value read only to validate (a bounds check of take's indices) still copies
//       the input to the host on every call, for a check the kernel can make on the device.
//       Such a mask is over-declared and reported as "take: input `indices` is declared
//       shape+value but its values never change an output shape (read only to validate?)".
//       Value checks that need data belong in the kernel (a device-side error), never in the
//       shape rule;
//   (c) likewise for every input declaring `shape`: a perturbed shape (a dim changed, a dim
//       added or removed) must change the outcome at least once, else the mask should be
//       `none`. Here a validation error DOES count as influence: a shape is metadata that
//       travels without a copy, and the same rule is the type checker (bias_add must reject a
//       bias of the wrong length at compile time although the bias never shapes the output);
//   (d) the reference kernel on the full inputs produces exactly the types of (a);
//   (e) symbolic inference with every shape-only input's dims replaced by fresh symbols
//       succeeds, and each non-`?` output dim evaluates, under the trial's bindings, to the
//       concrete dim of (a): type inference and the shape function cannot drift apart;
//   (f) for ops reading values, inference with the values unknown still succeeds with the
//       concrete rank and no wrong dim (the compile-time path of a run-time shape).
//
// Masks that differ from TVM's (TVM had one `data_dependent` flag per op, i.e. every input of
// those ops was effectively shape+value):
//   dyn.strided_slice  data: shape (TVM copied the sliced tensor), begin/end/strides: value
//   dyn.image.resize2d data: shape (TVM over-declared), size: value
//   dyn.nn.pad         data: shape, pad_width: value, pad_value: none (TVM over-declared)
//   dyn.tile           data: shape (TVM over-declared), reps: value
//   dyn.topk           data: shape (TVM over-declared), k: value
//   dyn.full           fill_value: none (TVM copied it), shape: value
//   dyn.reshape, dyn.broadcast_to: data: shape; target: value
//   arange             start/stop/step: value (same as TVM)
//   argwhere           condition: value (the only truly data-dependent op; its rank is static metadata)
// When the values of a target are unknown at compile time, the rule fixes the output rank from
// their count (ShapeContext::NumValues), which a `value` mask allows.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"
#include "shape_funcs/test_util.h"
#include "support/op_generators.h"

namespace hetpass::testing {
namespace {

constexpr int kTrials = 50;
constexpr int kMaxTrials = 500;
// Value perturbations per declared `value` input and trial, until one changes a shape.
constexpr int kValueTries = 10;

// Random inputs: one generator per op, shared with the op runtime test.
using ::hetpass::testing::Gen;
using ::hetpass::testing::Generator;
using ::hetpass::testing::Generators;
using ::hetpass::testing::Trial;

// ---- running the rule ----------------------------------------------------------------------

struct Outcome {
  bool ok = false;
  std::vector<Type> types;
  std::string error;
  bool operator==(const Outcome& o) const { return ok == o.ok && (!ok || types == o.types); }
};

// Concrete mode: data only for inputs whose mask includes `value`.
Outcome RunConcrete(const OpDef& def, const Attrs& attrs, const std::vector<Tensor>& inputs,
                    std::vector<std::string>* violations) {
  std::vector<ShapeInput> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ins.push_back(ShapeInput{inputs[i].type(),
                             NeedsValue(def.dep(static_cast<int>(i))) ? &inputs[i] : nullptr});
  }
  ShapeContext ctx(def, attrs, std::move(ins));
  absl::StatusOr<std::vector<Type>> r = def.shape_rule()(ctx);
  violations->insert(violations->end(), ctx.violations().begin(), ctx.violations().end());
  if (!r.ok()) return Outcome{false, {}, std::string(r.status().message())};
  return Outcome{true, *std::move(r), ""};
}

// One random change of contents, same shape: a small step of one element, or two unequal
// elements swapped (a reshape target's [2, 12] -> [12, 2] keeps its product, where a step of one
// element only breaks it), or one element negated (an axis counted from the end instead).
Tensor PerturbValues(Gen& g, const Tensor& t) {
  Tensor out = t;
  const int64_t n = t.num_elements();
  if (n == 0) return out;
  const int64_t i = g.Int(0, n - 1);
  if (t.dtype() == DType::kBool) {
    out.SetInt64(i, 1 - t.GetInt64(i));
    return out;
  }
  switch (g.Int(0, 3)) {
    case 0: {
      const int64_t j = g.Int(0, n - 1);
      if (t.GetDouble(i) != t.GetDouble(j)) {
        out.SetDouble(i, t.GetDouble(j));
        out.SetDouble(j, t.GetDouble(i));
        return out;
      }
      break;  // equal: a step instead
    }
    case 1:
      if (t.GetDouble(i) != 0) {
        out.SetDouble(i, -t.GetDouble(i));
        return out;
      }
      break;
    default:
      break;
  }
  out.SetDouble(i, t.GetDouble(i) + g.Pick<double>({-3, -2, -1, 1, 2, 3}));
  return out;
}

Tensor PerturbShape(Gen& g, const Tensor& t) {
  std::vector<int64_t> s = t.shape();
  const int64_t choice = s.empty() ? 1 : g.Int(0, 2);
  if (choice == 0) {
    s[g.Int(0, static_cast<int64_t>(s.size()) - 1)] += 1;
  } else if (choice == 1) {
    s.push_back(2);
  } else {
    s.pop_back();
  }
  Tensor out = Tensor::Zeros(t.dtype(), s);
  for (int64_t i = 0; i < out.num_elements() && t.num_elements() > 0; ++i) {
    out.SetDouble(i, t.GetDouble(i % t.num_elements()));
  }
  return out;
}

// (e): shape-only inputs get fresh symbols; the symbolic result must evaluate to `concrete`.
void CheckSymbolic(const OpDef& def, const Attrs& attrs, const Trial& trial,
                   const std::vector<Type>& concrete) {
  DimExpr::Bindings bindings;
  std::vector<ShapeInput> ins;
  for (size_t i = 0; i < trial.inputs.size(); ++i) {
    const Tensor& t = trial.inputs[i];
    const InputDep dep = def.dep(static_cast<int>(i));
    if (NeedsValue(dep)) {
      ins.push_back(ShapeInput{t.type(), &t});
      continue;
    }
    std::vector<DimExpr> dims;
    const bool keep_last = std::find(trial.static_last_dim.begin(), trial.static_last_dim.end(),
                                     static_cast<int>(i)) != trial.static_last_dim.end();
    for (int j = 0; j < t.rank(); ++j) {
      if (keep_last && j == t.rank() - 1) {
        dims.push_back(DimExpr(t.shape()[j]));
        continue;
      }
      const std::string name = absl::StrCat("s", i, "_", j);
      bindings[name] = t.shape()[j];
      dims.push_back(DimExpr::Symbol(name));
    }
    ins.push_back(ShapeInput{Type::Tensor(t.dtype(), dims)});
  }
  auto sym = def.InferTypes(attrs, std::move(ins));
  ASSERT_TRUE(sym.ok()) << def.name() << " " << attrs.ToString()
                        << ": symbolic inference failed where the shape function succeeded: "
                        << sym.status();
  for (size_t o = 0; o < concrete.size(); ++o) {
    const Type& st = (*sym)[o];
    EXPECT_EQ(st.dtype(), concrete[o].dtype()) << def.name();
    if (st.rank() != concrete[o].rank()) {
      EXPECT_TRUE(trial.symbolic_rank_may_differ)
          << def.name() << " " << attrs.ToString() << ": symbolic " << st.ToString()
          << " vs concrete " << concrete[o].ToString();
      continue;
    }
    for (int j = 0; j < st.rank(); ++j) {
      if (st.shape()[j].is_unknown()) continue;
      auto v = st.shape()[j].Evaluate(bindings);
      ASSERT_TRUE(v.ok()) << v.status();
      EXPECT_EQ(*v, concrete[o].shape()[j].constant())
          << def.name() << " " << attrs.ToString() << ": symbolic " << st.ToString()
          << " vs concrete " << concrete[o].ToString();
    }
  }
}

// (f): compile time with the values unknown (no constant, no symbolic value): the rule must
// still succeed with the concrete rank, and every dim it claims must be right.
void CheckUnknownValues(const OpDef& def, const Attrs& attrs, const Trial& trial,
                        const std::vector<Type>& concrete) {
  if (!def.needs_values()) return;
  std::vector<ShapeInput> ins;
  for (const Tensor& t : trial.inputs) ins.push_back(ShapeInput{t.type()});
  auto types = def.InferTypes(attrs, std::move(ins));
  ASSERT_TRUE(types.ok()) << def.name() << " " << attrs.ToString()
                          << ": inference without values failed: " << types.status();
  for (size_t o = 0; o < concrete.size(); ++o) {
    const Type& t = (*types)[o];
    ASSERT_EQ(t.rank(), concrete[o].rank()) << def.name() << ": " << t.ToString();
    for (int j = 0; j < t.rank(); ++j) {
      if (t.shape()[j].is_unknown()) continue;
      EXPECT_EQ(t.shape()[j], concrete[o].shape()[j]) << def.name();
    }
  }
}

// (d): the reference kernel's outputs have the shape function's types.
void CheckKernel(const OpDef& def, const Attrs& attrs, const Trial& trial,
                 const std::vector<Type>& types) {
  ASSERT_TRUE(def.reference()) << def.name() << " has no reference kernel";
  auto out = def.reference()(trial.inputs, attrs, types);
  ASSERT_TRUE(out.ok()) << def.name() << " " << attrs.ToString() << ": " << out.status();
  ASSERT_EQ(out->size(), types.size()) << def.name();
  for (size_t o = 0; o < types.size(); ++o) {
    EXPECT_EQ((*out)[o].type(), types[o]) << def.name() << " " << attrs.ToString();
  }
}

void VerifyOp(const OpDef& def, const Generator& gen) {
  // HETPASS_MASK_SEED=<n> explores other trials (the default is fixed for reproducibility).
  const char* seed_env = std::getenv("HETPASS_MASK_SEED");
  const uint64_t seed = seed_env != nullptr ? std::strtoull(seed_env, nullptr, 10) : 0x5eed;
  Gen g(std::hash<std::string>()(def.name()) ^ seed);
  const size_t n = def.inputs().size();
  // Per declared input: did a perturbation change an output shape (values) or the outcome
  // (shapes); did a value perturbation only ever turn success into an error.
  std::vector<bool> value_influence(n, false), value_error(n, false), shape_influence(n, false);
  // Every declared bit must show its influence at least once: after kTrials, keep drawing
  // trials (up to kMaxTrials) while some has not, since some influences need a rare input
  // (dyn.squeeze's axes change a shape only when another, unsqueezed 1 sits apart from them).
  auto pending = [&] {
    for (size_t i = 0; i < n; ++i) {
      const InputDep dep = def.inputs()[i].dep;
      if ((NeedsValue(dep) && !value_influence[i]) || (NeedsShape(dep) && !shape_influence[i])) {
        return true;
      }
    }
    return false;
  };
  for (int trial_no = 0; trial_no < kTrials || (trial_no < kMaxTrials && pending()); ++trial_no) {
    const Trial trial = gen(g);
    auto attrs = def.CheckAttrs(trial.attrs);
    ASSERT_TRUE(attrs.ok()) << def.name() << ": generator made bad attrs: " << attrs.status();
    std::vector<std::string> violations;
    const Outcome base = RunConcrete(def, *attrs, trial.inputs, &violations);
    ASSERT_TRUE(base.ok) << def.name() << " " << attrs->ToString()
                         << ": shape function failed on valid inputs: " << base.error;
    ASSERT_EQ(static_cast<int>(base.types.size()), def.num_outputs()) << def.name();
    CheckKernel(def, *attrs, trial, base.types);
    CheckSymbolic(def, *attrs, trial, base.types);
    CheckUnknownValues(def, *attrs, trial, base.types);
    for (size_t i = 0; i < trial.inputs.size(); ++i) {
      const size_t spec = std::min(i, n - 1);
      const InputDep dep = def.dep(static_cast<int>(i));
      std::vector<Tensor> perturbed = trial.inputs;
      if (NeedsValue(dep)) {
        // (b) Several tries: most single changes of a reshape target or of squeeze axes make
        // the inputs invalid, which says nothing about the output shape.
        for (int k = 0; k < kValueTries && !value_influence[spec]; ++k) {
          perturbed[i] = PerturbValues(g, trial.inputs[i]);
          const Outcome o = RunConcrete(def, *attrs, perturbed, &violations);
          if (!o.ok) {
            value_error[spec] = true;
          } else if (!(o == base)) {
            value_influence[spec] = true;
          }
        }
      }
      if (NeedsShape(dep)) {
        perturbed[i] = PerturbShape(g, trial.inputs[i]);
        if (!(RunConcrete(def, *attrs, perturbed, &violations) == base)) {
          shape_influence[spec] = true;
        }
      }
    }
    ASSERT_TRUE(violations.empty()) << def.name() << ": mask violation: " << violations[0];
  }
  for (size_t i = 0; i < n; ++i) {
    const InputSpec& in = def.inputs()[i];
    if (NeedsValue(in.dep)) {
      EXPECT_TRUE(value_influence[i])
          << def.name() << ": input `" << in.name << "` is declared " << InputDepName(in.dep)
          << " but its values never change an output shape "
          << (value_error[i] ? "(read only to validate?)" : "(never read?)");
    }
    if (NeedsShape(in.dep)) {
      EXPECT_TRUE(shape_influence[i])
          << def.name() << ": input `" << in.name << "` is declared " << InputDepName(in.dep)
          << " but its shape never influences the outcome (mask should lack shape)";
    }
  }
}

TEST(MaskVerificationTest, EveryOpHasAGenerator) {
  for (const auto& def : OpRegistry::Global().ops()) {
    // Allocation ops have no shape rule: their size is their declared type.
    if (def->typed_by_declaration()) {
      EXPECT_FALSE(def->shape_rule()) << def->name();
      continue;
    }
    EXPECT_TRUE(Generators().count(def->name()))
        << "op '" << def->name()
        << "' has no input generator in test/support/op_generators.h: add one";
  }
  for (const auto& [name, gen] : Generators()) {
    EXPECT_NE(OpRegistry::Global().Find(name), nullptr) << "generator for unknown op " << name;
  }
}

TEST(MaskVerificationTest, MasksAreExactAndRulesAgree) {
  for (const auto& def : OpRegistry::Global().ops()) {
    auto it = Generators().find(def->name());
    if (it == Generators().end()) continue;  // reported by EveryOpHasAGenerator
    SCOPED_TRACE(def->name());
    VerifyOp(*def, it->second);
  }
}

// The verifier itself must catch a wrong mask: the single-flag behaviour of older systems (every
// input `value`) is over-declared for nn.dense, and an under-declared mask reads what it lacks.
TEST(MaskVerificationTest, DetectsWrongMasks) {
  auto all_value = OpRegistry::Global().CloneWith([](OpDef& def) {
    for (size_t i = 0; i < def.inputs().size(); ++i) {
      OpRegistry::SetDep(def, static_cast<int>(i), InputDep::kShapeAndValue);
    }
  });
  const OpDef* dense = all_value->Find("nn.dense");
  Gen g(1);
  const Trial t = Generators().at("nn.dense")(g);
  auto attrs = dense->CheckAttrs(t.attrs);
  ASSERT_TRUE(attrs.ok());
  std::vector<std::string> violations;
  const Outcome base = RunConcrete(*dense, *attrs, t.inputs, &violations);
  std::vector<Tensor> perturbed = t.inputs;
  perturbed[0] = PerturbValues(g, t.inputs[0]);
  EXPECT_EQ(RunConcrete(*dense, *attrs, perturbed, &violations), base)
      << "dense's values cannot influence its shape: the verifier would flag `value`";

  auto none = OpRegistry::Global().CloneWith([](OpDef& def) {
    if (def.name() == "dyn.strided_slice") OpRegistry::SetDep(def, 0, InputDep::kNone);
  });
  const OpDef* slice = none->Find("dyn.strided_slice");
  const Trial st = Generators().at("dyn.strided_slice")(g);
  auto sattrs = slice->CheckAttrs(st.attrs);
  ASSERT_TRUE(sattrs.ok());
  std::vector<std::string> sv;
  RunConcrete(*slice, *sattrs, st.inputs, &sv);
  ASSERT_FALSE(sv.empty());
  EXPECT_NE(sv[0].find("read the shape of input 0 'data', but its dependence mask is 'none'"),
            std::string::npos)
      << sv[0];
}

// The full verifier reports a wrong mask with the messages the brief promises.
std::unique_ptr<OpRegistry>* g_edited = nullptr;

TEST(MaskVerificationTest, ReportsOverDeclaredValue) {
  static std::unique_ptr<OpRegistry> edited = OpRegistry::Global().CloneWith([](OpDef& def) {
    if (def.name() == "nn.dense") OpRegistry::SetDep(def, 1, InputDep::kShapeAndValue);
  });
  g_edited = &edited;
  EXPECT_NONFATAL_FAILURE(
      VerifyOp(*(*g_edited)->Find("nn.dense"), Generators().at("nn.dense")),
      "nn.dense: input `weight` is declared shape+value but its values never change an output "
      "shape (never read?)");
}

// Tests that a value read only to validate is over-declared, not influence: `take` whose
// `indices` are declared shape+value, with a rule that bounds-checks them (`fast` mode) when
// the mask lets it read them, as a well-meaning rule might. Each perturbation that breaks the
// bounds turns the result into an error, which must not count: that mask would copy every
// device gather's indices to the host for a check the kernel makes anyway.
TEST(MaskVerificationTest, RejectsValuesReadOnlyToValidate) {
  static std::unique_ptr<OpRegistry> edited = OpRegistry::Global().CloneWith([](OpDef& def) {
    if (def.name() != "take") return;
    OpRegistry::SetDep(def, 1, InputDep::kShapeAndValue);
    OpDefBuilder(&def).Rule(
        [rule = def.shape_rule()](ShapeContext& ctx) -> absl::StatusOr<std::vector<Type>> {
          absl::StatusOr<absl::Span<const DimExpr>> data = ctx.Shape(0);
          absl::StatusOr<std::optional<std::vector<DimExpr>>> indices = ctx.IntValues(1);
          if (!data.ok()) return data.status();
          if (!indices.ok()) return indices.status();
          const int64_t axis = ctx.attrs().GetInt("axis");
          if (ctx.attrs().GetString("mode") == "fast" && indices->has_value() && axis >= 0 &&
              axis < static_cast<int64_t>(data->size()) && (*data)[axis].is_constant()) {
            const int64_t d = (*data)[axis].constant();
            for (const DimExpr& i : **indices) {
              if (i.is_constant() && (i.constant() < -d || i.constant() >= d)) {
                return ctx.Error("index out of range");
              }
            }
          }
          return rule(ctx);
        });
  });
  g_edited = &edited;
  EXPECT_NONFATAL_FAILURE(
      VerifyOp(*(*g_edited)->Find("take"), Generators().at("take")),
      "take: input `indices` is declared shape+value but its values never change an output "
      "shape (read only to validate?)");
}

TEST(MaskVerificationTest, ReportsUnderDeclaredMask) {
  static std::unique_ptr<OpRegistry> edited = OpRegistry::Global().CloneWith([](OpDef& def) {
    if (def.name() == "dyn.strided_slice") OpRegistry::SetDep(def, 2, InputDep::kShape);
  });
  g_edited = &edited;
  EXPECT_FATAL_FAILURE(
      VerifyOp(*(*g_edited)->Find("dyn.strided_slice"), Generators().at("dyn.strided_slice")),
      "read the values of input 2 'end', but its dependence mask is 'shape'");
}

}  // namespace
}  // namespace hetpass::testing
