// A small ONNX model with large weights, built in code: y = (x + w) * c + b, where w is an
// initializer of [rows, cols], c a Constant node's tensor of the same shape and b an
// initializer of [cols]. For the importer's tests of how weights are read (a mapped file's
// skeleton, external data files).
#ifndef HETPASS_TEST_SUPPORT_ONNX_WEIGHTS_MODEL_H_
#define HETPASS_TEST_SUPPORT_ONNX_WEIGHTS_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "support/onnx_one_node_model.h"  // the ONNX protos, with the frontend's definitions

namespace hetpass::testing {

// t = a float tensor `name` of `dims`, raw_data of distinct-enough values from `seed`.
inline void FillFloats(onnx::TensorProto& t, const std::string& name, std::vector<int64_t> dims, float seed) {
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) {
    t.add_dims(d);
    n *= d;
  }
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = seed + static_cast<float>(i % 1000) * 0.5f;
  t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
}

// Initializers w then b (in that order), then the Constant node c, then Add, Mul, Add.
inline onnx::ModelProto WeightsModel(int64_t rows, int64_t cols) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("weights");
  auto* in = g.add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {rows, cols}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  FillFloats(*g.add_initializer(), "w", {rows, cols}, 1.0f);
  FillFloats(*g.add_initializer(), "b", {cols}, 3.0f);
  auto* c = g.add_node();
  c->set_op_type("Constant");
  c->add_output("c");
  auto* attr = c->add_attribute();
  attr->set_name("value");
  attr->set_type(onnx::AttributeProto::TENSOR);
  FillFloats(*attr->mutable_t(), "c", {rows, cols}, 2.0f);
  auto add = [&](const char* op, const char* a, const char* b, const char* out) {
    auto* n = g.add_node();
    n->set_op_type(op);
    n->add_input(a);
    n->add_input(b);
    n->add_output(out);
  };
  add("Add", "x", "w", "s");
  add("Mul", "s", "c", "p");
  add("Add", "p", "b", "y");
  auto* out = g.add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return m;
}

}  // namespace hetpass::testing

#endif  // HETPASS_TEST_SUPPORT_ONNX_WEIGHTS_MODEL_H_
