// Uses the installed package: parses a module, runs a pipeline, prints the result.
#include <iostream>

#include "passes/ir/parser.h"
#include "passes/ir/printer.h"
#include "passes/pass/pass_registry.h"

int main() {
  auto module = hetpass::ParseModule(
      "def @main(%x: f32[n, 4]) -> f32[n, 4] {\n"
      "  %0 = nn.relu(%x)\n"
      "  return %0\n"
      "}\n");
  if (!module.ok()) {
    std::cerr << module.status() << "\n";
    return 1;
  }
  auto pm = hetpass::ParsePipeline("infer-types");
  if (!pm.ok()) {
    std::cerr << pm.status() << "\n";
    return 1;
  }
  auto changed = (*pm)->Run(**module);
  if (!changed.ok()) {
    std::cerr << changed.status() << "\n";
    return 1;
  }
  std::cout << hetpass::PrintModule(**module);
  return 0;
}
