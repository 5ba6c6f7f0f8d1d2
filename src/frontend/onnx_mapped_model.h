// A model file imported without a second copy of its weights (issue 33: peak memory at most
// 1.5x the file, ready-to-run at most ONNX Runtime's session time).
//
// Parsing a ModelProto copies every TensorProto.raw_data into a string of its own, so a file
// read into memory and parsed is held twice at the peak, and every weight byte is written twice
// into fresh pages (on the development VM a fresh page costs far more than the copy itself).
// Instead the file is mapped read-only, and a *skeleton* of it is parsed: the same wire format
// with each large raw_data replaced by a 16-byte marker naming its place in the file. The
// importer's one TensorFromProto resolves a marker (PayloadScope) by copying the weight out of
// the mapping into the tensor's own buffer and dropping those file pages from the process
// (madvise), so the weights are resident once.
//
// Only the wire format is read here (tags and lengths), never the payload bytes: a skeleton is
// a few hundred kilobytes for a 100 MB model. Bytes that are not well-formed wire format give
// an error, and the caller parses the file the ordinary way, which reports it as it always did.
#ifndef HETPASS_FRONTEND_ONNX_MAPPED_MODEL_H_
#define HETPASS_FRONTEND_ONNX_MAPPED_MODEL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "passes/frontend/onnx_importer.h"
#include "passes/ir/ir.h"

namespace hetpass::onnx_frontend {

class MappedModel {
 public:
  // A raw_data of at least this many bytes becomes a marker; smaller ones stay in the
  // skeleton (a marker and its page bookkeeping would cost more than the copy).
  static constexpr size_t kMinPayload = 64 * 1024;
  static constexpr size_t kMarkerSize = 16;

  // Maps the regular file at `path`; an error when it cannot be (the caller reads it instead).
  static absl::StatusOr<std::unique_ptr<MappedModel>> Open(const std::string& path);
  ~MappedModel();
  MappedModel(const MappedModel&) = delete;
  MappedModel& operator=(const MappedModel&) = delete;

  absl::string_view bytes() const { return {data_, size_}; }

  // The file as a ModelProto with every raw_data of at least `min_payload` bytes (in the
  // model's graph, its nodes' tensor and graph attributes at any depth, and its functions)
  // replaced by a marker. An error when the bytes are not well-formed wire format.
  absl::StatusOr<std::string> Skeleton(size_t min_payload = kMinPayload);
  int64_t payloads() const { return static_cast<int64_t>(payloads_.size()); }

  // The payload `raw` (a raw_data of the skeleton) stands for, or nullopt when it is not a
  // marker of this model. `expected` is the byte size the tensor's dtype and dims call for: a
  // genuine 16-byte raw_data that happens to look like a marker is taken as itself.
  std::optional<absl::string_view> Resolve(absl::string_view raw, int64_t expected) const;
  // The payload was copied out and will not be read again: its whole pages leave the process.
  void Release(absl::string_view payload) const;

 private:
  MappedModel(const char* data, size_t size) : data_(data), size_(size) {}
  struct Range {
    size_t offset;
    size_t size;
  };
  const char* data_;
  size_t size_;
  char key_[8] = {};  // the markers' first 8 bytes (Skeleton draws them)
  std::vector<Range> payloads_;
};

// ImportOnnxFile's own path with its threshold as a parameter: the file mapped, its raw_data of
// `min_payload` bytes or more (17 at least) read through markers. ImportOnnxFile passes
// MappedModel::kMinPayload; the differential fuzzer (test/fuzz/onnx_mapped_fuzzer.cc) passes
// the least, so that small inputs have markers, and compares the result with ImportOnnx's.
absl::StatusOr<std::unique_ptr<Module>> ImportOnnxFileWith(const std::string& path,
                                                           const OnnxImportOptions& options,
                                                           size_t min_payload);

// While one is alive on a thread, TensorFromProto on that thread resolves the markers of
// `model` (the importer parses the skeleton and converts within one scope).
class PayloadScope {
 public:
  explicit PayloadScope(const MappedModel* model);
  ~PayloadScope();
  PayloadScope(const PayloadScope&) = delete;
  PayloadScope& operator=(const PayloadScope&) = delete;
  // The model of the innermost scope on this thread, or null.
  static const MappedModel* Current();

 private:
  const MappedModel* previous_;
};

}  // namespace hetpass::onnx_frontend

#endif  // HETPASS_FRONTEND_ONNX_MAPPED_MODEL_H_
