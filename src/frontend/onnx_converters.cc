// The ONNX converter table: op type -> converter, assembled from the per-family lists of
// onnx_convert_<family>.cc (the conventions every converter follows are in onnx_converters.h),
// and the op types recognised but out of scope.
#include "frontend/onnx_converters.h"

namespace hetpass::onnx_frontend {
namespace {

// The explicit list of op families, built on first use (no static registration constructors).
const ConverterTable& AllConverters() {
  static const ConverterTable* const kTable = [] {
    auto* table = new ConverterTable;
    AddElementwiseConverters(*table);
    AddLinalgConverters(*table);
    AddTransformConverters(*table);
    AddSliceConverters(*table);
    AddDynamicConverters(*table);
    AddAlgorithmConverters(*table);
    AddNnConverters(*table);
    AddImageConverters(*table);
    AddReduceConverters(*table);
    AddLossConverters(*table);
    AddQuantConverters(*table);
    AddSignalConverters(*table);
    AddSequenceConverters(*table);
    AddEinsumConverters(*table);
    AddContainerConverters(*table);
    AddRecurrentConverters(*table);
    AddRandomConverters(*table);
    return table;
  }();
  return *kTable;
}

}  // namespace

Converter FindConverter(absl::string_view op_type) {
  for (const ConverterEntry& e : AllConverters()) {
    if (e.op_type == op_type) return e.convert;
  }
  return nullptr;
}

absl::string_view OutOfScopeReason(absl::string_view op_type) {
  // If and Loop are imported by the graph importer itself (their bodies become regions).
  if (op_type == "Scan") return "Scan is not supported (If and Loop are)";
  return "";
}

}  // namespace hetpass::onnx_frontend
