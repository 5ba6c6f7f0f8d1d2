#!/usr/bin/env python3
"""hostile_hir_seeds.py OUT_DIR: writes small text IR modules with extreme values, seeds for
ir_parse_fuzzer (test/fuzz/make_corpus.sh adds them to the corpus as hostile_*.hir). Prints the
count.

Random mutation of text rarely writes INT64_MIN, a 300-deep region nest or a 2^62-element
elided constant: these seeds start there (integer and float literals at and beyond the int64 and
dtype limits, symbolic dims whose arithmetic overflows or divides by zero, nesting past the
parser's limits, escapes, numeric value names, regions and invokes), and the fuzzer mutates
from them. Most are valid syntax; the parser must answer every one with a module or an error
naming the line and column.
"""
import os
import re
import sys

MAX = (1 << 63) - 1
MIN = -(1 << 63)


def t(text):
    """$MAX, $MIN, $2^k stand for the integers (no %-formatting: '%x' is IR)."""
    text = text.replace("$MAX", str(MAX)).replace("$MIN", str(MIN))
    return re.sub(r"\$2\^(\d+)", lambda m: str(1 << int(m.group(1))), text)


def fn(body, params="%x: f32[4]", results=""):
    arrow = " -> " + results if results else ""
    return t("def @main(" + params + ")" + arrow + " {\n" + body + "}\n")


def cases():
    c = {}
    c["dim_max"] = fn("  return %x\n", "%x: f32[$MAX, 2]")
    c["dim_min_literal"] = fn("  return %x\n", "%x: f32[$MIN * n]")
    c["dim_min_times_minus_one"] = fn("  return %x\n", "%x: f32[-($MIN) * (-1) + n]")
    c["dim_overflow_sum"] = fn("  return %x\n", "%x: f32[n + $MAX + $MAX]")
    c["dim_overflow_product"] = fn("  return %x\n", "%x: f32[n * $MAX * $MAX]")
    c["dim_floordiv_min"] = fn("  return %x\n",
                               "%x: f32[(n + $MIN) // (-1), $MIN // (-1), n % (-1)]")
    c["dim_div_zero"] = fn("  return %x\n", "%x: f32[n // 0, n % 0, (n*0) // (n-n)]")
    c["dim_min_max_nested"] = fn("  return %x\n", "%x: f32[min(max(n, $MIN), min($MAX, m)) % 3]")
    c["dim_too_large"] = fn("  return %x\n", "%x: f32[9223372036854775808]")
    c["dims_product_overflow"] = fn(
        "  %c = constant<elided> : f32[$2^32, $2^32]\n  return %c\n", "")
    c["elided_huge"] = fn("  %c = constant<elided> : f64[$2^62]\n  return %c\n", "")
    c["elided_large"] = fn("  %c = constant<elided> : f32[1024, 1024, 64]\n  return %c\n", "")
    c["const_i64_extremes"] = fn("  %c = constant<[$MIN, $MAX, -0]> : i64[3]\n  return %c\n", "")
    c["const_i64_beyond"] = fn("  %c = constant<[-$2^64]> : i64[1]\n  return %c\n", "")
    c["const_floats"] = fn(
        "  %c = constant<[1e308, 1e-330, 65519.99, 3.4028235e38]> : f16[4]\n  return %c\n", "")
    c["const_f32_edge"] = fn(
        "  %c = constant<[3.4028235677973366e38, -1e39, 1.0e-46]> : f32[3]\n  return %c\n", "")
    c["const_bool_ints"] = fn(
        "  %c = constant<[true, false, 1, 0, 2]> : bool[5]\n  return %c\n", "")
    c["const_hex"] = fn("  %c = constant<0x0000c07f0000807f> : f32[2]\n  return %c\n", "")
    c["const_hex_odd"] = fn("  %c = constant<0x000> : u8[2]\n  return %c\n", "")
    c["const_scalar_types"] = fn(
        "  %a = constant<-128> : i8[]\n  %b = constant<255> : u8[]\n"
        "  %c = constant<-2147483648> : i32[]\n  %d = constant<2.5> : bf16[]\n  return %d\n", "")
    c["numeric_names"] = fn(
        "  %4294967296 = nn.relu(%999999999)\n  %0 = nn.relu(%4294967296)\n  return %0\n",
        "%999999999: f32[4]")
    c["names_reused_in_regions"] = fn(
        "  %r = if (%c) {\n    %t = nn.relu(%x)\n    yield %t\n  } else {\n"
        "    %t = exp(%x)\n    yield %t\n  }\n  return %r\n",
        "%x: f32[n], %c: bool[]")
    c["loop_scan"] = fn(
        "  %n = constant<3> : i64[]\n  %c = constant<true> : bool[]\n"
        "  %y, %s = loop(%n, %c, %x) (%i: i64[], %k: bool[], %a: f32[4]) {\n"
        "    %b = add(%a, %a)\n    yield %k, %b, %b\n  }\n  return %y\n")
    c["invoke_recursive"] = (
        "def @f(%x: f32[4]) -> f32[4] {\n  %y = invoke @f(%x)\n  return %y\n}\n"
        "def @main(%x: f32[4]) -> f32[4] {\n  %y = invoke @f(%x) {primitive = 1}\n  return %y\n}\n")
    c["invoke_undefined"] = fn("  %y = invoke @nowhere(%x)\n  return %y\n")
    c["tuples"] = fn(
        "  %t = tuple(%x, %x)\n  %u = tuple(%t, %x) : ((f32[4], f32[4]), f32[4])\n"
        "  %a = get_item(%u) {index = 0}\n  %b = get_item(%a) {index = $MAX}\n  return %b\n")
    c["attrs_extremes"] = fn(
        "  %r = reshape(%x) {newshape = [$MIN, -1, $MAX]}\n"
        "  %s = strided_slice(%x) {begin = [$MAX], end = [$MIN], strides = [$MIN]}\n"
        "  %c = cast(%x) {dtype = bool}\n  return %r\n")
    c["attrs_floats"] = fn(
        '  %s = image.resize2d(%x) {cubic_alpha = 1e400, method = "cubic\\x41\\n", '
        "size = [0, 0]}\n  return %s\n", "%x: f32[1, 1, 2, 2]")
    c["attr_empty_lists"] = fn(
        "  %s = nn.conv2d(%x, %w) {padding = [], strides = f[], dilation = []}\n  return %s\n",
        "%x: f32[1, 1, 4, 4], %w: f32[1, 1, 1, 1]")
    c["loc_escapes"] = fn(
        '  %y = nn.relu(%x) : f32[4] @sim loc("a\\"b\\\\c\\x00\\x7f\\t")\n  return %y\n')
    c["storage_type"] = fn("  return %s\n", "%s: storage[$MAX], %t: storage[n * $MAX]")
    c["unknown_and_symbols"] = fn("  return %x\n", "%x: f32[?, n, n_1, _, ?]")
    c["tuple_type_nesting"] = fn("  return %x\n", "%x: " + "(" * 1100 + "f32[1]" + ")" * 1100)
    c["dim_paren_nesting"] = fn("  return %x\n", "%x: f32[" + "(" * 1100 + "n" + ")" * 1100 + "]")
    c["dim_minus_chain"] = fn("  return %x\n", "%x: f32[" + "-" * 1100 + "n]")
    c["dim_min_nesting"] = fn("  return %x\n", "%x: f32[" + "min(n, " * 600 + "n" + ")" * 600 + "]")
    # 300 nested ifs, past the parser's region limit (256).
    depth = 300
    inner = "yield %x"
    for i in range(depth):
        inner = ("%r" + str(i) + " = if (%c) {\n" + inner + "\n} else {\nyield %x\n}\nyield %r"
                 + str(i))
    c["if_nesting"] = fn("  %c = constant<true> : bool[]\n" + inner[: inner.rindex("yield")]
                         + "return %r" + str(depth - 1) + "\n")
    c["many_results"] = fn(
        "  " + ", ".join("%v" + str(i) for i in range(64)) + " = topk(%x) {k = 1}\n  return %v0\n")
    c["comments_and_floordiv"] = (
        "// a comment // with slashes\ndef @main(%x: f32[n//2]) { // trailing\n"
        "  return %x // end\n}\n")
    c["crlf_tabs"] = "def @main(%x: f32[4])\t{\r\n\treturn %x\r\n}\r\n"
    return c


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: hostile_hir_seeds.py OUT_DIR")
    os.makedirs(sys.argv[1], exist_ok=True)
    all_cases = cases()
    for name, text in all_cases.items():
        with open(os.path.join(sys.argv[1], "hostile_%s.hir" % name), "w") as f:
            f.write(text)
    print(len(all_cases))


if __name__ == "__main__":
    main()
