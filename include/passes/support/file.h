// Reading a user's file: the path is checked to be a readable regular file first, so a
// directory, a device or a missing path is a clear error naming it. (An ifstream opened on a
// directory succeeds on Linux and reports a size of 2^63 - 1: reading it "whole" threw
// std::bad_alloc in the tools and MemoryError in Python.)
#ifndef HETPASS_SUPPORT_FILE_H_
#define HETPASS_SUPPORT_FILE_H_

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace hetpass {

struct ReadFileOptions {
  // What the file should hold, for the messages: "an ONNX model", "text IR".
  std::string what = "a file";
  // An empty file is an error ("'x.hir' is empty") unless allowed.
  bool allow_empty = false;
};

// The whole content of the regular file at `path` (symbolic links followed).
inline absl::StatusOr<std::string> ReadRegularFile(const std::string& path,
                                                   const ReadFileOptions& options = {}) {
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat("no path given for ", options.what));
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) {
    return absl::NotFoundError(absl::StrCat("'", path, "': no such file (expected ", options.what, ")"));
  }
  if (std::filesystem::is_directory(st)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' is a directory, not ", options.what));
  }
  if (!std::filesystem::is_regular_file(st)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' is not a regular file (expected ", options.what, ")"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::PermissionDeniedError(absl::StrCat("cannot open '", path, "' for reading"));
  // One block read of the size the file has (an istreambuf_iterator copy goes a character at
  // a time: a tenth of a 100 MB model's import), then whatever it grew by meanwhile.
  std::string bytes;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > 0) {
    bytes.resize(static_cast<size_t>(size));
    in.read(bytes.data(), static_cast<std::streamsize>(size));
    bytes.resize(static_cast<size_t>(in.gcount()));
  }
  char chunk[1 << 16];
  while (in.read(chunk, sizeof(chunk)) || in.gcount() > 0) {
    bytes.append(chunk, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read '", path, "'"));
  if (bytes.empty() && !options.allow_empty) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' is empty (expected ", options.what, ")"));
  }
  return bytes;
}

}  // namespace hetpass

#endif  // HETPASS_SUPPORT_FILE_H_
