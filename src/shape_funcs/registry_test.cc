// Tests of the registry as a whole: it builds, names are unique and sorted, Describe() lists
// every op with its masks, CloneWith can emulate the single-flag behaviour, CheckAttrs reports
// schema errors.
#include <set>
#include <string>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/shape_funcs/op_ids.h"
#include "shape_funcs/test_util.h"

namespace hetpass::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(RegistryTest, BuildsWithEveryFamily) {
  const OpRegistry& reg = OpRegistry::Global();
  EXPECT_GE(reg.ops().size(), 57u);
  for (const char* name : {"nn.dense", "nn.conv2d", "shape_of", "dyn.strided_slice", "argwhere",
                           "image.resize2d", "topk", "sum", "concatenate", "add"}) {
    EXPECT_NE(reg.Find(name), nullptr) << name;
  }
  EXPECT_EQ(reg.Find("no.such.op"), nullptr);
}

TEST(RegistryTest, NamesUniqueAndSorted) {
  std::set<std::string> seen;
  std::string prev;
  for (const auto& def : OpRegistry::Global().ops()) {
    EXPECT_TRUE(seen.insert(def->name()).second) << def->name();
    EXPECT_LT(prev, def->name());
    prev = def->name();
  }
}

TEST(RegistryTest, EveryOpIsComplete) {
  for (const auto& def : OpRegistry::Global().ops()) {
    EXPECT_FALSE(def->doc().empty()) << def->name() << " has no doc";
    if (def->typed_by_declaration()) {
      // Allocation ops and kill points: typed by their declaration, no rule, no kernel.
      EXPECT_FALSE(def->shape_rule()) << def->name();
      EXPECT_TRUE(def->role() == OpRole::kAllocStorage || def->role() == OpRole::kAllocTensor ||
                  def->role() == OpRole::kAllocTensorDyn || def->role() == OpRole::kKill)
          << def->name();
      continue;
    }
    EXPECT_TRUE(def->shape_rule()) << def->name();
    EXPECT_TRUE(def->reference()) << def->name() << " has no reference kernel";
    EXPECT_FALSE(def->doc().empty()) << def->name() << " has no doc";
    EXPECT_FALSE(def->inputs().empty()) << def->name();
  }
}

TEST(RegistryTest, DescribeListsEveryOpWithItsMask) {
  const std::string text = OpRegistry::Global().Describe();
  const std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), OpRegistry::Global().ops().size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const OpDef& def = *OpRegistry::Global().ops()[i];
    EXPECT_THAT(lines[i], StartsWith(def.name() + " "));
    for (const InputSpec& in : def.inputs()) {
      EXPECT_THAT(lines[i], HasSubstr(in.name)) << def.name();
      EXPECT_THAT(lines[i], HasSubstr(std::string(InputDepName(in.dep)))) << def.name();
    }
  }
  EXPECT_THAT(text, HasSubstr("inputs(data:shape, begin:value, end:value, strides:value)"));
  EXPECT_THAT(text, HasSubstr("inputs(fill_value:none, shape:value)"));
  EXPECT_THAT(text, HasSubstr("inputs(condition:value) attrs() outputs=1 pattern=opaque "
                              "placement=target out-shape=data-dependent"));
  EXPECT_THAT(text, HasSubstr("shape_of               inputs(data:shape) attrs(dtype:dtype = i64) "
                              "outputs=1 pattern=opaque placement=host role=shape-query"));
  EXPECT_THAT(text, HasSubstr("placement=anywhere role=device-copy"));
  EXPECT_THAT(text, HasSubstr("inputs(data...:shape) attrs(axis:int = 0)"));
}

TEST(RegistryTest, CloneWithEmulatesTheSingleFlag) {
  auto all_value = OpRegistry::Global().CloneWith([](OpDef& def) {
    for (size_t i = 0; i < def.inputs().size(); ++i) {
      OpRegistry::SetDep(def, static_cast<int>(i), InputDep::kShapeAndValue);
    }
  });
  ASSERT_EQ(all_value->ops().size(), OpRegistry::Global().ops().size());
  for (const auto& def : all_value->ops()) {
    if (!def->inputs().empty()) {
      EXPECT_TRUE(def->needs_values()) << def->name();
    }
  }
  EXPECT_EQ(all_value->Find("dyn.strided_slice")->dep(0), InputDep::kShapeAndValue);
  // The global table is untouched.
  EXPECT_EQ(OpRegistry::Global().Find("dyn.strided_slice")->dep(0), InputDep::kShape);
  EXPECT_FALSE(OpRegistry::Global().Find("nn.dense")->needs_values());
  // The rules still work under the wider mask.
  const Tensor b = I64s({1}), e = I64s({3}), s = I64s({1});
  const OpDef* slice = all_value->Find("dyn.strided_slice");
  auto attrs = slice->CheckAttrs({});
  ASSERT_TRUE(attrs.ok());
  const Tensor x = FT({4}, {0, 1, 2, 3});
  auto types = slice->InferTypes(*attrs, {InV(x), InV(b), InV(e), InV(s)});
  ASSERT_TRUE(types.ok()) << types.status();
  EXPECT_EQ(Str(*types), "f32[2]");
}

TEST(RegistryTest, NeedsValuesOnlyWhereDeclared) {
  std::vector<std::string> value_ops;
  for (const auto& def : OpRegistry::Global().ops()) {
    if (def->needs_values()) value_ops.push_back(def->name());
  }
  EXPECT_EQ(absl::StrJoin(value_ops, ","),
            "arange,argwhere,dyn.broadcast_to,dyn.full,dyn.image.resize2d,"
            "dyn.image.resize2d_scaled,dyn.nn.max_unpool2d,dyn.nn.pad,dyn.ones,dyn.reshape,"
            "dyn.squeeze,dyn.strided_slice,dyn.sum,dyn.tile,dyn.topk,dyn.unsqueeze,dyn.zeros,"
            "memory.alloc_tensor_dyn,non_max_suppression,unique");
}

TEST(RegistryTest, CheckAttrsErrors) {
  const OpDef* conv = Op("nn.conv2d");
  auto unknown = conv->CheckAttrs({{"stride", std::vector<int64_t>{1, 1}}});
  EXPECT_THAT(unknown.status().message(),
              HasSubstr("op 'nn.conv2d' has no attribute 'stride' (known: strides, padding"));
  auto wrong = conv->CheckAttrs({{"groups", std::string("2")}});
  EXPECT_EQ(wrong.status().message(),
            "attribute 'groups' of op 'nn.conv2d' must be of type int, got \"2\"");
  auto missing = Op("reshape")->CheckAttrs({});
  EXPECT_EQ(missing.status().message(), "op 'reshape' needs attribute 'newshape' of type int[]");
  auto no_attrs = Op("add")->CheckAttrs({{"axis", int64_t{1}}});
  EXPECT_THAT(no_attrs.status().message(), HasSubstr("has no attribute 'axis' (known: none)"));
}

// The verifier's ValidateAttrs answers as CheckAttrs does, without the copy: for every op of the
// registry, with no attributes, an unknown one, and each schema attribute given a value of each
// attribute type (the widened ones included), the same verdict and the same message.
TEST(RegistryTest, ValidateAttrsAgreesWithCheckAttrs) {
  const std::vector<AttrValue> samples = {
      AttrValue(int64_t{1}),          AttrValue(1.5),
      AttrValue(true),                AttrValue(std::string("s")),
      AttrValue(std::vector<int64_t>{1}), AttrValue(std::vector<double>{1.0}),
      AttrValue(DType::kF32),         AttrValue(std::vector<InputDep>{InputDep::kShape})};
  int compared = 0, failing = 0;
  auto same = [&](const OpDef& op, const Attrs& attrs) {
    const absl::StatusOr<Attrs> checked = op.CheckAttrs(attrs);
    const absl::Status validated = op.ValidateAttrs(attrs);
    EXPECT_EQ(checked.status(), validated) << op.name() << " " << attrs.ToString();
    ++compared;
    failing += !validated.ok();
  };
  for (const auto& op : OpRegistry::Global().ops()) {
    same(*op, Attrs());
    same(*op, Attrs({{"no_such_attribute", int64_t{1}}}));
    for (const AttrSpec& spec : op->attrs()) {
      for (const AttrValue& v : samples) {
        Attrs attrs;
        attrs.Set(spec.name, v);
        same(*op, attrs);
      }
    }
  }
  // Both verdicts occur (the comparison is not of two always-ok answers).
  EXPECT_GT(failing, 0);
  EXPECT_LT(failing, compared);
}

TEST(RegistryTest, CheckAttrsFillsDefaultsAndWidensInts) {
  auto attrs = Op("nn.pad")->CheckAttrs(
      {{"pad_width", std::vector<int64_t>{1, 1}}, {"pad_value", int64_t{2}}});
  ASSERT_TRUE(attrs.ok()) << attrs.status();
  EXPECT_EQ(attrs->GetFloat("pad_value"), 2.0);
  EXPECT_EQ(attrs->GetString("pad_mode"), "constant");
  auto conv = Op("nn.conv2d")->CheckAttrs({});
  ASSERT_TRUE(conv.ok());
  EXPECT_EQ(conv->GetIntList("strides"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(conv->GetInt("groups"), 1);
}

TEST(RegistryTest, InferTypesChecksArityAndTensorInputs) {
  EXPECT_THAT(InferStr("nn.dense", {}, {In(F32({2, 2}))}), HasSubstr("takes 2 inputs, got 1"));
  auto r = Op("nn.relu")->InferTypes({}, {ShapeInput{Type::Tuple({F32({2})})}});
  EXPECT_THAT(r.status().message(), HasSubstr("input 0 'data' must be a tensor"));
}

TEST(RegistryTest, BuilderRejectsDuplicatesAndMissingRules) {
  OpRegistry::Builder dup;
  dup.Register("x").Input("a", InputDep::kShape).Rule([](ShapeContext&) {
    return absl::StatusOr<std::vector<Type>>(std::vector<Type>{F32({})});
  });
  dup.Register("x").Input("a", InputDep::kShape).Rule([](ShapeContext&) {
    return absl::StatusOr<std::vector<Type>>(std::vector<Type>{F32({})});
  });
  EXPECT_THAT(dup.Build().status().message(), HasSubstr("op 'x' registered twice"));
  OpRegistry::Builder no_rule;
  no_rule.Register("y").Input("a", InputDep::kShape);
  EXPECT_THAT(no_rule.Build().status().message(), HasSubstr("op 'y' has no shape rule"));
}

}  // namespace
}  // namespace hetpass::testing

namespace hetpass::testing {
namespace {

// Tests that placement follows the fusion pattern unless overridden, and roles are reported.
TEST(RegistryTest, PlacementAndRoles) {
  const OpRegistry& r = OpRegistry::Global();
  EXPECT_EQ(r.Find("add")->placement(), Placement::kAnywhere);
  EXPECT_EQ(r.Find("take")->placement(), Placement::kAnywhere);
  EXPECT_EQ(r.Find("nn.dense")->placement(), Placement::kTarget);
  EXPECT_EQ(r.Find("sum")->placement(), Placement::kTarget);
  EXPECT_EQ(r.Find("shape_of")->placement(), Placement::kHost);
  EXPECT_EQ(r.Find("shape_of")->role(), OpRole::kShapeQuery);
  EXPECT_EQ(r.Find("device_copy")->role(), OpRole::kDeviceCopy);
  EXPECT_EQ(r.Find("nn.relu")->role(), OpRole::kCompute);
}

// Tests that device_copy keeps the type and rejects unknown or equal devices.
TEST(RegistryTest, DeviceCopyRule) {
  const OpDef* copy = OpRegistry::Global().Find("device_copy");
  auto attrs = [&](std::string src, std::string dst) {
    return *copy->CheckAttrs(Attrs{{"src", src}, {"dst", dst}});
  };
  const Type t = Type::Tensor(DType::kF32, {DimExpr::Symbol("n"), 4});
  auto ok = copy->InferTypes(attrs("sim", "cpu"), {ShapeInput{t}});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ((*ok)[0], t);
  auto same = copy->InferTypes(attrs("sim", "sim"), {ShapeInput{t}});
  EXPECT_THAT(same.status().message(), HasSubstr("src and dst are the same device"));
  auto bad = copy->InferTypes(attrs("gpu", "cpu"), {ShapeInput{t}});
  EXPECT_THAT(bad.status().message(), HasSubstr("src device 'gpu' is not one of cpu, cuda, sim"));
}

}  // namespace

TEST(RegistryTest, RolesOtherThanComputeNameExactlyOneOp) {
  const OpRegistry& r = OpRegistry::Global();
  EXPECT_EQ(r.FindByRole(OpRole::kCompute), nullptr);
  for (OpRole role : {OpRole::kShapeQuery, OpRole::kDeviceCopy, OpRole::kAllocStorage,
                      OpRole::kAllocTensor, OpRole::kAllocTensorDyn}) {
    const OpDef* op = r.FindByRole(role);
    ASSERT_NE(op, nullptr) << OpRoleName(role);
    EXPECT_EQ(op->role(), role);
  }
}

TEST(RegistryTest, ViewOpsKeepTheirInputsBytes) {
  // A view's result has its first input's element count and dtype: check on a static call.
  int views = 0;
  for (const auto& def : OpRegistry::Global().ops()) {
    if (!def->is_view()) continue;
    ++views;
    EXPECT_EQ(def->pattern() == FusionPattern::kInjective || def->pattern() == FusionPattern::kBroadcast, true)
        << def->name();
    EXPECT_EQ(def->num_outputs(), 1) << def->name();
  }
  EXPECT_GE(views, 6);
}


TEST(RegistryTest, OpIdsNameExactlyTheRegisteredOps) {
  const OpRegistry& r = OpRegistry::Global();
  std::set<std::string> listed;
  for (OpId id : AllOpIds()) {
    const std::string name(OpIdName(id));
    EXPECT_TRUE(listed.insert(name).second) << name << " listed twice";
    const OpDef* op = r.Find(name);
    ASSERT_NE(op, nullptr) << name << " is in ops.def / elementwise_ops.def but not registered";
    EXPECT_EQ(OpIdOf(*op), id) << name;
  }
  for (const auto& op : r.ops()) {
    EXPECT_TRUE(listed.count(op->name())) << op->name() << " is registered but has no OpId";
  }
  EXPECT_EQ(listed.size(), r.ops().size());
}

TEST(RegistryTest, ElementwiseRowsMatchTheirOps) {
  int rows = 0;
  for (OpId id : AllOpIds()) {
    const ElementwiseInfo* info = ElementwiseInfoOf(id);
    if (info == nullptr) continue;
    ++rows;
    EXPECT_EQ(info->id, id);
    const OpDef& op = *OpRegistry::Global().Find(OpIdName(id));
    EXPECT_EQ(op.min_inputs(), info->arity()) << op.name();
    EXPECT_EQ(op.pattern(), info->kind == ElementwiseKind::kUnary ? FusionPattern::kElementwise
                                                                  : FusionPattern::kBroadcast)
        << op.name();
  }
  EXPECT_EQ(rows, 37);
  EXPECT_EQ(ElementwiseInfoOf(OpId::kNnDense), nullptr);
  EXPECT_EQ(ElementwiseInfoOf(OpId::kUnknown), nullptr);
}


TEST(RegistryTest, BuildRejectsARoleOnTwoOps) {
  OpRegistry::Builder b;
  b.Register("copy_a").Role(OpRole::kDeviceCopy).TypedByDeclaration().Doc("a");
  b.Register("copy_b").Role(OpRole::kDeviceCopy).TypedByDeclaration().Doc("b");
  auto reg = b.Build();
  ASSERT_FALSE(reg.ok());
  EXPECT_THAT(reg.status().message(), HasSubstr("role device-copy belongs to more than one op"));
}

}  // namespace hetpass::testing
