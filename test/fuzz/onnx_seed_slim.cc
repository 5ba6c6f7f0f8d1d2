// onnx_seed_slim IN.onnx OUT.onnx: a copy of a model whose large initializers are made by
// ConstantOfShape nodes (same name, dtype and shape, value 0) instead of stored, for the seed
// corpus of onnx_import_fuzzer (test/fuzz/make_corpus.sh).
//
// The models of shared/models carry up to 2.7 MB of weights: libFuzzer truncates inputs above
// -max_len, and every mutation of a large seed re-parses all of it. Slimmed, they keep their
// graph (the part worth fuzzing) in a few KB and still import: the importer folds or keeps
// ConstantOfShape of a constant shape like any other constant-shaped op.
//
// Exit status: 0 written, 1 unreadable or unparsable input, 2 usage.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_set>

#include "onnx/onnx_pb.h"

namespace {

// Initializers with at most this many elements stay as they are (shapes, axes, small biases:
// values that decide shapes must stay real).
constexpr int64_t kKeepElements = 64;

int ElementSize(int32_t data_type) {
  switch (data_type) {
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::INT64: return 8;
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32: return 4;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: return 2;
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL: return 1;
    default: return 0;
  }
}

void Slim(onnx::GraphProto& g) {
  onnx::GraphProto slim = g;
  slim.clear_initializer();
  slim.clear_node();
  slim.clear_input();
  std::unordered_set<std::string> made;
  for (const onnx::TensorProto& init : g.initializer()) {
    int64_t n = 1;
    for (int64_t d : init.dims()) n = d > 0 && n < (int64_t{1} << 40) ? n * d : 0;
    const int size = ElementSize(init.data_type());
    if (n <= kKeepElements || size == 0 || init.data_location() == onnx::TensorProto::EXTERNAL) {
      *slim.add_initializer() = init;
      continue;
    }
    onnx::TensorProto* shape = slim.add_initializer();
    shape->set_name(init.name() + "__slim_shape");
    shape->set_data_type(onnx::TensorProto::INT64);
    shape->add_dims(init.dims_size());
    for (int64_t d : init.dims()) shape->add_int64_data(d);
    onnx::NodeProto* node = slim.add_node();
    node->set_op_type("ConstantOfShape");
    node->set_name(init.name() + "__slim");
    node->add_input(shape->name());
    node->add_output(init.name());
    onnx::AttributeProto* value = node->add_attribute();
    value->set_name("value");
    value->set_type(onnx::AttributeProto::TENSOR);
    value->mutable_t()->set_data_type(init.data_type());
    value->mutable_t()->add_dims(1);
    value->mutable_t()->set_raw_data(std::string(size, '\0'));
    made.insert(init.name());
  }
  for (const onnx::ValueInfoProto& in : g.input()) {
    if (!made.contains(in.name())) *slim.add_input() = in;  // IR < 4 lists initializers here
  }
  for (const onnx::NodeProto& node : g.node()) *slim.add_node() = node;
  g = std::move(slim);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: onnx_seed_slim IN.onnx OUT.onnx\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  onnx::ModelProto model;
  if (!in || !model.ParseFromString(bytes.str())) {
    std::fprintf(stderr, "onnx_seed_slim: %s is not an ONNX model\n", argv[1]);
    return 1;
  }
  Slim(*model.mutable_graph());
  std::ofstream out(argv[2], std::ios::binary);
  if (!model.SerializeToOstream(&out)) {
    std::fprintf(stderr, "onnx_seed_slim: cannot write %s\n", argv[2]);
    return 1;
  }
  return 0;
}
