// Property test of derived masks: random fused primitive functions, each checked by
// CheckPrimitiveMask against its DeriveInputMask on concrete arguments.
//
// A case is a chain of 2-5 ops in one primitive function:
//   head  any registered op (shape queries included; allocation and copy ops excluded), with
//         inputs and attributes from its generator in test/support/op_generators.h, the same
//         one the op's own mask verification uses; every input becomes a parameter. A result
//         that is not f32 is cast to f32 so that the tail can follow it.
//   tail  1-4 steps on the current value, each with its other operands fresh parameters made
//         for the current concrete shape: elementwise (unary, binary with a broadcast operand),
//         injective (reshape, transpose, expand_dims, strided_slice, take), the value-reading
//         dyn.* ops fed from parameters (dyn.reshape, dyn.strided_slice, dyn.tile,
//         dyn.broadcast_to, dyn.nn.pad, dyn.squeeze, dyn.unsqueeze), a reshape target computed
//         inside the group on the host (add of two parameters, a dyn.strided_slice of a longer
//         vector, reps from dyn.full: their kernels read every operand, whatever the op's
//         own mask), a target from shape_of of a parameter or take(shape_of(x), indices), a
//         fill value that nothing measures (dyn.full: `none`).
//   results  the last value; sometimes also an earlier one, a parameter, or a parameter's
//         negation (so that a value parameter is also needed for its shape).
// Float parameters get symbolic dims at random (so the checker can perturb dims of `none`
// parameters); when infer-types cannot type such a function, the case falls back to static
// parameter types. Every op is computed concretely (shape rule and reference kernel) while the
// chain is built, so a step whose operands its op rejects is simply drawn again.
//
// For each case: CheckPrimitiveMask(f, DeriveInputMask(f), args) passes, and the run-time
// contract holds (data only for `value` parameters, no dims of `none` ones gives the same
// types as everything visible). Fixed seed, kCases cases, well under a second.
#include "passes/shape_funcs/primitive_mask_check.h"

#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/ir/builder.h"
#include "passes/ir/printer.h"
#include "passes/shape_funcs/primitive_function.h"
#include "support/ir_test_util.h"
#include "support/op_generators.h"

namespace hetpass {
namespace {

using ::hetpass::testing::BroadcastOperand;
using ::hetpass::testing::Gen;
using ::hetpass::testing::Generators;
using ::hetpass::testing::RandomNewShape;
using ::hetpass::testing::RandomPads;
using ::hetpass::testing::RandomSlice;
using ::hetpass::testing::Trial;
using ::testing::HasSubstr;

constexpr int kCases = 300;

// HETPASS_MASK_SEED=<n> explores other cases (the default is fixed for reproducibility).
uint64_t Seed() {
  const char* env = std::getenv("HETPASS_MASK_SEED");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 0x5eed;
}

// Builds one primitive function and its concrete arguments.
class ChainBuilder {
 public:
  explicit ChainBuilder(Gen& g) : g_(g), module_(std::make_unique<Module>()) {
    f_ = module_->AddFunction("fused_chain");
    f_->mutable_attrs().Set(kPrimitiveAttr, true);
  }

  // Builds the chain; false when the drawn head cannot start one (the caller draws again).
  bool Build() {
    if (!Head()) return false;
    const int steps = static_cast<int>(g_.Int(1, 4));
    for (int s = 0, tries = 0; s < steps && tries < 40; ++tries) {
      if (Step()) ++s;
    }
    std::vector<Value*> results = {cur_};
    const int64_t extra = g_.Int(0, 7);
    if (extra == 0 && !earlier_.empty()) results.push_back(g_.Pick(earlier_));
    if (extra == 1) results.push_back(g_.Pick(params_));
    if (extra == 2) {
      Value* p = g_.Pick(params_);
      if (p->type().dtype() != DType::kBool) {
        if (auto r = Call("negative", {p})) results.push_back((*r)[0]);
      }
    }
    f_->body().set_results(results);
    return true;
  }

  Module& module() { return *module_; }
  const Function& function() const { return *f_; }
  const std::vector<Tensor>& args() const { return args_; }
  // Infer-types failed with symbolic parameters (squeeze without axes keeps a symbolic dim
  // that may be 1, so a later op sees another rank): make every parameter's type static and
  // forget the types inferred so far.
  void MakeParamsStatic() {
    for (size_t i = 0; i < params_.size(); ++i) params_[i]->set_type(args_[i].type());
    for (const auto& n : f_->body().nodes()) {
      for (int i = 0; i < n->num_results(); ++i) n->result(i)->set_type(Type());
    }
    f_->set_result_types({});
    symbolic_ = false;
  }
  bool has_symbolic_params() const { return symbolic_; }

 private:
  // A fresh parameter with argument `t`; float dims become symbols at random.
  Value* Param(Tensor t) {
    std::vector<DimExpr> dims;
    for (int64_t d : t.shape()) {
      if (IsFloat(t.dtype()) && g_.Coin()) {
        dims.push_back(DimExpr::Symbol(absl::StrCat("d", next_symbol_++)));
        symbolic_ = true;
      } else {
        dims.push_back(DimExpr(d));
      }
    }
    Value* p = f_->body().AddParam(Type::Tensor(t.dtype(), dims),
                                   absl::StrCat("p", f_->body().num_params()));
    params_.push_back(p);
    data_[p] = t;
    args_.push_back(std::move(t));
    return p;
  }

  // A constant in the body (a length type inference must know).
  Value* Const(Tensor t) {
    Value* c = Builder(&f_->body()).Constant(t);
    data_[c] = std::move(t);
    return c;
  }

  // Calls `op` when it accepts the operands' concrete data: its shape rule and reference
  // kernel run first, and the call is appended only if both succeed.
  std::optional<std::vector<Value*>> Call(const std::string& op, std::vector<Value*> operands,
                                          Attrs attrs = {}) {
    const OpDef* def = OpRegistry::Global().Find(op);
    if (def == nullptr) return std::nullopt;
    absl::StatusOr<Attrs> checked = def->CheckAttrs(attrs);
    if (!checked.ok()) return std::nullopt;
    std::vector<ShapeInput> ins;
    std::vector<Tensor> args;
    for (Value* v : operands) {
      const Tensor& t = data_.at(v);
      ins.push_back(ShapeInput{t.type(), &t});
      args.push_back(t);
    }
    absl::StatusOr<std::vector<Type>> types = def->InferTypes(*checked, std::move(ins));
    if (!types.ok() || types->empty() || !def->reference()) return std::nullopt;
    absl::StatusOr<std::vector<Tensor>> out = def->reference()(args, *checked, *types);
    if (!out.ok()) return std::nullopt;
    Builder b(&f_->body());
    absl::StatusOr<Node*> node = b.CallNode(op, std::move(operands), std::move(attrs));
    if (!node.ok()) return std::nullopt;
    std::vector<Value*> results;
    for (int i = 0; i < (*node)->num_results(); ++i) {
      data_[(*node)->result(i)] = (*out)[i];
      results.push_back((*node)->result(i));
    }
    return results;
  }

  // Sets the current value (the previous one may be returned too).
  void Advance(Value* v) {
    if (cur_ != nullptr) earlier_.push_back(cur_);
    cur_ = v;
  }
  const std::vector<int64_t>& Shape() const { return data_.at(cur_).shape(); }

  bool Head() {
    std::vector<std::string> names;
    for (const auto& [name, gen] : Generators()) {
      const OpDef* def = OpRegistry::Global().Find(name);
      if (def != nullptr && !def->typed_by_declaration() &&
          (def->role() == OpRole::kCompute || def->role() == OpRole::kShapeQuery)) {
        names.push_back(name);
      }
    }
    const std::string& name = g_.Pick(names);
    Trial trial = Generators().at(name)(g_);
    std::vector<Value*> operands;
    for (Tensor& t : trial.inputs) operands.push_back(Param(std::move(t)));
    auto r = Call(name, std::move(operands), trial.attrs);
    if (!r) return false;
    Advance((*r)[0]);
    if (data_.at(cur_).dtype() != DType::kF32) {
      auto c = Call("cast", {cur_}, {{"dtype", DType::kF32}});
      if (!c) return false;
      Advance((*c)[0]);
    }
    return true;
  }

  // One tail step; false when the drawn step does not fit the current value.
  bool Step() {
    const std::vector<int64_t> shape = Shape();
    const int64_t rank = static_cast<int64_t>(shape.size());
    std::optional<std::vector<Value*>> r;
    switch (g_.Int(0, 18)) {
      case 0:
        r = Call(g_.Pick<std::string>({"exp", "negative", "abs", "nn.relu", "sigmoid", "floor"}),
                 {cur_});
        break;
      case 1: {
        Value* other = g_.Coin() ? Param(g_.F(BroadcastOperand(g_, shape))) : cur_;
        const std::string op = g_.Pick<std::string>({"add", "multiply", "maximum", "subtract"});
        r = g_.Coin() ? Call(op, {cur_, other}) : Call(op, {other, cur_});
        break;
      }
      case 2:
        r = Call("reshape", {cur_}, {{"newshape", RandomNewShape(g_, shape)}});
        break;
      case 3:
        r = Call("dyn.reshape", {cur_, Param(g_.Vec(RandomNewShape(g_, shape)))});
        break;
      case 4: {
        // A target computed inside the group: t - z + z.
        std::vector<int64_t> target = RandomNewShape(g_, shape);
        const int64_t z = g_.Int(0, 2);
        for (int64_t& d : target) d -= z;
        auto t = Call("add", {Param(g_.Vec(target)), Param(testing::I64Scalar(z))});
        if (t) r = Call("dyn.reshape", {cur_, (*t)[0]});
        break;
      }
      case 5: {
        // A target measured from a parameter's shape: shape only, no copy.
        std::vector<int64_t> reversed(shape.rbegin(), shape.rend());
        auto s = Call("shape_of", {Param(g_.F(reversed))});
        if (s) r = Call("dyn.reshape", {cur_, (*s)[0]});
        break;
      }
      case 6: {
        // The shape subgraph: take(shape_of(cur), indices) as a target.
        if (rank == 0) break;
        std::vector<int64_t> order(rank);
        for (int64_t i = 0; i < rank; ++i) order[i] = rank - 1 - i;
        auto s = Call("shape_of", {cur_});
        if (!s) break;
        auto t = Call("take", {(*s)[0], Param(g_.Vec(order))}, {{"axis", int64_t{0}}});
        if (t) r = Call("dyn.reshape", {cur_, (*t)[0]});
        break;
      }
      case 7: {
        if (rank == 0) break;
        const testing::SliceArgs s = RandomSlice(g_, shape);
        r = Call("dyn.strided_slice",
                 {cur_, Param(g_.Vec(s.begin)), Param(g_.Vec(s.end)), Param(g_.Vec(s.strides))});
        break;
      }
      case 8: {
        if (rank == 0) break;
        const testing::SliceArgs s = RandomSlice(g_, shape);
        r = Call("strided_slice", {cur_},
                 {{"begin", s.begin}, {"end", s.end}, {"strides", s.strides}});
        break;
      }
      case 9: {
        std::vector<int64_t> perm(rank);
        for (int64_t i = 0; i < rank; ++i) perm[i] = i;
        std::shuffle(perm.begin(), perm.end(), g_.rng());
        r = Call("transpose", {cur_}, {{"axes", perm}});
        break;
      }
      case 10:
        r = Call("expand_dims", {cur_}, {{"axis", g_.Int(-rank - 1, rank)}});
        break;
      case 11:
        r = Call("dyn.tile", {cur_, Param(g_.Vec(g_.Shape(g_.Int(1, 3), 1, 2)))});
        break;
      case 12: {
        std::vector<int64_t> target = g_.Shape(g_.Int(0, 1), 1, 3);
        for (int64_t d : shape) target.push_back(d == 1 ? g_.Int(1, 3) : d);
        r = Call("dyn.broadcast_to", {cur_, Param(g_.Vec(target))});
        break;
      }
      case 13: {
        if (rank == 0) break;
        const int64_t axis = g_.Int(0, rank - 1), d = shape[axis];
        Value* indices = Param(g_.I(g_.Shape(g_.Int(0, 2)), -d - 1, d + 1));
        r = Call("take", {cur_, indices}, {{"axis", axis}, {"mode", std::string("clip")}});
        break;
      }
      case 14: {
        // A fill value nothing measures: its parameter's mask is `none`.
        Value* fill = Param(g_.F({}));
        if (g_.Coin()) {
          auto e = Call("exp", {fill});
          if (!e) break;
          fill = (*e)[0];
        }
        auto s = Call("shape_of", {cur_});
        if (!s) break;
        auto full = Call("dyn.full", {fill, (*s)[0]}, {{"dtype", DType::kF32}});
        if (full) r = Call("add", {(*full)[0], cur_});
        break;
      }
      case 15: {
        if (rank == 0) break;
        const std::string mode = g_.Pick<std::string>({"constant", "edge"});
        r = Call("dyn.nn.pad", {cur_, Param(g_.Vec(RandomPads(g_, shape, false))), Param(g_.F({}))},
                 {{"pad_mode", mode}});
        break;
      }
      case 16: {
        // Reps computed on the host by a value-reading op: dyn.full's fill value, `none` for
        // its shape rule, is read by its kernel (shape+value).
        // The length is a constant: type inference must know how many reps there are.
        auto reps = Call("dyn.full",
                         {Param(testing::I64Scalar(g_.Int(1, 2))), Const(g_.Vec({g_.Int(1, 3)}))},
                         {{"dtype", DType::kI64}});
        if (reps) r = Call("dyn.tile", {cur_, (*reps)[0]});
        break;
      }
      case 17: {
        // A target sliced on the host out of a longer vector (a shape subgraph's slice): the
        // sliced vector, `shape` for the slice's rule, is read by its kernel.
        std::vector<int64_t> target = RandomNewShape(g_, shape);
        const int64_t len = static_cast<int64_t>(target.size());
        std::vector<int64_t> longer = target;
        for (int64_t k = g_.Int(0, 2); k > 0; --k) longer.push_back(g_.Int(1, 5));
        // Constant bounds: type inference must know the target's length.
        auto t = Call("dyn.strided_slice", {Param(g_.Vec(longer)), Const(g_.Vec({0})),
                                            Const(g_.Vec({len})), Const(g_.Vec({1}))});
        if (t) r = Call("dyn.reshape", {cur_, (*t)[0]});
        break;
      }
      default: {
        std::vector<int64_t> axes;
        for (int64_t i = 0; i < rank; ++i) {
          if (shape[i] == 1 && g_.Coin()) axes.push_back(g_.Coin() ? i : i - rank);
        }
        if (!axes.empty() && g_.Coin()) {
          r = Call("dyn.squeeze", {cur_, Param(g_.Vec(axes))});
        } else {
          const int64_t out_rank = rank + 1;
          r = Call("dyn.unsqueeze", {cur_, Param(g_.Vec({g_.Int(-out_rank, out_rank - 1)}))});
        }
        break;
      }
    }
    if (!r) return false;
    Advance((*r)[0]);
    return true;
  }

  Gen& g_;
  std::unique_ptr<Module> module_;
  Function* f_ = nullptr;
  std::vector<Value*> params_;
  std::vector<Tensor> args_;
  absl::flat_hash_map<const Value*, Tensor> data_;  // concrete contents of every value
  Value* cur_ = nullptr;
  std::vector<Value*> earlier_;
  int next_symbol_ = 0;
  bool symbolic_ = false;
};

// Runs infer-types (with the verifier) on the case's module; falls back to static parameter
// types when the symbolic ones cannot be typed.
bool InferTypesOf(ChainBuilder& chain) {
  if (testing::RunPipeline(chain.module(), "infer-types").ok()) return true;
  chain.MakeParamsStatic();
  return testing::RunPipeline(chain.module(), "infer-types").ok();
}

// Tests the property on kCases random chains, and that the generator covers what it claims.
TEST(PrimitiveMaskCheck, DerivedMasksOfRandomFusedGroupsPass) {
  const uint64_t seed = Seed();
  Gen g(seed);
  int cases = 0, with_value = 0, with_none = 0, with_shape_and_value = 0, symbolic = 0;
  for (int attempt = 0; cases < kCases && attempt < 10 * kCases; ++attempt) {
    ChainBuilder chain(g);
    if (!chain.Build()) continue;
    ASSERT_TRUE(InferTypesOf(chain)) << "infer-types failed on a chain its ops computed:\n"
                                     << PrintModule(chain.module());
    ++cases;
    const Function& f = chain.function();
    const std::vector<InputDep> mask = DeriveInputMask(f);
    for (InputDep d : mask) {
      with_value += d == InputDep::kValue;
      with_none += d == InputDep::kNone;
      with_shape_and_value += d == InputDep::kShapeAndValue;
    }
    symbolic += chain.has_symbolic_params();
    PrimitiveMaskCheckOptions options;
    options.seed = seed + attempt;
    const absl::Status s = CheckPrimitiveMask(f, mask, chain.args(), options);
    ASSERT_TRUE(s.ok()) << s << "\n" << PrintModule(chain.module());

    // The run-time contract: what the derived mask lets through suffices.
    std::vector<ShapeInput> gated;
    for (size_t i = 0; i < mask.size(); ++i) {
      gated.push_back(
          ShapeInput{chain.args()[i].type(), NeedsValue(mask[i]) ? &chain.args()[i] : nullptr});
    }
    absl::StatusOr<std::vector<Type>> contract = InferPrimitiveTypes(f, std::move(gated));
    PrimitiveShapeRunOptions all;
    all.apply_derived_mask = false;
    std::vector<ShapeInput> visible;
    for (const Tensor& t : chain.args()) visible.push_back(ShapeInput{t.type(), &t});
    absl::StatusOr<std::vector<Type>> full = InferPrimitiveTypes(f, std::move(visible), all);
    ASSERT_TRUE(contract.ok()) << contract.status() << "\n" << PrintModule(chain.module());
    ASSERT_TRUE(full.ok()) << full.status();
    EXPECT_EQ(*contract, *full) << PrintModule(chain.module());
  }
  EXPECT_EQ(cases, kCases);
  // The generator must keep exercising each kind of parameter.
  EXPECT_GE(with_value, kCases / 5);
  EXPECT_GE(with_none, kCases / 20);
  EXPECT_GE(with_shape_and_value, kCases / 20);
  EXPECT_GE(symbolic, kCases / 5);
}

constexpr char kReshapeGroup[] = R"(
def @fused_exp_dyn_reshape(%x: f32[n, 4], %t: i64[2]) attributes {primitive = true} {
  %e = exp(%x)
  %r = dyn.reshape(%e, %t)
  return %r
}
)";

std::unique_ptr<Module> Typed(const std::string& text) {
  std::unique_ptr<Module> m = testing::Parse(text);
  if (m == nullptr) return nullptr;
  absl::StatusOr<bool> r = testing::RunPipeline(*m, "infer-types");
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? std::move(m) : nullptr;
}

const std::vector<Tensor>& ReshapeArgs() {
  static const auto* args =
      new std::vector<Tensor>{Tensor::Zeros(DType::kF32, {3, 4}), testing::I64s({6, 2})};
  return *args;
}

// Tests that the derived mask of the reshape group passes.
TEST(PrimitiveMaskCheck, DerivedMaskPasses) {
  auto m = Typed(kReshapeGroup);
  ASSERT_NE(m, nullptr);
  const Function& f = *m->FindFunction("fused_exp_dyn_reshape");
  const std::vector<InputDep> mask = DeriveInputMask(f);
  EXPECT_THAT(mask, ::testing::ElementsAre(InputDep::kShape, InputDep::kValue));
  EXPECT_TRUE(CheckPrimitiveMask(f, mask, ReshapeArgs()).ok());
  // Over-declaration is allowed (it costs copies, not correctness).
  EXPECT_TRUE(
      CheckPrimitiveMask(f, {InputDep::kShapeAndValue, InputDep::kShapeAndValue}, ReshapeArgs())
          .ok());
}

// Tests that a derived mask stripped of the target's value bit is rejected, naming the
// primitive function, the parameter and the bit.
TEST(PrimitiveMaskCheck, RejectsMissingValueBit) {
  auto m = Typed(kReshapeGroup);
  ASSERT_NE(m, nullptr);
  const Function& f = *m->FindFunction("fused_exp_dyn_reshape");
  std::vector<InputDep> mask = DeriveInputMask(f);
  mask[1] = InputDep::kNone;  // the value bit stripped from the newshape parameter
  const absl::Status s = CheckPrimitiveMask(f, mask, ReshapeArgs());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("mask of @fused_exp_dyn_reshape is under-declared: "
                                     "parameter 1 %t is read for its values, but its mask is "
                                     "'none'"));
}

// Tests that a mask lacking the shape bit of a parameter whose dims an inner rule reads is
// rejected too.
TEST(PrimitiveMaskCheck, RejectsMissingShapeBit) {
  auto m = Typed(kReshapeGroup);
  ASSERT_NE(m, nullptr);
  const Function& f = *m->FindFunction("fused_exp_dyn_reshape");
  const absl::Status s = CheckPrimitiveMask(f, {InputDep::kNone, InputDep::kValue}, ReshapeArgs());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("parameter 0 %x is read for its shape, but its mask is "
                                     "'none'"));
}

// Tests that a value computed on the host from parameters records shape+value reads of both,
// and that a parameter only returned is read for its shape.
TEST(PrimitiveMaskCheck, RecordsReadsThroughHostKernelsAndResults) {
  auto m = Typed(R"(
def @f(%x: f32[24], %t: i64[2], %k: i64[], %y: f32[m], %fill: f32[]) attributes {primitive = true} {
  %t2 = multiply(%t, %k)
  %r = dyn.reshape(%x, %t2)
  %s = shape_of(%r)
  %full = dyn.full(%fill, %s) {dtype = f32}
  return %full, %y
}
)");
  ASSERT_NE(m, nullptr);
  const Function& f = *m->FindFunction("f");
  const std::vector<Tensor> args = {Tensor::Zeros(DType::kF32, {48}), testing::I64s({2, 6}),
                                    testing::I64Scalar(2), Tensor::Zeros(DType::kF32, {5}),
                                    Tensor::Zeros(DType::kF32, {})};
  std::vector<ShapeInput> ins;
  for (const Tensor& t : args) ins.push_back(ShapeInput{t.type(), &t});
  std::vector<InputDep> reads;
  PrimitiveShapeRunOptions options;
  options.apply_derived_mask = false;
  options.reads = &reads;
  absl::StatusOr<std::vector<Type>> types = InferPrimitiveTypes(f, std::move(ins), options);
  ASSERT_TRUE(types.ok()) << types.status();
  EXPECT_THAT(reads,
              ::testing::ElementsAre(InputDep::kShape, InputDep::kShapeAndValue,
                                     InputDep::kShapeAndValue, InputDep::kShape, InputDep::kNone));
  EXPECT_EQ(reads, DeriveInputMask(f));
  EXPECT_TRUE(CheckPrimitiveMask(f, DeriveInputMask(f), args).ok());
}

// Tests that arguments the function rejects are reported as such, not as a mask problem.
TEST(PrimitiveMaskCheck, RejectsBadArguments) {
  auto m = Typed(kReshapeGroup);
  ASSERT_NE(m, nullptr);
  const Function& f = *m->FindFunction("fused_exp_dyn_reshape");
  const std::vector<Tensor> bad = {Tensor::Zeros(DType::kF32, {3, 4}), testing::I64s({5, 2})};
  const absl::Status s = CheckPrimitiveMask(f, DeriveInputMask(f), bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("the shape function fails on the arguments"));
  EXPECT_EQ(CheckPrimitiveMask(f, {InputDep::kShape}, ReshapeArgs()).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hetpass
