// Shared oneDNN plumbing and body-matching helpers (see onednn_common.h).
#include "compile_engine/onednn_common.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <variant>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compile_engine/dense_kernel.h"
#include "passes/support/pages.h"
#include "passes/shape_funcs/op_registry.h"

namespace hetpass::onednn {

absl::Status LibraryError(absl::string_view function, const std::exception& e) {
  if (const auto* d = dynamic_cast<const dnnl::error*>(&e)) {
    return absl::InternalError(absl::StrFormat("%s: onednn: %s (status %d)", function, d->what(),
                                               static_cast<int>(d->status)));
  }
  return absl::InternalError(absl::StrFormat("%s: onednn: %s", function, e.what()));
}

dnnl::memory::format_tag ChannelLayoutTag(int64_t block) {
  using Tag = dnnl::memory::format_tag;
  switch (block) {
    case 0:
      return Tag::nchw;
    case 4:
      return Tag::nChw4c;
    case 8:
      return Tag::nChw8c;
    case 16:
      return Tag::nChw16c;
    default:
      return Tag::undef;
  }
}

const dnnl::engine* CpuEngine() {
  static const dnnl::engine* engine = []() -> const dnnl::engine* {
    try {
      return new dnnl::engine(dnnl::engine::kind::cpu, 0);
    } catch (const dnnl::error&) {
      return nullptr;
    }
  }();
  return engine;
}

dnnl::stream& ThreadStream(const dnnl::engine& engine) {
  thread_local std::optional<dnnl::stream> stream;
  if (!stream) stream.emplace(engine);
  return *stream;
}

std::shared_ptr<const dnnl::memory> PackedConstant(const dnnl::memory& user, const dnnl::memory::desc& layout,
                                                   const dnnl::engine& engine) {
  if (layout == user.get_desc()) return std::make_shared<const dnnl::memory>(user);
  auto reordered = std::make_shared<dnnl::memory>(layout, engine);
  PrefaultForWrite(reordered->get_data_handle(), layout.get_size());
  dnnl::stream& stream = ThreadStream(engine);
  dnnl::reorder(user, *reordered).execute(stream, const_cast<dnnl::memory&>(user), *reordered);
  stream.wait();
  return reordered;
}

std::shared_ptr<const dnnl::memory> PackedWeight::Get(const dnnl::memory::desc& plain,
                                                      const dnnl::memory::desc& layout) {
  for (const auto& [desc, mem] : packed_) {
    if (desc == layout) return mem;
  }
  std::shared_ptr<const dnnl::memory> packed;
  if (plain_) {
    dnnl::memory user(plain, engine_, const_cast<uint8_t*>(plain_->data()));
    packed = PackedConstant(user, layout, engine_);
    // The first pack in another layout replaces the bytes as stored. A pack in the stored
    // layout is those bytes themselves (PackedConstant), so they stay while it exists.
    if (packed_.empty() && !(layout == plain)) plain_.reset();
  } else {
    // Back to the stored layout first: oneDNN has no direct reorder between some pairs of
    // blocked weight layouts. The plain copy lives only for this repack.
    dnnl::memory unpacked(plain, engine_);
    dnnl::stream& stream = ThreadStream(engine_);
    const dnnl::memory& first = *packed_.front().second;
    dnnl::reorder(first, unpacked).execute(stream, const_cast<dnnl::memory&>(first), unpacked);
    stream.wait();
    packed = PackedConstant(unpacked, layout, engine_);
  }
  packed_.emplace_back(layout, packed);
  return packed;
}

void* ThreadScratch(size_t bytes) {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<void, Free> buffer;
  thread_local size_t capacity = 0;
  if (bytes > capacity) {
    const size_t rounded = (bytes + 63) / 64 * 64;
    buffer.reset(std::aligned_alloc(64, rounded));
    capacity = buffer ? rounded : 0;
  }
  return buffer.get();
}

ScopedLibraryThreads::ScopedLibraryThreads()
    : previous_(omp_get_max_threads()), wanted_(KernelLibraryThreads()) {
  if (previous_ != wanted_) omp_set_num_threads(wanted_);
}

ScopedLibraryThreads::~ScopedLibraryThreads() {
  if (previous_ != wanted_) omp_set_num_threads(previous_);
}

PlainLayoutBridge MakePlainLayoutBridge(const dnnl::engine& engine,
                                        const dnnl::memory::desc& src_plain,
                                        const dnnl::memory::desc& src,
                                        const dnnl::memory::desc& dst,
                                        const dnnl::memory::desc& dst_plain,
                                        const dnnl::memory::desc& primitive_scratchpad) {
  PlainLayoutBridge b;
  b.src_plain = src_plain;
  b.dst_plain = dst_plain;
  b.src = src;
  b.dst = dst;
  dnnl::primitive_attr reorder_attr;
  reorder_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (src != src_plain) {
    const dnnl::reorder::primitive_desc rpd(engine, src_plain, engine, src, reorder_attr);
    b.reorder_in.emplace(rpd);
    b.in_scratchpad = rpd.scratchpad_desc();
  }
  if (dst != dst_plain) {
    const dnnl::reorder::primitive_desc rpd(engine, dst, engine, dst_plain, reorder_attr);
    b.reorder_out.emplace(rpd);
    b.out_scratchpad = rpd.scratchpad_desc();
  }
  auto aligned = [](size_t bytes) { return (bytes + 63) / 64 * 64; };
  b.src_offset = aligned(std::max({primitive_scratchpad.get_size(), b.in_scratchpad.get_size(),
                                   b.out_scratchpad.get_size()}));
  b.dst_offset = b.src_offset + (b.reorder_in ? aligned(src.get_size()) : 0);
  b.scratch_bytes = b.dst_offset + (b.reorder_out ? aligned(dst.get_size()) : 0);
  return b;
}

}  // namespace hetpass::onednn
