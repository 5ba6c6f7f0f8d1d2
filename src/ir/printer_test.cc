#include "passes/ir/printer.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ir_test_ops.h"
#include "passes/ir/builder.h"
#include "passes/ir/parser.h"
#include "passes/ir/structural.h"

namespace hetpass {
namespace {

using ::hetpass::testing::TestRegistry;
using ::testing::HasSubstr;

std::unique_ptr<Module> MustParse(absl::string_view text, bool allow_elided = false) {
  ParseOptions options;
  options.registry = &TestRegistry();
  options.allow_elided_constants = allow_elided;
  auto m = ParseModule(text, options);
  EXPECT_TRUE(m.ok()) << m.status() << "\n" << text;
  return m.ok() ? *std::move(m) : std::make_unique<Module>();
}

// print(parse(print(m))) == print(m), and the reparsed module is structurally equal.
std::string ExpectRoundTrip(const Module& m, const PrintOptions& print_options = {}) {
  const std::string printed = PrintModule(m, print_options);
  auto again = MustParse(printed, print_options.elide_large_constants);
  EXPECT_EQ(PrintModule(*again, print_options), printed);
  std::string why;
  if (!print_options.elide_large_constants) {
    EXPECT_TRUE(StructurallyEqual(m, *again, &why)) << why << "\n" << printed;
    EXPECT_EQ(StructuralHash(m), StructuralHash(*again));
  }
  return printed;
}

std::string RoundTripText(absl::string_view text, const PrintOptions& print_options = {}) {
  auto m = MustParse(text, print_options.elide_large_constants);
  return ExpectRoundTrip(*m, print_options);
}

// The example of the text format, exactly as the printer writes it.
constexpr char kExample[] =
    R"(def @main(%x: f32[n, 1024], %w: f32[512, 1024], %cond: bool[], %m: i64[], %c0: bool[]) -> f32[n, 512] {
  %0 = nn.dense(%x, %w) : f32[n, 512] @sim
  %c = constant<[1, 2]> : i64[2]
  %v, %i = topk(%0) {k = 2} : f32[n, 2], i64[n, 2]
  %1 = if (%cond) {
    %2 = nn.relu(%0) : f32[n, 512]
    yield %2
  } else {
    yield %0
  } : f32[n, 512]
  %3 = loop(%m, %c0, %0) (%it: i64[], %cond_in: bool[], %acc: f32[n, 512]) {
    %4 = add(%acc, %acc) : f32[n, 512]
    yield %cond_in, %4
  } : f32[n, 512]
  %t = tuple(%v, %i) : (f32[n, 2], i64[n, 2])
  %g = get_item(%t) {index = 0} : f32[n, 2]
  %r = invoke @helper(%g) : f32[n, 2]
  %5 = nn.relu(%3) loc("Relu_7")
  return %1
}

def @helper(%a: f32[n, 2]) -> f32[n, 2] {
  return %a
}
)";

TEST(PrinterTest, PrintsTheDocumentedFormExactly) {
  auto m = MustParse(kExample);
  EXPECT_EQ(PrintModule(*m), kExample);
  ExpectRoundTrip(*m);
}

TEST(PrinterTest, PrintFunctionPrintsOneFunction) {
  auto m = MustParse(kExample);
  EXPECT_EQ(PrintFunction(*m->functions()[1]),
            "def @helper(%a: f32[n, 2]) -> f32[n, 2] {\n  return %a\n}\n");
  EXPECT_EQ(PrintModule(Module()), "");
}

TEST(PrinterTest, NumbersUnnamedValuesInProgramOrderAndKeepsNames) {
  const std::string printed = RoundTripText(R"(def @f(%7: f32[4], %x: f32[4]) {
  %41 = add(%7, %x)
  %y = nn.relu(%41)
  %3 = add(%y, %41)
  return %3
}
)");
  EXPECT_EQ(printed, R"(def @f(%0: f32[4], %x: f32[4]) {
  %1 = add(%0, %x)
  %y = nn.relu(%1)
  %2 = add(%y, %1)
  return %2
}
)");
}

TEST(PrinterTest, MakesNamesUniqueAndValid) {
  Module m;
  Function* f = m.AddFunction("f");
  Value* x = f->body().AddParam(Type::Tensor(DType::kF32, {4}), "x");
  Builder b(&f->body(), &TestRegistry());
  Value* y1 = *b.Call("nn.relu", {x}, {}, "y");
  Value* y2 = *b.Call("nn.relu", {y1}, {}, "y");
  Value* y3 = *b.Call("add", {y1, y2}, {}, "y_1");  // collides with the renamed second %y
  Value* odd = *b.Call("nn.relu", {y3}, {}, "Conv/Relu:0");
  Value* digit = *b.Call("nn.relu", {odd}, {}, "1st");
  Value* number = *b.Call("nn.relu", {digit}, {}, "42");
  f->body().set_results({number});
  const std::string printed = ExpectRoundTrip(m);
  EXPECT_EQ(printed, R"(def @f(%x: f32[4]) {
  %y = nn.relu(%x)
  %y_1 = nn.relu(%y)
  %y_1_1 = add(%y, %y_1)
  %Conv_Relu_0 = nn.relu(%y_1_1)
  %_1st = nn.relu(%Conv_Relu_0)
  %0 = nn.relu(%_1st)
  return %0
}
)");
}

TEST(PrinterTest, EveryNodeKindWithCapturesAndNestedRegions) {
  RoundTripText(R"(def @f(%x: f32[n, 4], %c: bool[], %k: i64[]) -> f32[n, 4], f32[?, n, 4] {
  %t = tuple(%x, %k) : (f32[n, 4], i64[])
  %e = tuple()
  %g = get_item(%t) {index = 1} : i64[]
  %r = if (%c) {
    %inner = if (%c) {
      %a = add(%x, %x) : f32[n, 4] @cuda
      yield %a
    } else {
      yield %x
    }
    yield %inner
  } else {
    %l, %s = loop(%g, %c, %x) (%i: i64[], %ci: bool[], %acc: f32[n, 4]) {
      %b = add(%acc, %x)
      yield %ci, %b, %acc
    }
    yield %l
  } : f32[n, 4]
  %scan, %last = loop(%k, %c, %r) (%i, %ci, %acc) {
    yield %ci, %acc, %acc
  } : f32[n, 4], f32[?, n, 4]
  %w = invoke @g(%x, %r) : f32[n, 4]
  invoke @h()
  test.sink(%w) @cpu
  return %w, %last
}

def @g(%a: f32[n, 4], %b: f32[n, 4]) -> f32[n, 4] {
  return %a
}

def @h() {
  return
}
)");
}

TEST(PrinterTest, ConstantsOfEveryDtype) {
  const std::string printed = RoundTripText(R"(def @f() {
  %a = constant<[0.1, -2.5, 65504.0, 6.1035156e-05]> : f16[4]
  %b = constant<[0.1, -3.0e+38, 1.0e-40]> : bf16[3]
  %c = constant<[0.1, 3.4028235e+38, 1.0e-45, -0.0, inf, -inf, 16777216.0]> : f32[7]
  %d = constant<[0.1, 1.7976931348623157e+308, 5.0e-324, 0.30000000000000004, 1e100]> : f64[5]
  %e = constant<[-128, 127]> : i8[2]
  %f = constant<[-2147483648, 2147483647]> : i32[2]
  %g = constant<[-9223372036854775808, 9223372036854775807]> : i64[2]
  %h = constant<[0, 255]> : u8[2]
  %h16 = constant<[-32768, 32767]> : i16[2]
  %u16 = constant<[0, 65535]> : u16[2]
  %u32 = constant<[0, 4294967295]> : u32[2]
  %u64 = constant<[0, 9223372036854775807]> : u64[2]
  %i = constant<[true, false]> : bool[2]
  %j = constant<1.5> : f32[]
  %k = constant<[]> : f32[0, 3]
  %l = constant<[7]> : i64[1]
  return %a
}
)");
  // f16 and bf16 print the (float) value they hold; every float prints its shortest form.
  EXPECT_THAT(printed, HasSubstr("constant<[0.099975586, -2.5, 65504.0, 6.1035156e-05]> : f16[4]"));
  EXPECT_THAT(printed, HasSubstr("constant<[0.100097656, -3.0040553e+38, 9.1835e-41]> : bf16[3]"));
  EXPECT_THAT(printed,
              HasSubstr("constant<[0.1, 3.4028235e+38, 1e-45, -0.0, inf, -inf, 16777216.0]>"));
  EXPECT_THAT(printed, HasSubstr("constant<[0.1, 1.7976931348623157e+308, 5e-324, "
                                 "0.30000000000000004, 1e+100]> : f64[5]"));
  EXPECT_THAT(printed, HasSubstr("%j = constant<1.5> : f32[]"));
  EXPECT_THAT(printed, HasSubstr("%k = constant<[]> : f32[0, 3]"));
  EXPECT_THAT(printed, HasSubstr("%l = constant<[7]> : i64[1]"));
  EXPECT_THAT(printed, HasSubstr("%i = constant<[true, false]> : bool[2]"));
  EXPECT_THAT(printed, HasSubstr("%u32 = constant<[0, 4294967295]> : u32[2]"));
}

// Tests that u64 values from 2^63 up survive printing and parsing (the hex form; the parser
// reads decimal integers as int64) and that out-of-range literals of the new integer dtypes
// are errors naming the dtype.
TEST(PrinterTest, WideUnsignedAndSixteenBitConstants) {
  Module m;
  Function* f = m.AddFunction("f");
  Builder b(&f->body(), &TestRegistry());
  Value* big = b.Constant(Tensor::FromInt64s(DType::kU64, {2}, {1, -1}), "big");  // 1, 2^64 - 1
  f->body().set_results({big});
  const std::string printed = ExpectRoundTrip(m);
  EXPECT_THAT(printed, HasSubstr("%big = constant<0x0100000000000000ffffffffffffffff> : u64[2]"));
  for (const char* text : {"constant<[65536]> : u16[1]", "constant<[-1]> : u32[1]",
                           "constant<[32768]> : i16[1]", "constant<[-1]> : u64[1]"}) {
    auto parsed = ParseModule(absl::StrCat("def @f() {\n  %a = ", text, "\n  return %a\n}\n"));
    EXPECT_FALSE(parsed.ok()) << text;
    EXPECT_THAT(parsed.status().message(), HasSubstr("out of range")) << text;
  }
}

TEST(PrinterTest, LargeConstantsPrintAsHexOrElided) {
  Module m;
  Function* f = m.AddFunction("f");
  Builder b(&f->body(), &TestRegistry());
  std::vector<int64_t> values(20);
  for (int i = 0; i < 20; ++i) values[i] = i * 1000 - 3;
  Value* big = b.Constant(Tensor::FromInt64s(DType::kI32, {4, 5}, values), "big");
  Value* small = b.Constant(Tensor::FromInt64s(DType::kI64, {2}, {1, 2}));
  f->body().set_results({big, small});

  const std::string printed = ExpectRoundTrip(m);
  EXPECT_THAT(printed, HasSubstr("%big = constant<0xfdffffffe5030000cd070000"));
  EXPECT_THAT(printed, HasSubstr(": i32[4, 5]"));

  PrintOptions inline_all;
  inline_all.max_inline_elements = 100;
  EXPECT_THAT(ExpectRoundTrip(m, inline_all), HasSubstr("constant<[-3, 997, 1997,"));

  PrintOptions tiny;
  tiny.max_inline_elements = 1;
  EXPECT_THAT(ExpectRoundTrip(m, tiny), HasSubstr("constant<0x01000000000000000200000000000000>"));

  PrintOptions elide;
  elide.elide_large_constants = true;
  const std::string elided = ExpectRoundTrip(m, elide);
  EXPECT_THAT(elided, HasSubstr("%big = constant<elided> : i32[4, 5]"));
  EXPECT_THAT(elided, HasSubstr("constant<[1, 2]> : i64[2]"));
}

TEST(PrinterTest, NaNConstantsKeepTheirBits) {
  Module m;
  Function* f = m.AddFunction("f");
  Builder b(&f->body(), &TestRegistry());
  Tensor t = Tensor::FromDoubles(DType::kF32, {2}, {1.0, 0.0});
  const uint32_t payload_nan = 0xffc00001u;
  std::memcpy(t.mutable_data() + 4, &payload_nan, 4);
  f->body().set_results({b.Constant(t)});
  EXPECT_THAT(ExpectRoundTrip(m), HasSubstr("constant<0x0000803f0100c0ff> : f32[2]"));
}

// Tests the element accessors of the 16-bit and unsigned dtypes: stores wrap to the width,
// loads sign- or zero-extend, and u64 reads and writes its full range through doubles (values
// from 2^63 up are not int64 values, so GetInt64 gives the bit pattern).
TEST(TensorTest, IntegerDTypesWrapAndExtend) {
  Tensor t = Tensor::Zeros(DType::kI16, {2});
  t.SetInt64(0, 40000);  // wraps to 40000 - 65536
  t.SetInt64(1, -1);
  EXPECT_EQ(t.GetInt64(0), 40000 - 65536);
  EXPECT_EQ(t.GetInt64(1), -1);
  Tensor u16 = Tensor::Zeros(DType::kU16, {1});
  u16.SetInt64(0, -1);
  EXPECT_EQ(u16.GetInt64(0), 65535);
  Tensor u32 = Tensor::Zeros(DType::kU32, {2});
  u32.SetInt64(0, -1);
  u32.SetDouble(1, 3e9);
  EXPECT_EQ(u32.GetInt64(0), 4294967295);
  EXPECT_EQ(u32.GetInt64(1), 3000000000);
  Tensor u64 = Tensor::Zeros(DType::kU64, {4});
  u64.SetDouble(0, 1.5e19);  // above INT64_MAX
  u64.SetDouble(1, 1e30);    // saturates
  u64.SetDouble(2, std::nan(""));
  u64.SetInt64(3, -1);
  EXPECT_EQ(static_cast<uint64_t>(u64.GetInt64(0)), 15000000000000000000u);
  EXPECT_EQ(u64.GetDouble(0), 1.5e19);
  EXPECT_EQ(static_cast<uint64_t>(u64.GetInt64(1)), UINT64_MAX);
  EXPECT_EQ(u64.GetInt64(2), 0);
  EXPECT_EQ(u64.GetDouble(3), 18446744073709551615.0);
  EXPECT_EQ(DTypeSize(DType::kU32), 4);
  EXPECT_TRUE(IsUnsigned(DType::kU16));
  EXPECT_FALSE(IsUnsigned(DType::kI16));
  EXPECT_TRUE(IsInteger(DType::kU64));
}

// Tests Tensor::ReleaseIfUnshared: shared bytes stay (false); unshared ones go, dtype and shape
// stay, data() is null, and a released tensor equals only itself.
TEST(TensorTest, ReleaseFreesOnlyUnsharedBytes) {
  Tensor t = Tensor::FromDoubles(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor copy = t;
  EXPECT_FALSE(t.ReleaseIfUnshared());
  EXPECT_FALSE(t.released());
  EXPECT_EQ(t.GetDouble(5), 6);
  copy = Tensor();
  EXPECT_TRUE(t.ReleaseIfUnshared());
  EXPECT_TRUE(t.released());
  EXPECT_EQ(t.data(), nullptr);
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.type().ToString(), "f32[2, 3]");
  EXPECT_EQ(t.DebugString(), "f32[2, 3]{released}");
  EXPECT_TRUE(t == t);
  Tensor other = Tensor::Zeros(DType::kF32, {2, 3});
  EXPECT_FALSE(t == other);
  EXPECT_FALSE(other == t);
  ASSERT_TRUE(other.ReleaseIfUnshared());
  EXPECT_FALSE(t == other);  // both released: their values are unknown
  EXPECT_EQ(t.Hash(), other.Hash());
  EXPECT_TRUE(t.ReleaseIfUnshared());  // again: nothing left to free
}

// Tests that Tensor::FromBytes rejects a shape whose byte size overflows instead of letting it
// wrap to match the data (fuzzer findings: f64[2^61] over 0 bytes, f32[2^62 + 1] over 4 bytes),
// and still checks the size of shapes that fit.
TEST(TensorTest, FromBytesRejectsByteSizeOverflow) {
  auto f64 = Tensor::FromBytes(DType::kF64, {int64_t{1} << 61}, "");
  ASSERT_FALSE(f64.ok());
  EXPECT_EQ(f64.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(f64.status().message()),
              HasSubstr("tensor f64[2305843009213693952] has 2305843009213693952 elements, "
                        "whose byte size overflows int64"));
  auto f32 = Tensor::FromBytes(DType::kF32, {(int64_t{1} << 62) + 1}, std::string(4, '\0'));
  ASSERT_FALSE(f32.ok());
  EXPECT_THAT(std::string(f32.status().message()), HasSubstr("byte size overflows int64"));
  auto count = Tensor::FromBytes(DType::kI8, {INT64_MAX, 2}, "");
  ASSERT_FALSE(count.ok());
  EXPECT_THAT(std::string(count.status().message()), HasSubstr("element count overflows int64"));
  auto mismatch = Tensor::FromBytes(DType::kI64, {2}, std::string(8, '\0'));
  ASSERT_FALSE(mismatch.ok());
  EXPECT_THAT(std::string(mismatch.status().message()),
              HasSubstr("has 8 bytes but i64[2] needs 16"));
  auto ok = Tensor::FromBytes(DType::kI32, {2}, std::string(8, '\0'));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->num_elements(), 2);
}

TEST(PrinterTest, AttributesOfEveryType) {
  const std::string printed = RoundTripText(R"(def @f(%x: f32[4]) {
  %a = test.attrs(%x) {b = true, dt = bf16, f = 0.1, fl = [1.5, -2.0, inf, 1e-300], i = -9223372036854775808, il = [1, -2, 3], s = "quote\" back\\ nl\n tab\t ctl\x01 utf8 \xc3\xa9"}
  %b = test.attrs(%x) {f = nan, fl = f[], il = []}
  %c = test.attrs(%x) {dt = u8, f = -inf, fl = [1, 2]}
  return %a
}
)");
  // `fl = f[]` and `il = []` equal the schema defaults, which are not printed.
  EXPECT_THAT(printed, HasSubstr("%b = test.attrs(%x) {f = nan}"));
  EXPECT_THAT(printed, HasSubstr("f = nan"));
  EXPECT_THAT(printed, HasSubstr("fl = [1.0, 2.0]"));
  EXPECT_THAT(printed, HasSubstr("s = \"quote\\\" back\\\\ nl\\n tab\\t ctl\\x01"));
  for (absl::string_view dtype : {"f16", "bf16", "f32", "f64", "i8", "i32", "i64", "u8", "bool"}) {
    RoundTripText(absl::StrCat("def @f(%x: ", dtype, "[2]) {\n  %a = test.attrs(%x) {dt = ", dtype,
                               "}\n  return %a\n}\n"));
  }
}

TEST(PrinterTest, SymbolicDimsOfEveryOperator) {
  const std::string printed = RoundTripText(
      R"(def @f(%x: f32[n + m, n - 1, 2*n, n*m, n//4, (n + 3)//4, n % 8, (n*2 + 1) % 4, -n, 1 - n, min(n, m), max(n, 8), min(max(a, b), c + 1), (n + 1)*(m + 2), ?, 0, n//m, n % m, ((h + 2*1 - 3)//2 + 1)*4]) {
  return %x
}
)");
  EXPECT_THAT(printed, HasSubstr("n//4"));
  EXPECT_THAT(printed, HasSubstr("min(m, n), max(8, n), min(max(a, b), c + 1)"));
  EXPECT_THAT(printed, HasSubstr(", ?, 0,"));
}

TEST(PrinterTest, TuplesAndUnknownDims) {
  RoundTripText(
      R"(def @f(%t: (f32[?, 4], (i64[], bool[?])), %u: ()) -> (f32[?, 4], (i64[], bool[?])) {
  %a = get_item(%t) {index = 1} : (i64[], bool[?])
  %b = get_item(%a) {index = 0} : i64[]
  %c = tuple(%t, %u, %b) : ((f32[?, 4], (i64[], bool[?])), (), i64[])
  return %t
}
)");
}

TEST(PrinterTest, DevicesAndLocations) {
  const std::string printed = RoundTripText(R"(def @f(%x: f32[4]) {
  %a = nn.relu(%x) @cpu loc("Relu_1")
  %b = nn.relu(%a) : f32[4] @cuda
  %c = nn.relu(%b) : f32[4] @sim loc("a \"quoted\" name")
  %d = nn.relu(%c) loc("only_loc")
  return %d
}
)");
  EXPECT_THAT(printed, HasSubstr("%a = nn.relu(%x) @cpu loc(\"Relu_1\")\n"));
  EXPECT_THAT(printed, HasSubstr("@sim loc(\"a \\\"quoted\\\" name\")\n"));
}

TEST(PrinterTest, DoesNotCrashOnInvalidIr) {
  Module m;
  Function* f = m.AddFunction("f");
  Function other("other");
  Value* foreign = other.body().AddParam(Type());
  auto node = std::make_unique<Node>(NodeKind::kCall);  // no op
  node->AddOperand(foreign);
  node->AddResult();
  f->body().Append(std::move(node));
  const std::string printed = PrintModule(m);
  EXPECT_THAT(printed, HasSubstr("%0 = <null op>(%<undefined>)"));
}

}  // namespace
}  // namespace hetpass

namespace hetpass {
namespace {

// Tests that parameter devices and function attributes print and parse back exactly.
TEST(PrinterTest, ParamDevicesAndFunctionAttributes) {
  const std::string printed = RoundTripText(R"(def @fused_0(%p0: f32[n, 4] @sim, %p1: f32[4]) -> f32[n, 4] attributes {primitive = true} {
  %0 = add(%p0, %p1) : f32[n, 4] @sim
  return %0
}
)");
  EXPECT_THAT(printed, HasSubstr("%p0: f32[n, 4] @sim, %p1: f32[4])"));
  EXPECT_THAT(printed, HasSubstr("-> f32[n, 4] attributes {primitive = true} {"));
}

// Tests that a bad device on a parameter and a malformed attribute block are located errors.
TEST(PrinterTest, ParamDeviceAndAttributeErrors) {
  auto bad_device = ParseModule("def @f(%x: f32[4] @gpu) {\n  return %x\n}\n");
  ASSERT_FALSE(bad_device.ok());
  EXPECT_THAT(bad_device.status().message(), HasSubstr("1:19: unknown device '@gpu'"));
  auto bad_attrs = ParseModule("def @f(%x: f32[4]) attributes (x) {\n  return %x\n}\n");
  ASSERT_FALSE(bad_attrs.ok());
  EXPECT_THAT(bad_attrs.status().message(), HasSubstr("1:31: expected '{' after 'attributes'"));
}

}  // namespace
}  // namespace hetpass

namespace hetpass {
namespace {

// Tests that a shape-function mask holding every input dependence prints in the word form and
// parses back to the same typed attribute, and that the empty mask keeps its type.
TEST(PrinterTest, ShapeFunctionMasksOfEveryDependence) {
  const std::string printed = RoundTripText(R"(def @main(%a: f32[4], %b: f32[4], %c: i64[2], %d: i64[2]) {
  %s = invoke @p(%a, %b, %c, %d) {mask = [none, shape, value, shape+value], shape_func = true} : i64[1]
  %t = invoke @q() {mask = dep[], shape_func = true} : i64[1]
  return %s
}

def @p(%a: f32[4], %b: f32[4], %c: i64[2], %d: i64[2]) attributes {primitive = true} {
  return %a
}

def @q() attributes {primitive = true} {
  %x = constant<[1]> : i64[1]
  return %x
}
)");
  EXPECT_THAT(printed, HasSubstr("{mask = [none, shape, value, shape+value], shape_func = true}"));
  EXPECT_THAT(printed, HasSubstr("{mask = dep[], shape_func = true}"));
  auto m = MustParse(printed);
  const Node& invoke = *m->FindFunction("main")->body().nodes()[0];
  ASSERT_NE(ShapeFunctionMask(invoke), nullptr);
  EXPECT_EQ(*ShapeFunctionMask(invoke),
            (std::vector<InputDep>{InputDep::kNone, InputDep::kShape, InputDep::kValue,
                                   InputDep::kShapeAndValue}));
}

// Tests that the integer masks older text spelled still read (as the typed attribute, printed
// in words), and that modules differing only in one mask entry are structurally different.
TEST(PrinterTest, IntegerMasksReadAsTypedMasks) {
  constexpr char kText[] = R"(def @main(%a: f32[4], %b: i64[2]) {
  %s = invoke @p(%a, %b) {mask = [MASK], shape_func = true} : i64[1]
  return %s
}

def @p(%a: f32[4], %b: i64[2]) attributes {primitive = true} {
  return %a
}
)";
  auto with = [&](absl::string_view mask) {
    return MustParse(absl::StrReplaceAll(kText, {{"MASK", mask}}));
  };
  auto ints = with("1, 3");
  auto words = with("shape, shape+value");
  EXPECT_EQ(PrintModule(*ints), PrintModule(*words));
  EXPECT_TRUE(StructurallyEqual(*ints, *words));
  EXPECT_EQ(StructuralHash(*ints), StructuralHash(*words));
  auto other = with("shape, value");
  EXPECT_FALSE(StructurallyEqual(*words, *other));
  EXPECT_NE(StructuralHash(*words), StructuralHash(*other));
}

}  // namespace
}  // namespace hetpass
