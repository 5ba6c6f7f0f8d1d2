// JSON string literals for the project's hand-assembled JSON outputs (the copy ledger, the
// hetpass CLI's reports, pass-viz's index data): the one escaping rule they all share.
#ifndef HETPASS_SUPPORT_JSON_H_
#define HETPASS_SUPPORT_JSON_H_

#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace hetpass {

// `s` as a quoted JSON string: quotes, backslashes and control characters escaped; other bytes
// (UTF-8 included) kept. "</" is written "<\/" so the text can sit inside an HTML <script>.
inline std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '/':
        out += i > 0 && s[i - 1] == '<' ? "\\/" : "/";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += absl::StrFormat("\\u%04x", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace hetpass

#endif  // HETPASS_SUPPORT_JSON_H_
