// Command-line handling shared by the hetpass tools (hetpass, hetpass-opt, pass-viz).
#ifndef HETPASS_TOOLS_COMMON_COMMAND_LINE_H_
#define HETPASS_TOOLS_COMMON_COMMAND_LINE_H_

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

#ifndef HETPASS_VERSION
#define HETPASS_VERSION "unknown"
#endif
#ifndef HETPASS_BUILD_TYPE
#define HETPASS_BUILD_TYPE "unknown"
#endif

namespace hetpass::tools {

struct ToolCommandLine {
  const char* name;        // "hetpass-opt": --version and messages
  const char* usage;       // the usage text --help prints first
  // --help lists the flags defined in files whose path contains this ("tools/opt/"): the
  // tool's own, not every flag linked into the binary.
  const char* main_file;
  // Flags that also work bare, with the value given here: {"--copy-ledger", "text"}.
  std::vector<std::pair<std::string, std::string>> bare_values = {};
};

// "--list-ops" for absl's "list_ops".
inline std::string DashedFlagName(absl::string_view name) {
  std::string s(name);
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

// The tool's usage text and its own flags, each with its default and help, by name.
inline std::string ToolHelp(const ToolCommandLine& tool) {
  std::vector<absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (absl::StrContains(flag->Filename(), tool.main_file)) flags.push_back(flag);
  }
  std::sort(flags.begin(), flags.end(),
            [](const absl::CommandLineFlag* a, const absl::CommandLineFlag* b) {
              return a->Name() < b->Name();
            });
  std::string out = absl::StrCat("usage: ", tool.usage, "\n\nflags:\n");
  for (const absl::CommandLineFlag* f : flags) {
    const std::string def = f->DefaultValue();
    absl::StrAppend(&out, "  --", DashedFlagName(f->Name()),
                    def.empty() ? "" : absl::StrCat(" (default: ", def, ")"), "\n");
    // The help text wrapped at 80 columns, indented under its flag.
    std::string line = "      ";
    for (absl::string_view word : absl::StrSplit(f->Help(), ' ', absl::SkipEmpty())) {
      if (line.size() + word.size() > 80 && line.size() > 6) {
        absl::StrAppend(&out, line, "\n");
        line = "      ";
      }
      absl::StrAppend(&line, line.size() > 6 ? " " : "", word);
    }
    absl::StrAppend(&out, line, "\n");
  }
  absl::StrAppend(&out, "  --help\n      print this text and exit\n",
                  "  --version\n      print the version and build type and exit\n");
  return out;
}

// Parses the command line after handling --help and --version itself (absl's exit with status
// 1 after --help and print its own library's build type: a Release tool said "Debug build").
// Dashed spellings (--list-ops, as the docs write them) are accepted for absl's underscore flag
// names. Returns the positional arguments (argv[0] first).
inline std::vector<std::string> ParseToolCommandLine(int argc, char** argv,
                                                     const ToolCommandLine& tool) {
  absl::SetProgramUsageMessage(tool.usage);
  static std::string file;
  file = tool.main_file;
  absl::FlagsUsageConfig usage;
  usage.contains_helpshort_flags = [](absl::string_view f) { return absl::StrContains(f, file); };
  usage.contains_help_flags = usage.contains_helpshort_flags;
  absl::SetFlagsUsageConfig(usage);
  std::vector<std::string> storage(argv, argv + argc);
  for (size_t i = 1; i < storage.size(); ++i) {
    const std::string& a = storage[i];
    if (a == "--") break;
    if (a == "--help" || a == "-h" || a == "--helpfull" || a == "--helpshort") {
      std::fputs(ToolHelp(tool).c_str(), stdout);
      std::exit(0);
    }
    if (a == "--version") {
      std::printf("%s %s (%s build)\n", tool.name, HETPASS_VERSION, HETPASS_BUILD_TYPE);
      std::exit(0);
    }
  }
  auto underscored = [](std::string a) {
    if (a.size() > 2 && a[0] == '-' && a[1] == '-') {
      const size_t end = std::min(a.find('='), a.size());
      std::replace(a.begin() + 2, a.begin() + end, '-', '_');
    }
    return a;
  };
  for (std::string& a : storage) {
    a = underscored(a);
    for (const auto& [flag, value] : tool.bare_values) {
      if (a == underscored(flag)) a = absl::StrCat(a, "=", value);
    }
  }
  std::vector<char*> pointers;
  for (std::string& a : storage) pointers.push_back(a.data());
  std::vector<char*> positional = absl::ParseCommandLine(argc, pointers.data());
  return std::vector<std::string>(positional.begin(), positional.end());
}

}  // namespace hetpass::tools

#endif  // HETPASS_TOOLS_COMMON_COMMAND_LINE_H_
