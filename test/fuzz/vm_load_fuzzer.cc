// libFuzzer target for the VM executable loader: the input bytes are a saved executable (.hvm,
// `hetpass run --save-executable`), given to Executable::Deserialize and, when that accepts
// them, to VirtualMachine::Load (verify, parse the primitive functions, compile a kernel per
// site, place constants on cpu/sim). Nothing is run.
//
// The checksum. The file's header holds the payload's size and FNV-1a hash (executable.cc), so
// almost every mutation of a valid file would only test the checksum comparison. The custom
// mutator below therefore rewrites the header of 7 mutants in 8 to match their payload (size
// and hash), and leaves the 8th as mutated, so the header checks stay fuzzed too. The corpus
// and the saved reproducers hold the bytes exactly as the library saw them: a replay is the
// same call.
//
// What counts as a finding (the process aborts, libFuzzer saves the input):
//   - a crash, an abort, an ASan report, a UBSan report, an allocation above -malloc_limit_mb
//     or a process above -rss_limit_mb;
//   - an InternalError from Deserialize or Load (user errors are InvalidArgument, DataLoss,
//     NotFound or Unimplemented; Internal means a broken invariant), or an error without a
//     message;
//   - an executable that Deserialize accepts but that does not serialize back to the same
//     bytes (the format has one encoding per executable, so anything else lost or invented
//     information).
// ToListing() runs on every accepted executable (tools print loaded files).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "passes/vm/executable.h"
#include "passes/vm/vm.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

// The header (executable.cc): magic[8], u32 version, u64 payload size, u64 FNV-1a of the payload.
constexpr size_t kSizeOffset = 12;
constexpr size_t kHashOffset = 20;
constexpr size_t kHeaderBytes = 28;

uint64_t Fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

// Makes the header's size and checksum match the payload (magic and version stay as mutated).
void FixHeader(uint8_t* data, size_t size) {
  if (size < kHeaderBytes) return;
  const uint64_t payload = size - kHeaderBytes;
  const uint64_t hash = Fnv1a(data + kHeaderBytes, payload);
  std::memcpy(data + kSizeOffset, &payload, 8);
  std::memcpy(data + kHashOffset, &hash, 8);
}

[[noreturn]] void Fail(absl::string_view what, absl::string_view detail) {
  std::fprintf(stderr, "vm_load_fuzzer: %.*s\n%.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

void CheckError(const absl::Status& s, absl::string_view what) {
  if (s.code() == absl::StatusCode::kInternal || s.message().empty()) {
    Fail(absl::StrCat(what, " returned an internal error or one without a message"), s.ToString());
  }
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  size = LLVMFuzzerMutate(data, size, max_size);
  if (seed % 8 != 0) FixHeader(data, size);
  return size;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto exe = hetpass::vm::Executable::Deserialize(bytes);
  if (!exe.ok()) {
    CheckError(exe.status(), "Executable::Deserialize");
    return 0;
  }
  if (exe->Serialize() != bytes) {
    Fail("Serialize(Deserialize(bytes)) != bytes", exe->ToListing());
  }
  volatile size_t sink = exe->ToListing().size();
  (void)sink;

  hetpass::vm::VmOptions options;
  // Constants are at most the input's size; a small arena keeps each input's mmap cheap.
  options.sim.arena_bytes = size_t{64} << 20;
  auto vm = hetpass::vm::VirtualMachine::Load(*std::move(exe), options);
  if (!vm.ok()) {
    CheckError(vm.status(), "VirtualMachine::Load");
    return 0;
  }
  sink = (*vm)->KernelDescriptions().size();
  return 0;
}
