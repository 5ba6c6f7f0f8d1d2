// Test helpers for the cuda device (docs/cuda.md): PTX checked with ptxas for every
// architecture we promise (sm_80, sm_90), and kernels run on the GPU where one is usable.
//
// Without a GPU the run-time half skips with the reason (HETPASS_REQUIRE_CUDA=1 turns the skip
// into a failure: the GPU runner sets it). The PTX half never skips: ptxas comes with the CUDA
// toolkit of every build machine, and a missing ptxas is a failure naming the path tried.
#ifndef HETPASS_TEST_SUPPORT_CUDA_TEST_UTIL_H_
#define HETPASS_TEST_SUPPORT_CUDA_TEST_UTIL_H_

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "compile_engine/cuda/nvptx_kernel.h"
#include "passes/compile_engine/kernel.h"
#include "passes/ir/tensor.h"
#include "passes/runtime/device.h"
#include "passes/support/status_macros.h"

#ifndef HETPASS_PTXAS
#define HETPASS_PTXAS "/usr/local/cuda/bin/ptxas"
#endif

namespace hetpass::testing {

inline bool CudaRequired() {
  const char* v = std::getenv("HETPASS_REQUIRE_CUDA");
  return v != nullptr && std::string(v) == "1";
}

inline std::string PtxasPath() {
  const char* env = std::getenv("HETPASS_PTXAS");
  return env != nullptr && *env ? env : HETPASS_PTXAS;
}

// Assembles `ptx` with ptxas for sm_80 and sm_90; the error carries ptxas' output.
inline absl::Status PtxasAccepts(const std::string& ptx, const std::string& what) {
  const std::string ptxas = PtxasPath();
  if (access(ptxas.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat("ptxas not found at ", ptxas, " (set HETPASS_PTXAS)"));
  }
  char path[] = "/tmp/hetpass_ptx_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return absl::InternalError("mkstemp failed");
  close(fd);
  { std::ofstream(path) << ptx; }
  absl::Status result = absl::OkStatus();
  for (const char* arch : {"sm_80", "sm_90"}) {
    const std::string cmd = absl::StrCat(ptxas, " -arch=", arch, " ", path, " -o /dev/null 2>&1");
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[512];
    while (p != nullptr && fgets(buf, sizeof(buf), p) != nullptr) out += buf;
    const int rc = p == nullptr ? -1 : pclose(p);
    if (rc != 0) {
      result = absl::InvalidArgumentError(absl::StrCat("ptxas -arch=", arch, " rejects the PTX of ", what,
                                                       " (exit ", rc, "): ", out));
      break;
    }
  }
  std::remove(path);
  return result;
}

// The NVPTX kernel of `f` compiles and its PTX assembles for sm_80 and sm_90.
inline absl::Status NvptxAssembles(const Function& f) {
  ASSIGN_OR_RETURN(std::string ptx, cuda::NvptxPtx(f));
  return PtxasAccepts(ptx, absl::StrCat("@", f.name()));
}

// The process's cuda device, made once: null (with the reason) where no GPU is usable.
struct CudaTestDevice {
  std::unique_ptr<runtime::Device> device;
  std::unique_ptr<runtime::PoolingAllocator> pool;
  KernelContext ctx;
  std::string why;
};
inline CudaTestDevice& Cuda() {
  static CudaTestDevice* d = [] {
    auto* r = new CudaTestDevice();
    absl::StatusOr<std::unique_ptr<runtime::Device>> dev = runtime::MakeDevice(DeviceKind::kCuda);
    if (!dev.ok()) {
      r->why = std::string(dev.status().message());
      return r;
    }
    r->device = *std::move(dev);
    r->pool = std::make_unique<runtime::PoolingAllocator>(r->device.get());
    r->ctx = KernelContext{r->device.get(), r->device->native_queue(), r->pool.get()};
    return r;
  }();
  return *d;
}

// In a TEST body: skip (or fail, under HETPASS_REQUIRE_CUDA=1) without a usable GPU.
#define HETPASS_SKIP_WITHOUT_GPU()                                                   \
  do {                                                                               \
    if (::hetpass::testing::Cuda().device == nullptr) {                              \
      if (::hetpass::testing::CudaRequired()) FAIL() << ::hetpass::testing::Cuda().why; \
      GTEST_SKIP() << "no GPU: " << ::hetpass::testing::Cuda().why;                   \
    }                                                                                \
  } while (0)

// The parameters of `f` that a device kernel reads on the host, as the VM passes them: the
// run-time operands (after the data) of dyn.* ops, such as a dyn.reshape's target.
inline std::vector<bool> HostParams(const Function& f) {
  std::vector<bool> host(f.body().num_params(), false);
  for (const auto& n : f.body().nodes()) {
    if (n->kind() != NodeKind::kCall || n->OpName().rfind("dyn.", 0) != 0) continue;
    for (int i = 1; i < n->num_operands(); ++i) {
      for (int p = 0; p < f.body().num_params(); ++p) {
        if (n->operand(i) == f.body().param(p)) host[p] = true;
      }
    }
  }
  return host;
}

// Runs `kernel` on the GPU: inputs copied in (those `host` marks stay on the host and are
// passed by value), the outputs poisoned (0x7f bytes) first, one launch, the results copied
// back. Null device: FailedPrecondition with the reason. `instance`, when given, is an instance
// of `kernel` made on Cuda().ctx and kept by the caller (tests of per-shape plan caches).
inline absl::Status RunOnCuda(const CompiledKernel& kernel, const std::vector<Tensor>& inputs,
                              const std::vector<Tensor*>& outs, const std::vector<bool>& host = {},
                              KernelInstance* instance = nullptr) {
  CudaTestDevice& c = Cuda();
  if (c.device == nullptr) return absl::FailedPreconditionError(c.why);
  std::vector<runtime::PoolingAllocator::Block> blocks;
  auto release = [&] {
    for (const auto& b : blocks) c.pool->Release(b);
  };
  std::vector<TensorArg> args;
  std::vector<runtime::LaunchArg> launch;
  absl::Status s = [&]() -> absl::Status {
    for (size_t i = 0; i < inputs.size() + outs.size(); ++i) {
      const bool is_input = i < inputs.size();
      const Tensor& t = is_input ? inputs[i] : *outs[i - inputs.size()];
      if (i < host.size() && host[i]) {
        args.push_back(TensorArg{const_cast<uint8_t*>(t.data()), t.dtype(), t.shape()});
        launch.push_back(runtime::LaunchArg{const_cast<uint8_t*>(t.data()), t.nbytes(), true});
        continue;
      }
      ASSIGN_OR_RETURN(runtime::PoolingAllocator::Block b, c.pool->Allocate(t.nbytes()));
      blocks.push_back(b);
      if (is_input) {
        RETURN_IF_ERROR(c.device->CopyHostToDevice(b.ptr, t.data(), t.nbytes()));
      } else {
        std::vector<uint8_t> poison(t.nbytes(), 0x7f);
        RETURN_IF_ERROR(c.device->CopyHostToDevice(b.ptr, poison.data(), poison.size()));
      }
      args.push_back(TensorArg{b.ptr, t.dtype(), t.shape()});
      launch.push_back(runtime::LaunchArg{b.ptr, t.nbytes(), false});
    }
    std::unique_ptr<KernelInstance> own;
    if (instance == nullptr) {
      std::vector<const Tensor*> constants(inputs.size(), nullptr);
      ASSIGN_OR_RETURN(own, kernel.Instantiate(c.ctx, constants));
      instance = own.get();
    }
    RETURN_IF_ERROR(c.device->Launch(absl::MakeSpan(launch), [&] { return instance->Run(c.ctx, args); }));
    for (size_t o = 0; o < outs.size(); ++o) {
      RETURN_IF_ERROR(
          c.device->CopyDeviceToHost(outs[o]->mutable_data(), args[inputs.size() + o].data, outs[o]->nbytes()));
    }
    RETURN_IF_ERROR(c.device->Synchronize());  // the outputs are read next
    return absl::OkStatus();
  }();
  if (!s.ok()) (void)c.device->Synchronize();  // drain, and clear the error word
  release();
  return s;
}

inline absl::Status RunOnCuda(const CompiledKernel& kernel, const std::vector<Tensor>& inputs, Tensor& out,
                              const std::vector<bool>& host = {}, KernelInstance* instance = nullptr) {
  return RunOnCuda(kernel, inputs, std::vector<Tensor*>{&out}, host, instance);
}

}  // namespace hetpass::testing

#endif  // HETPASS_TEST_SUPPORT_CUDA_TEST_UTIL_H_
