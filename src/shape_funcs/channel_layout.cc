// Parsing of the channel layout names (see channel_layout.h).
#include "passes/shape_funcs/channel_layout.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace hetpass {

std::optional<int64_t> ParseChannelLayout(absl::string_view layout) {
  if (layout == "NCHW") return 0;
  if (!absl::ConsumePrefix(&layout, "NCHW") || !absl::ConsumeSuffix(&layout, "c")) {
    return std::nullopt;
  }
  // Digits only, no sign, no leading zero: one spelling per block.
  if (layout.empty() || layout.size() > 4 || layout[0] == '0') return std::nullopt;
  for (char ch : layout) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(ch))) return std::nullopt;
  }
  int64_t block = 0;
  if (!absl::SimpleAtoi(layout, &block) || block > 4096) return std::nullopt;
  return block;
}

std::string ChannelLayoutName(int64_t block) {
  return block == 0 ? std::string("NCHW") : absl::StrCat("NCHW", block, "c");
}

}  // namespace hetpass
