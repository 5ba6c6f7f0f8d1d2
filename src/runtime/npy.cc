// .npy reading and writing (see npy.h). The header is a Python dict literal; we parse only the
// three keys the format defines, with bounds checks, rather than evaluating it.
#include "passes/runtime/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "passes/support/status_macros.h"

namespace hetpass::runtime {
namespace {

struct Descr {
  const char* text;
  DType dtype;
};
constexpr Descr kDescrs[] = {{"<f4", DType::kF32}, {"<f8", DType::kF64}, {"<f2", DType::kF16},
                             {"<i8", DType::kI64}, {"<i4", DType::kI32}, {"|i1", DType::kI8},
                             {"|u1", DType::kU8},  {"|b1", DType::kBool}, {"<i2", DType::kI16},
                             {"<u2", DType::kU16}, {"<u4", DType::kU32},  {"<u8", DType::kU64}};

absl::StatusOr<std::string> HeaderValue(absl::string_view header, absl::string_view key,
                                        absl::string_view name) {
  const std::string quoted = absl::StrCat("'", key, "'");
  const size_t k = header.find(quoted);
  if (k == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": npy header has no ", quoted));
  }
  size_t p = header.find(':', k);
  if (p == absl::string_view::npos) return absl::InvalidArgumentError(absl::StrCat(name, ": bad npy header"));
  ++p;
  while (p < header.size() && header[p] == ' ') ++p;
  size_t end = p;
  if (p < header.size() && header[p] == '(') {
    end = header.find(')', p);
    if (end == absl::string_view::npos) return absl::InvalidArgumentError(absl::StrCat(name, ": bad npy shape"));
    ++end;
  } else if (p < header.size() && header[p] == '\'') {
    end = header.find('\'', p + 1);
    if (end == absl::string_view::npos) return absl::InvalidArgumentError(absl::StrCat(name, ": bad npy descr"));
    ++end;
  } else {
    end = header.find_first_of(",}", p);
    if (end == absl::string_view::npos) end = header.size();
  }
  return std::string(header.substr(p, end - p));
}

}  // namespace

absl::StatusOr<Tensor> ParseNpy(absl::string_view bytes, absl::string_view name) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != "\x93NUMPY") {
    return absl::InvalidArgumentError(absl::StrCat(name, ": not a .npy file (bad magic)"));
  }
  const uint8_t major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return absl::InvalidArgumentError(absl::StrCat(name, ": truncated npy header"));
    uint32_t len;
    std::memcpy(&len, bytes.data() + 8, 4);
    header_len = len;
    offset = 12;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(name, ": npy format version ", major, " is not supported"));
  }
  if (bytes.size() < offset + header_len) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": truncated npy header"));
  }
  const absl::string_view header = bytes.substr(offset, header_len);
  ASSIGN_OR_RETURN(std::string descr, HeaderValue(header, "descr", name));
  ASSIGN_OR_RETURN(std::string fortran, HeaderValue(header, "fortran_order", name));
  ASSIGN_OR_RETURN(std::string shape_text, HeaderValue(header, "shape", name));
  if (absl::StripAsciiWhitespace(fortran) != "False") {
    return absl::InvalidArgumentError(absl::StrCat(name, ": Fortran-order arrays are not supported"));
  }
  descr = std::string(absl::StripSuffix(absl::StripPrefix(descr, "'"), "'"));
  const Descr* d = nullptr;
  for (const Descr& c : kDescrs) {
    if (descr == c.text) d = &c;
  }
  if (d == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": npy dtype '", descr,
                                                   "' is not supported (little-endian f2/f4/f8, i1/i2/i4/i8, u1/u2/u4/u8, b1)"));
  }
  std::vector<int64_t> shape;
  absl::string_view inner = absl::StripSuffix(absl::StripPrefix(shape_text, "("), ")");
  for (absl::string_view part : absl::StrSplit(inner, ',', absl::SkipWhitespace())) {
    int64_t v;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &v) || v < 0) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": bad npy shape ", shape_text));
    }
    shape.push_back(v);
  }
  auto t = Tensor::FromBytes(d->dtype, shape, bytes.substr(offset + header_len));
  if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat(name, ": ", t.status().message()));
  return t;
}

absl::StatusOr<Tensor> ReadNpy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::stringstream ss;
  ss << f.rdbuf();
  return ParseNpy(ss.str(), path);
}

std::string SerializeNpy(const Tensor& t) {
  const char* descr = "<f4";
  for (const Descr& c : kDescrs) {
    if (c.dtype == t.dtype()) descr = c.text;
  }
  // Python tuple syntax: "()", "(5,)", "(2, 3)".
  std::string shape;
  for (size_t i = 0; i < t.shape().size(); ++i) absl::StrAppend(&shape, i ? ", " : "", t.shape()[i]);
  if (t.rank() == 1) shape += ",";
  std::string header = absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (",
                                    shape, "), }");
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(1);
  out.push_back(0);
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  out.append(reinterpret_cast<const char*>(t.data()), t.nbytes());
  return out;
}

absl::Status WriteNpy(const std::string& path, const Tensor& t) {
  std::ofstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrCat("cannot open ", path, " for writing"));
  const std::string bytes = SerializeNpy(t);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return f ? absl::OkStatus() : absl::DataLossError(absl::StrCat("cannot write ", path));
}

}  // namespace hetpass::runtime
