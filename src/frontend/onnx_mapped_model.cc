// Skeleton rewrite of an ONNX file (see onnx_mapped_model.h). The wire format is walked
// message by message, knowing only the fields that lead to a TensorProto:
//   ModelProto.graph (7), ModelProto.functions (25)      FunctionProto.node (7)
//   GraphProto.node (1), GraphProto.initializer (5)      NodeProto.attribute (5)
//   AttributeProto.t (5), .g (6), .tensors (10), .graphs (11)
//   TensorProto.raw_data (9): replaced by a marker when large
// Every other field is copied verbatim. A rewritten sub-message is written with its new length,
// so each level is built in a string of its own and appended to its parent's.
#include "frontend/onnx_mapped_model.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "passes/support/pages.h"

namespace hetpass::onnx_frontend {
namespace {

// A marker: the model's key (8 random bytes drawn when its skeleton is made) then the payload
// index, little-endian. The key is not in the file, so no file can forge a marker: a genuine
// 16-byte raw_data that spelled a fixed magic and an index would have been read as another
// tensor's bytes.

enum class Kind { kModel, kGraph, kNode, kAttribute, kFunction, kTensor, kOther };

// The message a length-delimited field of `parent` holds, kOther for anything not on a path
// to a TensorProto (strings, bytes and messages without tensors alike).
Kind FieldKind(Kind parent, uint32_t field) {
  switch (parent) {
    case Kind::kModel:
      return field == 7 ? Kind::kGraph : field == 25 ? Kind::kFunction : Kind::kOther;
    case Kind::kGraph:
      return field == 1 ? Kind::kNode : field == 5 ? Kind::kTensor : Kind::kOther;
    case Kind::kNode:
      return field == 5 ? Kind::kAttribute : Kind::kOther;
    case Kind::kAttribute:
      return field == 5 || field == 10 ? Kind::kTensor
             : field == 6 || field == 11 ? Kind::kGraph
                                         : Kind::kOther;
    case Kind::kFunction:
      return field == 7 ? Kind::kNode : Kind::kOther;
    default:
      return Kind::kOther;
  }
}

bool ReadVarint(absl::string_view in, size_t& pos, uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= in.size()) return false;
    const uint8_t b = static_cast<uint8_t>(in[pos++]);
    value |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

void WriteVarint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

constexpr int kMaxDepth = 64;  // graphs nest in attributes; deeper is not a model

// The message in bytes [begin, end) of the file, rewritten and appended to `out`; `payloads`
// collects (offset, size) of each raw_data made a marker, in marker order.
absl::Status Rewrite(absl::string_view file, size_t begin, size_t end, Kind kind, int depth,
                     size_t min_payload, absl::string_view key,
                     std::vector<std::pair<size_t, size_t>>& payloads, std::string& out) {
  if (depth > kMaxDepth) return absl::InvalidArgumentError("messages nest too deeply");
  const absl::string_view in = file.substr(0, end);
  size_t pos = begin;
  while (pos < end) {
    const size_t field_start = pos;
    uint64_t tag = 0;
    if (!ReadVarint(in, pos, tag)) return absl::InvalidArgumentError("truncated tag");
    const uint32_t field = static_cast<uint32_t>(tag >> 3);
    switch (tag & 7) {
      case 0: {
        uint64_t v = 0;
        if (!ReadVarint(in, pos, v)) return absl::InvalidArgumentError("truncated varint");
        break;
      }
      case 1:
        if (end - pos < 8) return absl::InvalidArgumentError("truncated fixed64");
        pos += 8;
        break;
      case 5:
        if (end - pos < 4) return absl::InvalidArgumentError("truncated fixed32");
        pos += 4;
        break;
      case 2: {
        uint64_t len = 0;
        if (!ReadVarint(in, pos, len) || len > end - pos) {
          return absl::InvalidArgumentError("truncated length-delimited field");
        }
        const size_t body = pos;
        pos += len;
        if (kind == Kind::kTensor && field == 9 && len >= min_payload) {
          WriteVarint(out, tag);
          WriteVarint(out, MappedModel::kMarkerSize);
          const uint64_t index = payloads.size();
          payloads.emplace_back(body, len);
          out.append(key.data(), key.size());
          for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((index >> (8 * i)) & 0xff));
          continue;
        }
        const Kind sub = FieldKind(kind, field);
        if (sub == Kind::kOther) break;  // copied verbatim below
        std::string nested;
        if (absl::Status s = Rewrite(file, body, pos, sub, depth + 1, min_payload, key, payloads, nested);
            !s.ok()) {
          return s;
        }
        WriteVarint(out, tag);
        WriteVarint(out, nested.size());
        out += nested;
        continue;
      }
      default:  // groups (3, 4) are not in ONNX's schema
        return absl::InvalidArgumentError("unsupported wire type");
    }
    out.append(in.data() + field_start, pos - field_start);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<MappedModel>> MappedModel::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("cannot open '", path, "'"));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("'", path, "' is not a non-empty regular file"));
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);  // the mapping keeps the file
  if (data == MAP_FAILED) return absl::UnavailableError(absl::StrCat("cannot map '", path, "'"));
  // Read front to back once (the skeleton walk, then the copies in file order).
  ::madvise(data, size, MADV_SEQUENTIAL);
  return std::unique_ptr<MappedModel>(new MappedModel(static_cast<const char*>(data), size));
}

MappedModel::~MappedModel() { ::munmap(const_cast<char*>(data_), size_); }

absl::StatusOr<std::string> MappedModel::Skeleton(size_t min_payload) {
  std::vector<std::pair<size_t, size_t>> found;
  std::string out;
  if (::getrandom(key_, sizeof(key_), 0) != static_cast<ssize_t>(sizeof(key_))) {
    // No entropy source (a very old kernel): the clock and this object's address, still not
    // something a file can know in advance.
    const uint64_t mix = static_cast<uint64_t>(
                             std::chrono::steady_clock::now().time_since_epoch().count()) ^
                         (reinterpret_cast<uintptr_t>(this) * 0x9e3779b97f4a7c15ull);
    std::memcpy(key_, &mix, sizeof(key_));
  }
  absl::Status s = Rewrite(bytes(), 0, size_, Kind::kModel, 0, std::max<size_t>(min_payload, kMarkerSize + 1),
                           absl::string_view(key_, sizeof(key_)),
                           found, out);
  if (!s.ok()) return s;
  payloads_.clear();
  for (const auto& [offset, size] : found) payloads_.push_back(Range{offset, size});
  return out;
}

std::optional<absl::string_view> MappedModel::Resolve(absl::string_view raw, int64_t expected) const {
  if (raw.size() != kMarkerSize || std::memcmp(raw.data(), key_, sizeof(key_)) != 0) return std::nullopt;
  uint64_t index = 0;
  for (int i = 0; i < 8; ++i) index |= static_cast<uint64_t>(static_cast<uint8_t>(raw[8 + i])) << (8 * i);
  if (index >= payloads_.size()) return std::nullopt;
  const Range& r = payloads_[index];
  // A payload is never under kMarkerSize + 1 bytes: a tensor that wants 16 bytes is itself.
  if (expected == static_cast<int64_t>(kMarkerSize)) return std::nullopt;
  return absl::string_view(data_ + r.offset, r.size);
}

void MappedModel::Release(absl::string_view payload) const {
  // Clean private file pages: dropped from this process, read again from the file if touched.
  const auto [first, bytes] = InteriorPages(payload.data(), payload.size());
  if (bytes > 0) ::madvise(first, bytes, MADV_DONTNEED);
}

namespace {
thread_local const MappedModel* current_model = nullptr;
}  // namespace

PayloadScope::PayloadScope(const MappedModel* model) : previous_(current_model) { current_model = model; }
PayloadScope::~PayloadScope() { current_model = previous_; }
const MappedModel* PayloadScope::Current() { return current_model; }

}  // namespace hetpass::onnx_frontend
