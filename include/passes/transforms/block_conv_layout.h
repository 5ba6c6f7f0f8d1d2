// block-conv-layout: keeps convolution chains in the blocked channel layout NCHW<b>c
// (passes/shape_funcs/channel_layout.h) that vectorised convolution kernels compute in, so
// that data moves between layouts at the chain's edges instead of around every convolution.
// See the .cc for the rewrite and its conditions.
#ifndef HETPASS_TRANSFORMS_BLOCK_CONV_LAYOUT_H_
#define HETPASS_TRANSFORMS_BLOCK_CONV_LAYOUT_H_

#include <cstdint>
#include <memory>

#include "passes/pass/pass.h"

namespace hetpass {

struct BlockConvLayoutOptions {
  static constexpr absl::string_view kName = "block-conv-layout";
  // Channels per block: 16 is oneDNN's AVX-512 layout (nChw16c), 8 its AVX2 one. The compile
  // engine's kernels take 4, 8 and 16; other blocks give reference kernels.
  int64_t block = 16;
};

std::unique_ptr<Pass> CreateBlockConvLayoutPass(const BlockConvLayoutOptions& options = {});

}  // namespace hetpass

#endif  // HETPASS_TRANSFORMS_BLOCK_CONV_LAYOUT_H_
