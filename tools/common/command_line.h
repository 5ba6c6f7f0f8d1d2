// Command-line handling shared by the hetpass tools (hetpass-opt, pass-viz).
#ifndef HETPASS_TOOLS_COMMON_COMMAND_LINE_H_
#define HETPASS_TOOLS_COMMON_COMMAND_LINE_H_

#include <algorithm>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace hetpass::tools {

// Sets the usage text and makes --help list the flags defined in the file whose path contains
// `main_file` (absl looks for a file named after the binary, which ours are not), then parses
// the command line. Dashed spellings (--list-ops, as the docs write them) are accepted for
// absl's underscore flag names. Returns the positional arguments (argv[0] first).
inline std::vector<std::string> ParseToolCommandLine(int argc, char** argv,
                                                     const char* usage_text,
                                                     const char* main_file) {
  absl::SetProgramUsageMessage(usage_text);
  static std::string file;
  file = main_file;
  absl::FlagsUsageConfig usage;
  usage.contains_helpshort_flags = [](absl::string_view f) { return absl::StrContains(f, file); };
  usage.contains_help_flags = usage.contains_helpshort_flags;
  absl::SetFlagsUsageConfig(usage);
  std::vector<std::string> storage(argv, argv + argc);
  for (std::string& a : storage) {
    if (a.size() > 2 && a[0] == '-' && a[1] == '-') {
      const size_t end = std::min(a.find('='), a.size());
      std::replace(a.begin() + 2, a.begin() + end, '-', '_');
    }
  }
  std::vector<char*> pointers;
  for (std::string& a : storage) pointers.push_back(a.data());
  std::vector<char*> positional = absl::ParseCommandLine(argc, pointers.data());
  return std::vector<std::string>(positional.begin(), positional.end());
}

}  // namespace hetpass::tools

#endif  // HETPASS_TOOLS_COMMON_COMMAND_LINE_H_
