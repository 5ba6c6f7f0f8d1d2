// Tests of the ONNX importer on sequence and optional values: graph inputs of sequence and
// optional type, the Sequence* and Optional* converters becoming VM builtins, a Loop that
// appends to a sequence started by SequenceEmpty, and the test-data readers of SequenceProto
// and OptionalProto files.
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/frontend/onnx_importer.h"
#include "support/onnx_one_node_model.h"  // the frontend's ONNX definitions, onnx_pb.h
#include "onnx/onnx-data.pb.h"
#include "passes/ir/printer.h"
#include "passes/pass/pass_registry.h"
#include "passes/vm/executable.h"
#include "passes/vm/vm.h"

namespace hetpass {
namespace {

using ::testing::HasSubstr;

void TensorType(onnx::TypeProto* t, int elem, std::vector<int64_t> dims) {
  auto* tt = t->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    if (d >= 0) {
      shape->add_dim()->set_dim_value(d);
    } else {
      shape->add_dim();
    }
  }
}

onnx::NodeProto* AddNode(onnx::GraphProto* g, const std::string& op, std::vector<std::string> ins,
                         std::vector<std::string> outs) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(op + "_0");
  for (auto& s : ins) n->add_input(s);
  for (auto& s : outs) n->add_output(s);
  return n;
}

onnx::ModelProto NewModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* id = m.add_opset_import();
  id->set_domain("");
  id->set_version(16);
  m.mutable_graph()->set_name("g");
  return m;
}

// Tests that sequence and optional inputs become typed parameters and the sequence ops
// builtins: SequenceInsert / At / Length / Erase, OptionalHasElement / GetElement.
TEST(OnnxContainers, SequenceAndOptionalOpsBecomeBuiltins) {
  onnx::ModelProto m = NewModel();
  auto* g = m.mutable_graph();
  auto* s = g->add_input();
  s->set_name("s");
  TensorType(s->mutable_type()->mutable_sequence_type()->mutable_elem_type(),
             onnx::TensorProto::FLOAT, {-1, 3});
  auto* t = g->add_input();
  t->set_name("t");
  TensorType(t->mutable_type(), onnx::TensorProto::FLOAT, {2, 3});
  auto* o = g->add_input();
  o->set_name("o");
  TensorType(o->mutable_type()->mutable_optional_type()->mutable_elem_type(),
             onnx::TensorProto::INT64, {4});
  AddNode(g, "SequenceInsert", {"s", "t"}, {"s2"});
  AddNode(g, "SequenceLength", {"s2"}, {"n"});
  AddNode(g, "SequenceAt", {"s2", "n"}, {"x"});
  AddNode(g, "SequenceErase", {"s2"}, {"s3"});
  AddNode(g, "OptionalHasElement", {"o"}, {"h"});
  AddNode(g, "OptionalGetElement", {"o"}, {"v"});
  for (const char* out : {"s3", "x", "h", "v"}) g->add_output()->set_name(out);
  auto module = ImportOnnx(m.SerializeAsString());
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string text = PrintModule(**module);
  EXPECT_THAT(text, HasSubstr("def @main(%s: seq<f32[?, 3]>, %t: f32[2, 3], %o: opt<i64[4]>)"));
  EXPECT_THAT(text, HasSubstr("%s2 = seq.insert(%s, %t) : seq<f32[?, 3]>"));
  EXPECT_THAT(text, HasSubstr("%n = seq.length(%s2) : i64[]"));
  EXPECT_THAT(text, HasSubstr("%x = seq.at(%s2, %n) : f32[?, 3]"));
  EXPECT_THAT(text, HasSubstr("%s3 = seq.erase(%s2) : seq<f32[?, 3]>"));
  EXPECT_THAT(text, HasSubstr("%h = opt.has(%o) : bool[]"));
  EXPECT_THAT(text, HasSubstr("%v = opt.get(%o) : i64[4]"));
}

// Tests that a Loop appending to a SequenceEmpty types its result once the body inserts.
TEST(OnnxContainers, LoopAppendsToAnEmptySequence) {
  onnx::ModelProto m = NewModel();
  auto* g = m.mutable_graph();
  auto* trips = g->add_input();
  trips->set_name("trips");
  TensorType(trips->mutable_type(), onnx::TensorProto::INT64, {});
  auto* x = g->add_input();
  x->set_name("x");
  TensorType(x->mutable_type(), onnx::TensorProto::FLOAT, {2});
  AddNode(g, "SequenceEmpty", {}, {"e"});
  auto* loop = AddNode(g, "Loop", {"trips", "", "e"}, {"r"});
  auto* a = loop->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  auto* body = a->mutable_g();
  for (const char* in : {"i", "c", "acc"}) body->add_input()->set_name(in);
  TensorType(body->mutable_input(0)->mutable_type(), onnx::TensorProto::INT64, {});
  TensorType(body->mutable_input(1)->mutable_type(), onnx::TensorProto::BOOL, {});
  AddNode(body, "Identity", {"c"}, {"c2"});
  AddNode(body, "SequenceInsert", {"acc", "x"}, {"acc2"});
  body->add_output()->set_name("c2");
  body->add_output()->set_name("acc2");
  g->add_output()->set_name("r");
  auto module = ImportOnnx(m.SerializeAsString());
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string text = PrintModule(**module);
  EXPECT_THAT(text, HasSubstr("%e = seq.empty() : seq<?>"));
  EXPECT_THAT(text, HasSubstr("} : seq<f32[2]>"));
}

// Tests the readers of SequenceProto and OptionalProto test data, and that the kind decides.
TEST(OnnxContainers, ReadsSequenceAndOptionalProtos) {
  onnx::SequenceProto seq;
  seq.set_elem_type(onnx::SequenceProto::TENSOR);
  for (float v : {1.f, 2.f}) {
    auto* t = seq.add_tensor_values();
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(1);
    t->add_float_data(v);
  }
  auto v = ParseOnnxValue(seq.SerializeAsString(), OnnxValue::Kind::kSequence);
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->elements.size(), 2u);
  EXPECT_EQ(v->elements[1].tensor.GetDouble(0), 2.0);
  onnx::OptionalProto none;
  none.set_elem_type(onnx::OptionalProto::TENSOR);
  auto o = ParseOnnxValue(none.SerializeAsString(), OnnxValue::Kind::kOptional);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->kind, OnnxValue::Kind::kOptional);
  EXPECT_TRUE(o->elements.empty());
  EXPECT_FALSE(ParseOnnxValue("\xff\xff\xff", OnnxValue::Kind::kSequence).ok());
}

vm::HostValue ToHost(const OnnxValue& v) {
  vm::HostValue h;
  h.kind = v.kind == OnnxValue::Kind::kTensor     ? vm::HostValue::Kind::kTensor
           : v.kind == OnnxValue::Kind::kSequence ? vm::HostValue::Kind::kSequence
                                                  : vm::HostValue::Kind::kOptional;
  h.tensor = v.tensor;
  for (const OnnxValue& e : v.elements) h.elements.push_back(ToHost(e));
  return h;
}

// Every tensor of a value, depth first, as "shape: values" lines.
void Flatten(const vm::HostValue& v, std::string* out) {
  if (v.kind == vm::HostValue::Kind::kTensor) {
    absl::StrAppend(out, v.tensor.type().ToString(), ":");
    for (int64_t i = 0; i < v.tensor.num_elements(); ++i) absl::StrAppend(out, " ", v.tensor.GetDouble(i));
    out->push_back('\n');
    return;
  }
  absl::StrAppend(out, v.kind == vm::HostValue::Kind::kSequence ? "seq " : "opt ", v.elements.size(), "\n");
  for (const vm::HostValue& e : v.elements) Flatten(e, out);
}

// Tests ONNX's `simple` sequence models (SequenceEmpty/Insert/At/Erase, ConcatFromSequence with
// and without new_axis, SplitToSequence without a split, with keepdims=0 and with a split
// input) on cpu and sim against their stored outputs.
TEST(OnnxContainers, SimpleSequenceModelsMatchTheirOutputs) {
  const std::string root = "/usr/share/libonnx-testdata/data/simple";
  if (!std::filesystem::exists(root)) GTEST_SKIP() << root << " is not installed";
  for (int i = 1; i <= 8; ++i) {
    for (DeviceKind target : {DeviceKind::kCpu, DeviceKind::kSim}) {
      const std::string dir = absl::StrCat(root, "/test_sequence_model", i);
      SCOPED_TRACE(absl::StrCat(dir, " on ", DeviceName(target)));
      auto m = ImportOnnxFile(dir + "/model.onnx");
      ASSERT_TRUE(m.ok()) << m.status();
      auto pm = ParsePipeline(vm::DefaultPipeline(target), {});
      ASSERT_TRUE(pm.ok()) << pm.status();
      auto run = (*pm)->Run(**m);
      ASSERT_TRUE(run.ok()) << run.status();
      auto exe = vm::CompileModule(**m);
      ASSERT_TRUE(exe.ok()) << exe.status();
      const vm::VmFunction fn = exe->functions[exe->FindFunction("main")];
      auto machine = vm::VirtualMachine::Load(*std::move(exe));
      ASSERT_TRUE(machine.ok()) << machine.status();
      std::vector<vm::HostValue> inputs;
      for (size_t k = 0; k < fn.params.size(); ++k) {
        const OnnxValue::Kind kind = fn.params[k].container == vm::ArgSpec::kTensor
                                         ? OnnxValue::Kind::kTensor
                                         : OnnxValue::Kind::kSequence;
        auto v = ReadOnnxValueFile(absl::StrCat(dir, "/test_data_set_0/input_", k, ".pb"), kind);
        ASSERT_TRUE(v.ok()) << v.status();
        inputs.push_back(ToHost(*v));
      }
      auto out = (*machine)->RunWithHostValues("main", inputs);
      ASSERT_TRUE(out.ok()) << out.status();
      for (size_t j = 0; j < out->size(); ++j) {
        const vm::HostValue& got = (*out)[j];
        const OnnxValue::Kind kind = got.kind == vm::HostValue::Kind::kSequence
                                         ? OnnxValue::Kind::kSequence
                                         : OnnxValue::Kind::kTensor;
        auto want = ReadOnnxValueFile(absl::StrCat(dir, "/test_data_set_0/output_", j, ".pb"), kind);
        ASSERT_TRUE(want.ok()) << want.status();
        std::string got_text, want_text;
        Flatten(got, &got_text);
        Flatten(ToHost(*want), &want_text);
        EXPECT_EQ(got_text, want_text) << "output " << j;
      }
    }
  }
}

}  // namespace
}  // namespace hetpass
