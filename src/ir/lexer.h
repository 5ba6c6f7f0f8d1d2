// The text IR lexer (internal to src/ir/parser.cc): tokens are views into the source text and
// the lexer never allocates. `//` starts a comment except where the parser asks for floor
// division (inside the brackets of a shape, and in ParseDimExpr).
#ifndef HETPASS_IR_LEXER_H_
#define HETPASS_IR_LEXER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace hetpass::ir_text {

// ---------------------------------------------------------------------------------------------
// Lexer

enum class Tok : uint8_t {
  kEof,
  kError,   // text: the offending characters; error: what is wrong
  kIdent,   // NAME, possibly dotted (op names): nn.dense
  kValue,   // %name or %0 (text includes the '%')
  kGlobal,  // @name (text includes the '@')
  kInt,
  kFloat,
  kHex,     // 0x... (text includes the prefix)
  kString,  // "..." (text includes the quotes, escapes not decoded)
  kLParen,
  kRParen,
  kLBrace,
  kRBrace,
  kLBracket,
  kRBracket,
  kLess,
  kGreater,
  kComma,
  kColon,
  kEqual,
  kArrow,
  kPlus,
  kMinus,
  kStar,
  kFloorDiv,  // `//`, only in dim mode
  kPercent,
  kQuestion,
};

struct Token {
  Tok kind = Tok::kEof;
  absl::string_view text;
  int line = 1;
  int col = 1;
  const char* error = nullptr;  // kError only
};

inline bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }
inline bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
inline int HexValue(char c) {
  if (c <= '9') return c - '0';
  if (c <= 'F') return c - 'A' + 10;
  return c - 'a' + 10;
}

class Lexer {
 public:
  explicit Lexer(absl::string_view src) : src_(src) {}

  // Lexes the next token. In dim mode `//` is the floor-division operator, else a comment.
  Token Next(bool dim_mode) {
    SkipSpaceAndComments(dim_mode);
    Token t;
    t.line = line_;
    t.col = static_cast<int>(pos_ - line_start_) + 1;
    const size_t start = pos_;
    if (pos_ >= src_.size()) {
      t.kind = Tok::kEof;
      t.text = Span(src_.size(), 0);
      return t;
    }
    const char c = src_[pos_];
    auto single = [&](Tok k) {
      ++pos_;
      t.kind = k;
      t.text = Span(start, 1);
      return t;
    };
    switch (c) {
      case '(':
        return single(Tok::kLParen);
      case ')':
        return single(Tok::kRParen);
      case '{':
        return single(Tok::kLBrace);
      case '}':
        return single(Tok::kRBrace);
      case '[':
        return single(Tok::kLBracket);
      case ']':
        return single(Tok::kRBracket);
      case '<':
        return single(Tok::kLess);
      case '>':
        return single(Tok::kGreater);
      case ',':
        return single(Tok::kComma);
      case ':':
        return single(Tok::kColon);
      case '=':
        return single(Tok::kEqual);
      case '+':
        return single(Tok::kPlus);
      case '*':
        return single(Tok::kStar);
      case '%':  // in a dim, always the modulo operator: `n%3`
        if (!dim_mode && pos_ + 1 < src_.size() && IsIdentChar(src_[pos_ + 1])) {
          return LexSigil(t, Tok::kValue);
        }
        return single(Tok::kPercent);
      case '?':
        return single(Tok::kQuestion);
      case '-':
        if (pos_ + 1 < src_.size() && src_[pos_ + 1] == '>') {
          pos_ += 2;
          t.kind = Tok::kArrow;
          t.text = Span(start, 2);
          return t;
        }
        return single(Tok::kMinus);
      case '/':
        if (pos_ + 1 < src_.size() && src_[pos_ + 1] == '/') {  // dim mode only, see Skip
          pos_ += 2;
          t.kind = Tok::kFloorDiv;
          t.text = Span(start, 2);
          return t;
        }
        return Error(t, 1, "unexpected character '/' (floor division is '//')");
      case '@':
        if (pos_ + 1 < src_.size() && IsIdentStart(src_[pos_ + 1])) {
          return LexSigil(t, Tok::kGlobal);
        }
        return Error(t, 1, "expected a name after '@'");
      case '"':
        return LexString(t);
      default:
        break;
    }
    if (IsIdentStart(c)) {
      ++pos_;
      while (pos_ < src_.size()) {
        if (IsIdentChar(src_[pos_])) {
          ++pos_;
        } else if (src_[pos_] == '.' && pos_ + 1 < src_.size() && IsIdentStart(src_[pos_ + 1])) {
          pos_ += 2;
        } else {
          break;
        }
      }
      t.kind = Tok::kIdent;
      t.text = Span(start, pos_ - start);
      return t;
    }
    if (IsDigit(c)) return LexNumber(t);
    if (static_cast<unsigned char>(c) >= 0x80) return Error(t, 1, "unexpected non-ASCII byte");
    return Error(t, 1, "unexpected character");
  }

  // The unlexed rest of the line-less source from the current position (for the type cache).
  absl::string_view Rest() const { return Span(pos_, src_.size() - pos_); }
  // Skips `n` characters known to hold no newline.
  void Skip(size_t n) { pos_ += n; }

 private:
  absl::string_view Span(size_t start, size_t len) const {
    return absl::string_view(src_.data() + start, len);
  }

  void SkipSpaceAndComments(bool dim_mode) {
    while (pos_ < src_.size()) {
      const char c = src_[pos_];
      if (c == '\n') {
        ++pos_;
        ++line_;
        line_start_ = pos_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else if (!dim_mode && c == '/' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '/') {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  Token Error(Token t, size_t len, const char* message) {
    t.kind = Tok::kError;
    t.text = Span(pos_, len);
    t.error = message;
    pos_ = src_.size();  // stop lexing: the parser reports this token
    return t;
  }

  // %name, %0, @name.
  Token LexSigil(Token t, Tok kind) {
    const size_t start = pos_;
    ++pos_;
    const bool numeric = IsDigit(src_[pos_]);
    while (pos_ < src_.size() && IsIdentChar(src_[pos_])) {
      if (numeric && !IsDigit(src_[pos_])) {
        while (pos_ < src_.size() && IsIdentChar(src_[pos_])) ++pos_;
        pos_ = start;
        size_t len = 1;
        while (start + len < src_.size() && IsIdentChar(src_[start + len])) ++len;
        return Error(t, len, "invalid value name (a name is all digits or starts with a letter)");
      }
      ++pos_;
    }
    t.kind = kind;
    t.text = Span(start, pos_ - start);
    return t;
  }

  Token LexNumber(Token t) {
    const size_t start = pos_;
    if (src_[pos_] == '0' && pos_ + 1 < src_.size() && (src_[pos_ + 1] == 'x')) {
      pos_ += 2;
      while (pos_ < src_.size() && IsHexDigit(src_[pos_])) ++pos_;
      t.kind = Tok::kHex;
      t.text = Span(start, pos_ - start);
      return t;
    }
    while (pos_ < src_.size() && IsDigit(src_[pos_])) ++pos_;
    bool is_float = false;
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && IsDigit(src_[pos_ + 1])) {
      is_float = true;
      ++pos_;
      while (pos_ < src_.size() && IsDigit(src_[pos_])) ++pos_;
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t p = pos_ + 1;
      if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
      if (p < src_.size() && IsDigit(src_[p])) {
        is_float = true;
        pos_ = p;
        while (pos_ < src_.size() && IsDigit(src_[pos_])) ++pos_;
      }
    }
    t.kind = is_float ? Tok::kFloat : Tok::kInt;
    t.text = Span(start, pos_ - start);
    return t;
  }

  Token LexString(Token t) {
    const size_t start = pos_;
    ++pos_;
    while (pos_ < src_.size()) {
      const char c = src_[pos_];
      if (c == '"') {
        ++pos_;
        t.kind = Tok::kString;
        t.text = Span(start, pos_ - start);
        return t;
      }
      if (c == '\n') break;
      pos_ += (c == '\\') ? 2 : 1;
    }
    pos_ = start;
    return Error(t, 1, "unterminated string literal");
  }

  absl::string_view src_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
};

inline std::string DescribeToken(const Token& t) {
  if (t.kind == Tok::kEof) return "end of input";
  constexpr size_t kMaxShown = 40;
  if (t.text.size() > kMaxShown) return absl::StrCat("'", t.text.substr(0, kMaxShown), "...'");
  return absl::StrCat("'", t.text, "'");
}

}  // namespace hetpass::ir_text

#endif  // HETPASS_IR_LEXER_H_
