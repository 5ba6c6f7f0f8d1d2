// Channel layouts of image tensors: "NCHW" and the blocked "NCHW{b}c" (TVM's name, oneDNN's
// nChw{b}c), where the channel axis is split into C/b blocks of b channels and the block is
// the innermost axis: a [N, C, H, W] tensor is stored as [N, C/b, H, W, b] with
// x_blocked[n][c / b][h][w][c % b] = x[n][c][h][w]. Vectorised convolutions read b channels of
// one pixel with one load; block-conv-layout (src/transforms) keeps convolution chains in
// this layout, layout_transform converts at its edges.
#ifndef HETPASS_SHAPE_FUNCS_CHANNEL_LAYOUT_H_
#define HETPASS_SHAPE_FUNCS_CHANNEL_LAYOUT_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace hetpass {

// The block of a layout name: 0 for "NCHW", b for "NCHW{b}c" (b a positive decimal without
// leading zeros, at most 4096); nullopt for anything else.
std::optional<int64_t> ParseChannelLayout(absl::string_view layout);
// "NCHW" for 0, "NCHW{b}c" otherwise.
std::string ChannelLayoutName(int64_t block);

// Offset of logical element (n, c, h, w) of an [N, C, H, W] tensor (`dims`) stored in channel
// layout `block` (C divisible by a non-zero block).
inline int64_t ChannelLayoutOffset(const std::array<int64_t, 4>& dims, int64_t block, int64_t n,
                                   int64_t c, int64_t h, int64_t w) {
  const int64_t hw = h * dims[3] + w;
  if (block == 0) return (n * dims[1] + c) * dims[2] * dims[3] + hw;
  return ((n * (dims[1] / block) + c / block) * dims[2] * dims[3] + hw) * block + c % block;
}

}  // namespace hetpass

#endif  // HETPASS_SHAPE_FUNCS_CHANNEL_LAYOUT_H_
