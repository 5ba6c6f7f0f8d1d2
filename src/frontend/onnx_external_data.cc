// External tensor data (see onnx_external_data.h). Per tensor: read the external_data entries,
// confine the location to the model's folder by comparing canonical paths, open and stat the
// file, check the range against the file and the tensor's size, map the pages that hold the
// range read-only, copy the range into a fresh buffer and unmap.
#include "frontend/onnx_external_data.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/numbers.h"
#include "onnx/onnx_pb.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/support/pages.h"
#include "passes/support/status_macros.h"

namespace hetpass::onnx_frontend {
namespace {

thread_local const std::string* current_folder = nullptr;

// Closes a file descriptor on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

absl::Status Bad(const onnx::TensorProto& t, const std::string& location, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrFormat("tensor '%s': external data '%s': %s", t.name(), location, why));
}

// A non-negative integer entry (`offset`, `length`), or an error naming it.
absl::StatusOr<int64_t> Count(const onnx::TensorProto& t, const std::string& location, const std::string& key,
                              const std::string& value) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(value, &v) || v < 0) {
    return Bad(t, location, absl::StrFormat("%s '%s' is not a non-negative integer", key, value));
  }
  return v;
}

}  // namespace

ExternalDataScope::ExternalDataScope(std::string folder) : folder_(std::move(folder)), previous_(current_folder) {
  current_folder = &folder_;
}
ExternalDataScope::~ExternalDataScope() { current_folder = previous_; }
const std::string* ExternalDataScope::Current() { return current_folder; }

absl::StatusOr<std::string> ReadExternalData(const onnx::TensorProto& t, int64_t expected) {
  std::string location;
  bool has_location = false;
  std::string offset_text, length_text;
  for (const auto& e : t.external_data()) {
    if (e.key() == "location") {
      location = e.value();
      has_location = true;
    } else if (e.key() == "offset") {
      offset_text = e.value();
    } else if (e.key() == "length") {
      length_text = e.value();
    }  // "checksum" and unknown keys: not needed to read the bytes
  }
  if (!has_location || location.empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("tensor '%s' has external data without a 'location' entry", t.name()));
  }
  const std::string* folder = ExternalDataScope::Current();
  if (folder == nullptr) {
    return Bad(t, location,
               "a model with external data must be imported from its file (ImportOnnxFile, hetpass run "
               "FILE.onnx): the data files are found in its folder");
  }
  if (location.find('\0') != std::string::npos) return Bad(t, location, "the location holds a NUL byte");
  const std::filesystem::path rel(location);
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory()) {
    return Bad(t, location, "an absolute location: a location is relative to the model's folder");
  }

  // Confinement: the canonical file (links resolved) must lie inside the canonical folder.
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::weakly_canonical(std::filesystem::path(*folder).empty()
                                                                           ? std::filesystem::path(".")
                                                                           : std::filesystem::path(*folder),
                                                                       ec);
  if (ec) return Bad(t, location, absl::StrCat("the model's folder cannot be resolved: ", ec.message()));
  const std::filesystem::path full = std::filesystem::weakly_canonical(dir / rel, ec);
  if (ec) return Bad(t, location, absl::StrCat("cannot be resolved: ", ec.message()));
  auto [d, f] = std::mismatch(dir.begin(), dir.end(), full.begin(), full.end());
  if (d != dir.end() || f == full.end()) {
    return Bad(t, location, absl::StrFormat("resolves to '%s', outside the model's folder '%s'", full.string(),
                                            dir.string()));
  }

  Fd file{::open(full.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) return Bad(t, location, absl::StrCat("cannot be opened: ", std::strerror(errno)));
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) return Bad(t, location, absl::StrCat("cannot be read: ", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) return Bad(t, location, "is not a regular file");
  const int64_t size = static_cast<int64_t>(st.st_size);

  int64_t offset = 0;
  if (!offset_text.empty()) {
    ASSIGN_OR_RETURN(offset, Count(t, location, "offset", offset_text));
  }
  if (offset > size) {
    return Bad(t, location, absl::StrFormat("offset %d is past the end of the file (%d bytes)", offset, size));
  }
  int64_t length = size - offset;  // no length: the rest of the file
  if (!length_text.empty()) {
    ASSIGN_OR_RETURN(length, Count(t, location, "length", length_text));
  }
  if (length > size - offset) {
    return Bad(t, location, absl::StrFormat("the file is %d bytes, too short for %d bytes at offset %d", size,
                                            length, offset));
  }
  if (length != expected) {
    return Bad(t, location, absl::StrFormat("%d bytes at offset %d, but the tensor's dtype and dims take %d bytes",
                                            length, offset, expected));
  }
  std::string out;
  if (length == 0) return out;

  // Map just the pages that hold the range (mmap's offset must be page-aligned).
  const int64_t page = ::sysconf(_SC_PAGESIZE);
  const int64_t start = offset / page * page;
  const size_t span = static_cast<size_t>(offset - start + length);
  void* map = ::mmap(nullptr, span, PROT_READ, MAP_PRIVATE, file.fd, static_cast<off_t>(start));
  if (map == MAP_FAILED) return Bad(t, location, absl::StrCat("cannot be mapped: ", std::strerror(errno)));
  ::madvise(map, span, MADV_SEQUENTIAL);
  out.reserve(static_cast<size_t>(length));
  PrefaultForWrite(out.data(), static_cast<size_t>(length));
  AppendOutOfMapping(&out, static_cast<const char*>(map) + (offset - start), static_cast<size_t>(length));
  ::munmap(map, span);
  return out;
}

}  // namespace hetpass::onnx_frontend
