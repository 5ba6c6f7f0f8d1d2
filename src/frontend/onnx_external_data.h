// ONNX external tensor data (TensorProto.data_location = EXTERNAL): the weights of real models
// live beside model.onnx in files of their own (any model over protobuf's 2 GB must), named by
// each tensor's external_data entries `location`, `offset` and `length`.
//
// Each location is confined to the model's folder: it must be a relative path whose canonical
// form (symbolic links resolved) lies inside the canonical folder, so neither `../secret`, an
// absolute path nor a link that points out of the folder reads a file the model does not own.
// A missing file, a location that is a folder, an offset past the end, a length that runs past
// it, a length other than the tensor's dtype and dims call for, and a malformed entry are each
// an InvalidArgument naming the tensor and the location.
//
// The bytes are read through a read-only memory mapping of just their range, copied once into
// the tensor's own buffer, and the mapping is dropped: the process holds each weight once, as
// for weights inside the file (onnx_mapped_model.h).
#ifndef HETPASS_FRONTEND_ONNX_EXTERNAL_DATA_H_
#define HETPASS_FRONTEND_ONNX_EXTERNAL_DATA_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

// Declared, not included: the ONNX headers need the frontend's definitions (ONNX_ML), which
// only src/frontend's sources have.
namespace onnx {
class TensorProto;
}  // namespace onnx

namespace hetpass::onnx_frontend {

// While one is alive on a thread, TensorFromProto on that thread reads external data from
// `folder` (the folder of the model file being imported). Without one, a tensor with external
// data is an error that says to import the model from its file.
class ExternalDataScope {
 public:
  explicit ExternalDataScope(std::string folder);
  ~ExternalDataScope();
  ExternalDataScope(const ExternalDataScope&) = delete;
  ExternalDataScope& operator=(const ExternalDataScope&) = delete;
  // The folder of the innermost scope on this thread, or null.
  static const std::string* Current();

 private:
  std::string folder_;
  const std::string* previous_;
};

// The `expected` bytes of tensor `t`'s external data (the caller checked that `t` has
// data_location EXTERNAL and computed `expected` from its dtype and dims).
absl::StatusOr<std::string> ReadExternalData(const onnx::TensorProto& t, int64_t expected);

}  // namespace hetpass::onnx_frontend

#endif  // HETPASS_FRONTEND_ONNX_EXTERNAL_DATA_H_
