// One-node ONNX models built in code, for the importer's converter tests
// (src/frontend/*_test.cc): inputs with static or named dynamic dims, f32 / i64 initializers,
// one node with its attributes, and its outputs. Import() gives the printed module or
// "error <code>: <message>", so a test reads as one expectation on text.
#ifndef HETPASS_TEST_SUPPORT_ONNX_ONE_NODE_MODEL_H_
#define HETPASS_TEST_SUPPORT_ONNX_ONE_NODE_MODEL_H_

#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
// The frontend's ONNX definitions (ONNX_ML, ONNX_NAMESPACE) are private to src/frontend; test
// sources that read ONNX protos set the same ones.
#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#include "onnx/onnx_pb.h"
#include "passes/frontend/onnx_importer.h"
#include "passes/ir/printer.h"

namespace hetpass::testing {

class OneNodeModel {
 public:
  OneNodeModel(int64_t opset, const std::string& op_type, std::vector<std::string> inputs,
               std::vector<std::string> outputs = {"y"}) {
    model_.set_ir_version(8);
    auto* id = model_.add_opset_import();
    id->set_domain("");
    id->set_version(opset);
    auto* g = model_.mutable_graph();
    g->set_name("g");
    node_ = g->add_node();
    node_->set_op_type(op_type);
    node_->set_name("node_7");
    for (const std::string& s : inputs) node_->add_input(s);
    for (const std::string& s : outputs) {
      node_->add_output(s);
      g->add_output()->set_name(s);
    }
  }
  // dims: a number per static dim, a name for a symbolic one; none for a scalar.
  OneNodeModel& Input(const std::string& name, std::vector<std::string> dims,
                      int elem = onnx::TensorProto::FLOAT) {
    auto* vi = model_.mutable_graph()->add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    tt->mutable_shape();  // no dims: a scalar (a missing shape would be an unknown rank)
    for (const std::string& d : dims) {
      auto* dim = tt->mutable_shape()->add_dim();
      if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0]))) {
        dim->set_dim_value(std::stoll(d));
      } else {
        dim->set_dim_param(d);
      }
    }
    return *this;
  }
  // An f32 initializer filled with 0, 1, 2, 0, 1, 2, ...
  OneNodeModel& Init(const std::string& name, std::vector<int64_t> shape) {
    auto* t = AddInit(name, onnx::TensorProto::FLOAT, shape);
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    for (int64_t i = 0; i < n; ++i) t->add_float_data(static_cast<float>(i % 3));
    return *this;
  }
  OneNodeModel& Floats(const std::string& name, std::vector<int64_t> shape,
                       std::vector<float> values) {
    auto* t = AddInit(name, onnx::TensorProto::FLOAT, shape);
    for (float v : values) t->add_float_data(v);
    return *this;
  }
  OneNodeModel& Int64s(const std::string& name, std::vector<int64_t> values) {
    auto* t = AddInit(name, onnx::TensorProto::INT64, {static_cast<int64_t>(values.size())});
    for (int64_t v : values) t->add_int64_data(v);
    return *this;
  }
  // A scalar i64 initializer.
  OneNodeModel& Int64(const std::string& name, int64_t value) {
    AddInit(name, onnx::TensorProto::INT64, {})->add_int64_data(value);
    return *this;
  }
  OneNodeModel& Ints(const std::string& name, std::vector<int64_t> v) {
    auto* a = AddAttr(name, onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
    return *this;
  }
  OneNodeModel& Int(const std::string& name, int64_t v) {
    AddAttr(name, onnx::AttributeProto::INT)->set_i(v);
    return *this;
  }
  OneNodeModel& Str(const std::string& name, const std::string& v) {
    AddAttr(name, onnx::AttributeProto::STRING)->set_s(v);
    return *this;
  }
  OneNodeModel& Float(const std::string& name, float v) {
    AddAttr(name, onnx::AttributeProto::FLOAT)->set_f(v);
    return *this;
  }
  OneNodeModel& FloatList(const std::string& name, std::vector<float> v) {
    auto* a = AddAttr(name, onnx::AttributeProto::FLOATS);
    for (float x : v) a->add_floats(x);
    return *this;
  }
  OneNodeModel& Strs(const std::string& name, std::vector<std::string> v) {
    auto* a = AddAttr(name, onnx::AttributeProto::STRINGS);
    for (const std::string& x : v) a->add_strings(x);
    return *this;
  }
  // The serialized model, for tests that compile and run it.
  std::string Bytes() const { return model_.SerializeAsString(); }
  // The imported module printed, or "error <code>: <message>".
  std::string Import() const {
    auto m = ImportOnnx(model_.SerializeAsString());
    if (!m.ok()) {
      return "error " + std::string(absl::StatusCodeToString(m.status().code())) + ": " +
             std::string(m.status().message());
    }
    return PrintModule(**m);
  }

 private:
  onnx::TensorProto* AddInit(const std::string& name, int type, std::vector<int64_t> shape) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : shape) t->add_dims(d);
    return t;
  }
  onnx::AttributeProto* AddAttr(const std::string& name, onnx::AttributeProto::AttributeType type) {
    auto* a = node_->add_attribute();
    a->set_name(name);
    a->set_type(type);
    return a;
  }

  onnx::ModelProto model_;
  onnx::NodeProto* node_;
};

}  // namespace hetpass::testing

#endif  // HETPASS_TEST_SUPPORT_ONNX_ONE_NODE_MODEL_H_
