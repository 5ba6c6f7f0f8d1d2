// What the oneDNN kernels (dense_kernel.cc, conv_kernel.cc) share: the oneDNN plumbing (engine, per-thread streams and scratch,
// library thread count, errors). Internal to src/compile_engine.
#ifndef HETPASS_COMPILE_ENGINE_ONEDNN_COMMON_H_
#define HETPASS_COMPILE_ENGINE_ONEDNN_COMMON_H_

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <dnnl.hpp>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "compile_engine/group_match.h"
#include "passes/compile_engine/kernel.h"
#include "passes/ir/ir.h"
#include "passes/shape_funcs/op_ids.h"

namespace hetpass::onednn {

// The matching helpers (group_match.h), used unqualified by the oneDNN kernels.
using group_match::AnchorEpilogue;
using group_match::CheckF32Arg;
using group_match::DeclaredResultIsF32;
using group_match::IntAttr;
using group_match::IsCallOf;
using group_match::IsEpilogueOp;
using group_match::IsF32Tensor;
using group_match::MatchAnchorEpilogue;
using group_match::ParamIndex;
using group_match::ShapeString;

// ---- oneDNN plumbing ----------------------------------------------------------------------
// Internal error naming the function: "@f: onednn: <what> (status N)".
absl::Status LibraryError(absl::string_view function, const std::exception& e);
// The process's CPU engine (created once, never destroyed: primitives may outlive statics);
// nullptr if oneDNN cannot create one.
const dnnl::engine* CpuEngine();
// oneDNN's tag of a channel layout (channel_layout.h): nchw for 0, nChw4c / nChw8c / nChw16c
// for blocks of 4, 8, 16; undef for any other block (no oneDNN tag).
dnnl::memory::format_tag ChannelLayoutTag(int64_t block);
// oneDNN streams are not thread-safe: one per thread.
dnnl::stream& ThreadStream(const dnnl::engine& engine);
// The calling thread's scratch buffer for primitive execution, at least `bytes` long (64-byte
// aligned; grown, never shrunk). oneDNN's library-managed scratchpad lives in the thread-local
// storage of the thread that CREATED the primitive, so executing a cached primitive on another
// thread reads a null or too small buffer (seen crashing in gemm-based convolutions): run
// primitives on a user scratchpad from here.
void* ThreadScratch(size_t bytes);
// A constant weight `user` (plain layout, the constant's own bytes) in `layout`: `user` itself
// where the layouts agree, else a reordered copy whose pages are made resident before the
// reorder writes them (PrefaultForWrite: a model's packed weights are as large as its file).
// Shared by the dense, conv2d and conv2d_transpose instances' prepacking at load.
std::shared_ptr<const dnnl::memory> PackedConstant(const dnnl::memory& user, const dnnl::memory::desc& layout,
                                                   const dnnl::engine& engine);

// A constant weight an instance prepacks (dense, conv2d), held once: its bytes as stored until
// the first pack in another layout, then that pack alone, every later layout (another M, the
// Winograd tier) reordered from it. Holding the plain bytes beside the packed ones doubled a
// model's resident weights at load (BERT-6 peaked at 1.9x its file); once they are dropped the
// instance reports the weight Absorbed and the VM releases the constant too. Not thread-safe:
// callers hold their instance's lock.
class PackedWeight {
 public:
  PackedWeight(Tensor plain, const dnnl::engine& engine)
      : plain_(std::move(plain)),
        shape_(plain_->shape()),
        num_elements_(plain_->num_elements()),
        engine_(engine) {}
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t num_elements() const { return num_elements_; }
  // The weights in `layout`, `plain` describing them as stored; reordered on first request.
  // Throws what oneDNN throws.
  std::shared_ptr<const dnnl::memory> Get(const dnnl::memory::desc& plain,
                                          const dnnl::memory::desc& layout);
  // The bytes as stored are no longer held (every layout comes from the first pack).
  bool absorbed() const { return !plain_.has_value(); }

 private:
  std::optional<Tensor> plain_;
  std::vector<int64_t> shape_;
  int64_t num_elements_;
  const dnnl::engine& engine_;
  std::vector<std::pair<dnnl::memory::desc, std::shared_ptr<const dnnl::memory>>> packed_;
};

// A primitive running on the src/dst layouts oneDNN picked (blocked where it has a blocked
// kernel), bridged to the caller's plain layouts by reorders where those differ, all on one
// per-call user scratch region: [scratchpad (max of the primitive's and the reorders') |
// blocked src | blocked dst], each part 64-byte aligned. Shared by conv2d and conv2d_transpose.
struct PlainLayoutBridge {
  dnnl::memory::desc src_plain, dst_plain, src, dst;
  std::optional<dnnl::reorder> reorder_in, reorder_out;  // absent when the layout is plain
  dnnl::memory::desc in_scratchpad, out_scratchpad;      // the reorders' (user-managed)
  size_t src_offset = 0, dst_offset = 0, scratch_bytes = 0;
};
// Builds the bridge for a primitive whose chosen layouts are `src` / `dst` and whose own
// scratchpad is `primitive_scratchpad`. Throws what oneDNN throws.
PlainLayoutBridge MakePlainLayoutBridge(const dnnl::engine& engine,
                                        const dnnl::memory::desc& src_plain,
                                        const dnnl::memory::desc& src,
                                        const dnnl::memory::desc& dst,
                                        const dnnl::memory::desc& dst_plain,
                                        const dnnl::memory::desc& primitive_scratchpad);

// Sets the calling thread's OpenMP thread count to KernelLibraryThreads() while alive.
class ScopedLibraryThreads {
 public:
  ScopedLibraryThreads();
  ~ScopedLibraryThreads();
  ScopedLibraryThreads(const ScopedLibraryThreads&) = delete;
  ScopedLibraryThreads& operator=(const ScopedLibraryThreads&) = delete;

 private:
  int previous_;
  int wanted_;
};

}  // namespace hetpass::onednn

#endif  // HETPASS_COMPILE_ENGINE_ONEDNN_COMMON_H_
