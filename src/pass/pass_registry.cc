// Pipeline text: `pass{key=value,key=value},pass,...`. Commas inside braces separate options,
// outside them passes; list values inside an option use ':'.
#include "passes/pass/pass_registry.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "passes/support/status_macros.h"

namespace hetpass {

absl::Status PassOptions::CheckKnown(const std::vector<std::string>& known) const {
  for (const auto& [key, value] : values_) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "pass '%s' has no option '%s' (options: %s)", pass_, key,
          known.empty() ? "none" : absl::StrJoin(known, ", ")));
    }
  }
  return absl::OkStatus();
}

std::string PassOptions::GetString(absl::string_view key, absl::string_view default_value) const {
  auto it = values_.find(std::string(key));
  return it == values_.end() ? std::string(default_value) : it->second;
}

absl::StatusOr<int64_t> PassOptions::GetInt(absl::string_view key, int64_t default_value) const {
  auto it = values_.find(std::string(key));
  if (it == values_.end()) return default_value;
  int64_t v;
  if (!absl::SimpleAtoi(it->second, &v)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "option '%s' of pass '%s' must be an integer, got '%s'", key, pass_, it->second));
  }
  return v;
}

absl::StatusOr<bool> PassOptions::GetBool(absl::string_view key, bool default_value) const {
  auto it = values_.find(std::string(key));
  if (it == values_.end()) return default_value;
  if (it->second == "true" || it->second == "1" || it->second.empty()) return true;
  if (it->second == "false" || it->second == "0") return false;
  return absl::InvalidArgumentError(absl::StrFormat(
      "option '%s' of pass '%s' must be true or false, got '%s'", key, pass_, it->second));
}

std::vector<std::string> PassOptions::GetList(absl::string_view key) const {
  auto it = values_.find(std::string(key));
  if (it == values_.end() || it->second.empty()) return {};
  return absl::StrSplit(it->second, ':');
}

const PassRegistry& PassRegistry::Global() {
  static const PassRegistry* global = [] {
    auto* r = new PassRegistry;
    RegisterAllPasses(*r);
    return r;
  }();
  return *global;
}

void PassRegistry::Register(PassInfo info) { passes_.push_back(std::move(info)); }

const PassInfo* PassRegistry::Find(absl::string_view name) const {
  for (const PassInfo& p : passes_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string PassRegistry::Describe() const {
  std::string out;
  for (const PassInfo& p : passes_) {
    absl::StrAppendFormat(&out, "%-20s %s\n", p.name, p.summary);
    for (const std::string& o : p.options) absl::StrAppend(&out, "    {", o, "}\n");
  }
  return out;
}

namespace {

absl::Status PipelineError(absl::string_view text, size_t pos, absl::string_view msg) {
  return absl::InvalidArgumentError(
      absl::StrFormat("pipeline '%s' col %d: %s", text, pos + 1, msg));
}

bool IsNameChar(char c) { return absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.'; }

}  // namespace

absl::StatusOr<std::unique_ptr<PassManager>> ParsePipeline(absl::string_view text,
                                                           PassManagerOptions options,
                                                           const PassRegistry& registry) {
  auto pm = std::make_unique<PassManager>(std::move(options));
  size_t i = 0;
  auto skip_space = [&] {
    while (i < text.size() && absl::ascii_isspace(text[i])) ++i;
  };
  skip_space();
  if (i == text.size()) return pm;  // empty pipeline: no passes
  while (true) {
    skip_space();
    const size_t name_start = i;
    while (i < text.size() && IsNameChar(text[i])) ++i;
    const std::string name(text.substr(name_start, i - name_start));
    if (name.empty()) {
      return PipelineError(text, name_start,
                           i < text.size() ? absl::StrCat("expected a pass name, found '",
                                                          text.substr(i, 1), "'")
                                           : "expected a pass name after ','");
    }
    const PassInfo* info = registry.Find(name);
    if (info == nullptr) {
      std::vector<std::string> known;
      for (const PassInfo& p : registry.passes()) known.push_back(p.name);
      return PipelineError(text, name_start,
                           absl::StrFormat("unknown pass '%s' (known passes: %s)", name,
                                           absl::StrJoin(known, ", ")));
    }
    std::map<std::string, std::string> values;
    skip_space();
    if (i < text.size() && text[i] == '{') {
      const size_t open = i++;
      const size_t close = text.find('}', open);
      if (close == absl::string_view::npos) {
        return PipelineError(text, open, absl::StrCat("unterminated '{' in options of '", name, "'"));
      }
      absl::string_view body = text.substr(open + 1, close - open - 1);
      size_t offset = open + 1;
      for (absl::string_view item : absl::StrSplit(body, ',')) {
        absl::string_view trimmed = absl::StripAsciiWhitespace(item);
        if (!trimmed.empty()) {
          const size_t eq = trimmed.find('=');
          std::string key(absl::StripAsciiWhitespace(trimmed.substr(0, eq)));
          std::string value = eq == absl::string_view::npos
                                  ? ""
                                  : std::string(absl::StripAsciiWhitespace(trimmed.substr(eq + 1)));
          if (key.empty()) {
            return PipelineError(text, offset, absl::StrCat("empty option name in '", name, "'"));
          }
          if (!values.emplace(key, value).second) {
            return PipelineError(text, offset,
                                 absl::StrFormat("option '%s' of '%s' given twice", key, name));
          }
        }
        offset += item.size() + 1;
      }
      i = close + 1;
    }
    absl::StatusOr<std::unique_ptr<Pass>> pass = info->create(PassOptions(name, std::move(values)));
    if (!pass.ok()) return PipelineError(text, name_start, pass.status().message());
    pm->AddPass(*std::move(pass));
    skip_space();
    if (i == text.size()) break;
    if (text[i] != ',') {
      return PipelineError(text, i, absl::StrCat("expected ',' or end of pipeline, found '",
                                                 text.substr(i, 1), "'"));
    }
    ++i;
  }
  return pm;
}

}  // namespace hetpass
