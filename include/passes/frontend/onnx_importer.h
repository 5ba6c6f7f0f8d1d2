// ONNX frontend: imports an ONNX ModelProto (opsets 11-17) into a hetpass Module with one
// function, and reads ONNX TensorProtos (backend test data) as host Tensors.
//
// The protobuf classes never appear in this header: callers pass serialized bytes, so only
// src/frontend compiles against ONNX (ONNX_ML=1) and links protobuf.
#ifndef HETPASS_FRONTEND_ONNX_IMPORTER_H_
#define HETPASS_FRONTEND_ONNX_IMPORTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "passes/ir/ir.h"
#include "passes/ir/tensor.h"

namespace hetpass {

class OpRegistry;

struct OnnxImportOptions {
  // Name of the imported function.
  std::string function_name = "main";
  // Run infer-types on the result, so the module comes back typed (errors name the ONNX node).
  bool infer_types = true;
  // Registry to build against; nullptr = OpRegistry::Global().
  const OpRegistry* registry = nullptr;
};

// Imports an ONNX ModelProto (bytes) into a Module with one function (@main by default).
// Graph inputs that are not initializers become parameters, initializers and Constant nodes
// become bound constants, named dynamic dims (dim_param) become symbols shared across inputs,
// unnamed ones fresh symbols; each node keeps its ONNX name in Location::name. Unsupported ops
// give one Unimplemented error listing all of them (op type, node name, opset).
absl::StatusOr<std::unique_ptr<Module>> ImportOnnx(absl::string_view model_bytes,
                                                   const OnnxImportOptions& options = {},
                                                   absl::string_view source_name = "model.onnx");
absl::StatusOr<std::unique_ptr<Module>> ImportOnnxFile(const std::string& path,
                                                       const OnnxImportOptions& options = {});

// A serialized TensorProto (e.g. test_data_set_0/input_0.pb) as a host Tensor.
absl::StatusOr<Tensor> ParseOnnxTensor(absl::string_view bytes);
absl::StatusOr<Tensor> ReadOnnxTensorFile(const std::string& path);

// A test-data value that is not a plain tensor: a SequenceProto (of tensors, or of sequences)
// or an OptionalProto, read as what `kind` says the file holds (the model's type decides:
// the bytes alone do not).
struct OnnxValue {
  enum class Kind : uint8_t { kTensor, kSequence, kOptional };
  Kind kind = Kind::kTensor;
  Tensor tensor;
  std::vector<OnnxValue> elements;  // a sequence's elements, an optional's value (0 or 1)
};
absl::StatusOr<OnnxValue> ParseOnnxValue(absl::string_view bytes, OnnxValue::Kind kind);
absl::StatusOr<OnnxValue> ReadOnnxValueFile(const std::string& path, OnnxValue::Kind kind);

}  // namespace hetpass

#endif  // HETPASS_FRONTEND_ONNX_IMPORTER_H_
