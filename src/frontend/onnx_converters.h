// Internal to the ONNX frontend: the parts of the converter table. The converters are split per
// op family as src/shape_funcs/ is: each onnx_convert_<family>.cc holds one function per ONNX op
// type of its family, each emitting registry ops through ImportContext (onnx_context.h), and
// appends them to the table with its Add<Family>Converters below; onnx_converters.cc assembles
// the table behind FindConverter. The helpers they share are in onnx_converter_helpers.h.
//
// Conventions:
//   - Attributes are read with defaults from the ONNX schema of the op at opsets 11-17. Inputs
//     that moved from attribute to input over that range (Unsqueeze/Squeeze/ReduceSum axes at
//     13, Pad pads at 11) are read from wherever the node's opset puts them.
//   - Where an input's VALUES decide the output shape (Reshape.shape, Slice.*, Expand.shape,
//     Tile.repeats, TopK.K, ...) a constant input gives the static registry op with the values
//     as attributes (reshape, strided_slice, ...), a computed one the dyn.* op, whose per-input
//     mask says `value` so the device planner keeps that input on the host.
//   - Weights are folded here only where the layout has to change (MatMul's B is transposed
//     for nn.dense, BatchNormalization becomes one multiply and one add); everything else is
//     left to fold-constants.
//   - A converter that meets a form it cannot map returns Unimplemented naming op, node and
//     opset (ImportContext::Unimplemented); it never crashes on user input.
#ifndef HETPASS_FRONTEND_ONNX_CONVERTERS_H_
#define HETPASS_FRONTEND_ONNX_CONVERTERS_H_

#include <vector>

#include "absl/strings/string_view.h"
#include "frontend/onnx_context.h"

namespace hetpass::onnx_frontend {

// One row of the table: the converter of one op type of the default domain.
struct ConverterEntry {
  absl::string_view op_type;
  Converter convert;
};
using ConverterTable = std::vector<ConverterEntry>;

// One function a family (onnx_convert_<family>.cc), each appending its converters to `table`.
// Adding a family means adding a line here and one in onnx_converters.cc.
void AddElementwiseConverters(ConverterTable& table);  // unary, binary, logic, Cast, Clip, Where
void AddLinalgConverters(ConverterTable& table);       // Gemm, MatMul, Det
void AddTransformConverters(ConverterTable& table);    // Reshape, Squeeze, Expand, Tile, ...
void AddSliceConverters(ConverterTable& table);        // Gather(Elements/ND), Split, Slice
void AddDynamicConverters(ConverterTable& table);      // Shape, Size, Range, Constant, EyeLike
void AddAlgorithmConverters(ConverterTable& table);    // NonZero, TopK, NMS, Unique
void AddNnConverters(ConverterTable& table);           // Conv, (un)pooling, normalization, Pad
void AddImageConverters(ConverterTable& table);        // RoiAlign, Resize, GridSample
void AddReduceConverters(ConverterTable& table);       // Reduce*, ArgMax, ArgMin
void AddLossConverters(ConverterTable& table);         // NegativeLogLikelihoodLoss, SCE loss
void AddQuantConverters(ConverterTable& table);        // (De)QuantizeLinear, QLinear*, *Integer
void AddSignalConverters(ConverterTable& table);       // windows, MelWeightMatrix, DFT, STFT
void AddSequenceConverters(ConverterTable& table);     // Compress, ReverseSequence
void AddEinsumConverters(ConverterTable& table);       // Einsum
void AddContainerConverters(ConverterTable& table);    // Sequence*, Optional*
void AddRecurrentConverters(ConverterTable& table);    // RNN, GRU, LSTM
void AddRandomConverters(ConverterTable& table);       // Random*, Bernoulli

}  // namespace hetpass::onnx_frontend

#endif  // HETPASS_FRONTEND_ONNX_CONVERTERS_H_
