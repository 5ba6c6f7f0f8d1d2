#!/usr/bin/env python3
"""hostile_seeds.py [--tensors] OUT_DIR: writes small ONNX models with extreme values, seeds
for onnx_import_fuzzer (test/fuzz/make_corpus.sh adds them to the corpus as hostile_*.onnx);
with --tensors, TensorProtos for onnx_tensor_fuzzer instead (hostile_*.pb). Prints the count.

Random mutation of protobuf bytes rarely turns a dim, an axis or a constant into INT64_MIN or
2^62: these seeds start there, one op per model (a few chain Shape -> arithmetic -> a
shape-consuming op, so the extremes reach symbolic values and shape rules), and the fuzzer
mutates from them. Each is valid protobuf and mostly valid ONNX; the importer must answer every
one with a module or an error status. The models are encoded by hand (protobuf wire format), so
nothing beyond python3 is needed.
"""
import os
import struct
import sys

MAX = (1 << 63) - 1
MIN = -(1 << 63)
FLOAT, INT32, INT64, BOOL = 1, 6, 7, 9


# ---- protobuf wire format --------------------------------------------------------------------
def varint(n):
    n &= (1 << 64) - 1
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def key(field, wire):
    return varint((field << 3) | wire)


def ld(field, payload):  # length-delimited: bytes, strings, messages
    return key(field, 2) + varint(len(payload)) + payload


def vi(field, n):  # varint
    return key(field, 0) + varint(n)


def s(text):
    return text.encode()


# ---- ONNX messages (field numbers from onnx-ml.proto) ----------------------------------------
def tensor(name, dtype, dims, vals):  # TensorProto: dims 1, data_type 2, name 8, raw_data 9
    t = b"".join(vi(1, d) for d in dims) + vi(2, dtype) + ld(8, s(name))
    fmt = {INT64: "<q", FLOAT: "<f", INT32: "<i"}.get(dtype)
    raw = b"".join(struct.pack(fmt, v) for v in vals) if fmt else bytes(vals)
    return t + ld(9, raw)


def i64(name, vals, dims=None):
    return tensor(name, INT64, [len(vals)] if dims is None else dims, vals)


def f32(name, vals, dims=None):
    return tensor(name, FLOAT, [len(vals)] if dims is None else dims, vals)


# AttributeProto: name 1, f 2, i 3, t 5, ints 8, type 20 (FLOAT 1, INT 2, TENSOR 4, INTS 7).
def attr_i(name, v):
    return ld(5, ld(1, s(name)) + vi(3, v) + vi(20, 2))


def attr_ints(name, vs):
    return ld(5, ld(1, s(name)) + b"".join(vi(8, v) for v in vs) + vi(20, 7))


def attr_f(name, v):
    return ld(5, ld(1, s(name)) + key(2, 5) + struct.pack("<f", v) + vi(20, 1))


def attr_t(name, t):
    return ld(5, ld(1, s(name)) + ld(5, t) + vi(20, 4))


def node(op, ins, outs, *attrs):  # NodeProto: input 1, output 2, name 3, op_type 4
    return (b"".join(ld(1, s(i)) for i in ins) + b"".join(ld(2, s(o)) for o in outs) +
            ld(3, s(op + "_0")) + ld(4, s(op)) + b"".join(attrs))


def vinfo(name, dtype, dims):  # ValueInfoProto; a str dim is a dim_param
    shape = b"".join(ld(1, vi(1, d) if isinstance(d, int) else ld(2, s(d))) for d in dims)
    return ld(1, s(name)) + ld(2, ld(1, vi(1, dtype) + ld(2, shape)))


def model(nodes, inits=(), inputs=(("x", FLOAT, [4, 5]),), outputs=("y",), opset=13):
    g = b"".join(ld(1, n) for n in nodes) + ld(2, b"g") + b"".join(ld(5, t) for t in inits)
    g += b"".join(ld(11, vinfo(*i)) for i in inputs)
    g += b"".join(ld(12, ld(1, s(o))) for o in outputs)
    return vi(1, 8) + ld(8, ld(1, b"") + vi(2, opset)) + ld(7, g)


def tensor_cases():
    # TensorProto: dims 1, data_type 2, int32_data 5, int64_data 7, name 8, raw_data 9,
    # double_data 10, data_location 14 (EXTERNAL 1), segment 3 (begin 1, end 2).
    def t(dims, dtype, *fields):
        return b"".join(vi(1, d) for d in dims) + vi(2, dtype) + ld(8, b"t") + b"".join(fields)
    return {
        "f64_dims_2p61_empty_raw": t([1 << 61], 11, ld(9, b"")),
        "f32_dims_2p62_plus1_4_bytes": t([(1 << 62) + 1], FLOAT, ld(9, b"\0" * 4)),
        "i64_dims_max": t([MAX], INT64, ld(9, b"\0" * 8)),
        "i64_dims_max_max": t([MAX, MAX], INT64, ld(9, b"")),
        "f32_dims_zero_max": t([0, MAX], FLOAT, ld(9, b"")),
        "f32_dims_negative": t([-1, -1], FLOAT, ld(9, b"\0" * 4)),
        "i32_typed_dims_2p62": t([1 << 62], INT32, vi(5, 7)),
        "i64_typed_dims_min": t([MIN], INT64, vi(7, 7)),
        "f16_int32_data_huge": t([2], 10, vi(5, MAX), vi(5, MIN)),
        "bool_int32_data_huge": t([2], BOOL, vi(5, MAX), vi(5, 2)),
        "u8_int32_data_negative": t([1], 2, vi(5, -1)),
        "f64_double_data_short": t([3], 11, key(10, 1) + struct.pack("<d", 1.0)),
        "external_data": t([1], FLOAT, vi(14, 1)),
        "segmented": t([1], FLOAT, ld(3, vi(1, MIN) + vi(2, MAX)), ld(9, b"\0" * 4)),
        "unknown_dtype": t([1], 1000, ld(9, b"\0" * 4)),
        "string_dtype": t([1], 8, ld(9, b"\0" * 4)),
    }


def main():
    tensors = len(sys.argv) == 3 and sys.argv[1] == "--tensors"
    if len(sys.argv) != 2 and not tensors:
        sys.exit("usage: hostile_seeds.py [--tensors] OUT_DIR")
    if tensors:
        os.makedirs(sys.argv[2], exist_ok=True)
        for name, data in tensor_cases().items():
            with open(os.path.join(sys.argv[2], "hostile_%s.pb" % name), "wb") as f:
                f.write(data)
        print(len(tensor_cases()))
        return
    cases={}
    cases['slice_min_max_minstep']=model([node('Slice',['x','s','e','a','st'],['y'])],[i64('s',[MIN]),i64('e',[MAX]),i64('a',[0]),i64('st',[MIN])])
    cases['slice_rev_extremes']=model([node('Slice',['x','s','e','a','st'],['y'])],[i64('s',[MAX]),i64('e',[MIN]),i64('a',[0]),i64('st',[-1])])
    cases['slice_axis_min']=model([node('Slice',['x','s','e','a'],['y'])],[i64('s',[0]),i64('e',[1]),i64('a',[MIN])])
    cases['pad_max']=model([node('Pad',['x','p'],['y'])],[i64('p',[MAX,0,MAX,0])])
    cases['pad_min']=model([node('Pad',['x','p'],['y'])],[i64('p',[MIN,0,MIN,0])])
    cases['tile_max']=model([node('Tile',['x','r'],['y'])],[i64('r',[MAX,2])])
    cases['tile_neg']=model([node('Tile',['x','r'],['y'])],[i64('r',[-1,2])])
    cases['expand_max']=model([node('Expand',['x','sh'],['y'])],[i64('sh',[MAX,4,5])])
    cases['expand_max2']=model([node('Expand',['x','sh'],['y'])],[i64('sh',[MAX,MAX,4,5])])
    cases['reshape_max']=model([node('Reshape',['x','sh'],['y'])],[i64('sh',[-1,0,MAX])])
    cases['reshape_min']=model([node('Reshape',['x','sh'],['y'])],[i64('sh',[MIN,-1])])
    cases['reshape_zero_minus1']=model([node('Reshape',['x','sh'],['y'])],[i64('sh',[0,-1,0])])
    cases['cos_max']=model([node('ConstantOfShape',['sh'],['y'])],[i64('sh',[MAX,MAX])],inputs=())
    cases['cos_big']=model([node('ConstantOfShape',['sh'],['y'])],[i64('sh',[1<<20,1<<20])],inputs=())
    cases['cos_neg']=model([node('ConstantOfShape',['sh'],['y'])],[i64('sh',[-5])],inputs=())
    cases['range_i64_full']=model([node('Range',['a','b','c'],['y'])],[i64('a',[MIN],[]),i64('b',[MAX],[]),i64('c',[1],[])],inputs=())
    cases['range_i64_minstep']=model([node('Range',['a','b','c'],['y'])],[i64('a',[MAX],[]),i64('b',[MIN],[]),i64('c',[MIN],[])],inputs=())
    cases['range_f_tiny']=model([node('Range',['a','b','c'],['y'])],[f32('a',[0.0],[]),f32('b',[3e38],[]),f32('c',[1e-38],[])],inputs=())
    cases['range_f_nan']=model([node('Range',['a','b','c'],['y'])],[f32('a',[0.0],[]),f32('b',[float('nan')],[]),f32('c',[1.0],[])],inputs=())
    cases['range_f_inf']=model([node('Range',['a','b','c'],['y'])],[f32('a',[float('-inf')],[]),f32('b',[float('inf')],[]),f32('c',[1.0],[])],inputs=())
    cases['range_big_then_add']=model([node('Range',['a','b','c'],['r']),node('Add',['r','r'],['y'])],[i64('a',[0],[]),i64('b',[1<<40],[]),i64('c',[1],[])],inputs=())
    cases['flatten_axis_min']=model([node('Flatten',['x'],['y'],attr_i('axis',MIN))])
    cases['flatten_huge_dims']=model([node('Flatten',['x'],['y'],attr_i('axis',1))],inputs=(('x',FLOAT,[1<<62,8,8]),))
    cases['reshape_huge_dims']=model([node('Reshape',['x','sh'],['y'])],[i64('sh',[-1])],inputs=(('x',FLOAT,[1<<62,1<<62]),))
    cases['add_huge_dims']=model([node('Add',['x','x'],['y'])],inputs=(('x',FLOAT,[MAX,MAX]),))
    cases['transpose_perm_max']=model([node('Transpose',['x'],['y'],attr_ints('perm',[MAX,0]))])
    cases['transpose_perm_min']=model([node('Transpose',['x'],['y'],attr_ints('perm',[MIN,0]))])
    cases['transpose_perm_dup']=model([node('Transpose',['x'],['y'],attr_ints('perm',[0,0]))])
    cases['concat_axis_min']=model([node('Concat',['x','x'],['y'],attr_i('axis',MIN))])
    cases['concat_axis_max']=model([node('Concat',['x','x'],['y'],attr_i('axis',MAX))])
    cases['split_huge']=model([node('Split',['x','sp'],['y','z'],attr_i('axis',0))],[i64('sp',[MAX,MIN+4])],outputs=('y','z'))
    cases['split_neg']=model([node('Split',['x','sp'],['y','z'],attr_i('axis',0))],[i64('sp',[-1,5])],outputs=('y','z'))
    cases['unsqueeze_min']=model([node('Unsqueeze',['x','a'],['y'])],[i64('a',[MIN])])
    cases['unsqueeze_max']=model([node('Unsqueeze',['x','a'],['y'])],[i64('a',[MAX])])
    cases['squeeze_min']=model([node('Squeeze',['x','a'],['y'])],[i64('a',[MIN])])
    cases['reducesum_min']=model([node('ReduceSum',['x','a'],['y'])],[i64('a',[MIN])])
    cases['reducemean_attr_min']=model([node('ReduceMean',['x'],['y'],attr_ints('axes',[MIN]))])
    cases['argmax_min']=model([node('ArgMax',['x'],['y'],attr_i('axis',MIN))])
    cases['softmax_min']=model([node('Softmax',['x'],['y'],attr_i('axis',MIN))])
    cases['gather_idx_min']=model([node('Gather',['x','i'],['y'],attr_i('axis',0))],[i64('i',[MIN])])
    cases['gather_idx_max_const']=model([node('Gather',['c','i'],['y'],attr_i('axis',0))],[i64('c',[1,2,3]),i64('i',[MAX])],inputs=())
    cases['gather_idx_min_const']=model([node('Gather',['c','i'],['y'],attr_i('axis',0))],[i64('c',[1,2,3]),i64('i',[MIN])],inputs=())
    cases['gather_axis_min']=model([node('Gather',['x','i'],['y'],attr_i('axis',MIN))],[i64('i',[0])])
    cases['gathernd_batch_max']=model([node('GatherND',['x','i'],['y'],attr_i('batch_dims',MAX))],[i64('i',[0],[1,1])])
    cases['gathernd_idx_const']=model([node('GatherND',['c','i'],['y'])],[i64('c',[1,2,3,4],[2,2]),i64('i',[MIN,MAX],[1,2])],inputs=())
    cases['topk_max']=model([node('TopK',['x','k'],['y','z'])],[i64('k',[MAX])],outputs=('y','z'))
    cases['topk_neg']=model([node('TopK',['x','k'],['y','z'])],[i64('k',[-3])],outputs=('y','z'))
    cases['maxpool_k_max']=model([node('MaxPool',['x'],['y'],attr_ints('kernel_shape',[MAX,MAX]))],inputs=(('x',FLOAT,[1,1,4,4]),))
    cases['maxpool_stride_0']=model([node('MaxPool',['x'],['y'],attr_ints('kernel_shape',[2,2]),attr_ints('strides',[0,0]))],inputs=(('x',FLOAT,[1,1,4,4]),))
    cases['maxpool_pads_max']=model([node('MaxPool',['x'],['y'],attr_ints('kernel_shape',[2,2]),attr_ints('pads',[MAX,MAX,MAX,MAX]))],inputs=(('x',FLOAT,[1,1,4,4]),))
    cases['maxpool_dil_max']=model([node('MaxPool',['x'],['y'],attr_ints('kernel_shape',[2,2]),attr_ints('dilations',[MAX,MAX]))],inputs=(('x',FLOAT,[1,1,4,4]),))
    cases['conv_dil_max']=model([node('Conv',['x','w'],['y'],attr_ints('dilations',[MAX,MAX]))],[f32('w',[1.0]*4,[1,1,2,2])],inputs=(('x',FLOAT,[1,1,4,4]),))
    cases['conv_group_0']=model([node('Conv',['x','w'],['y'],attr_i('group',0))],[f32('w',[1.0]*4,[1,1,2,2])],inputs=(('x',FLOAT,[1,1,4,4]),))
    cases['conv_group_min']=model([node('Conv',['x','w'],['y'],attr_i('group',MIN))],[f32('w',[1.0]*4,[1,1,2,2])],inputs=(('x',FLOAT,[1,1,4,4]),))
    cases['conv_pads_min']=model([node('Conv',['x','w'],['y'],attr_ints('pads',[MIN,MIN,MIN,MIN]))],[f32('w',[1.0]*4,[1,1,2,2])],inputs=(('x',FLOAT,[1,1,4,4]),))
    cases['convT_stride_max']=model([node('ConvTranspose',['x','w'],['y'],attr_ints('strides',[MAX,MAX]))],[f32('w',[1.0]*4,[1,1,2,2])],inputs=(('x',FLOAT,[1,1,4,4]),))
    cases['convT_outpad_max']=model([node('ConvTranspose',['x','w'],['y'],attr_ints('output_padding',[MAX,MAX]),attr_ints('strides',[2,2]))],[f32('w',[1.0]*4,[1,1,2,2])],inputs=(('x',FLOAT,[1,1,4,4]),))
    cases['convT_outshape_max']=model([node('ConvTranspose',['x','w'],['y'],attr_ints('output_shape',[MAX,MAX]))],[f32('w',[1.0]*4,[1,1,2,2])],inputs=(('x',FLOAT,[1,1,4,4]),))
    cases['resize_sizes_max']=model([node('Resize',['x','','','sz'],['y'])],[i64('sz',[1,1,MAX,MAX])],inputs=(('x',FLOAT,[1,1,4,4]),))
    cases['resize_scales_huge']=model([node('Resize',['x','','sc'],['y'])],[f32('sc',[1,1,3e38,3e38])],inputs=(('x',FLOAT,[1,1,4,4]),))
    cases['resize_scales_nan']=model([node('Resize',['x','','sc'],['y'])],[f32('sc',[1,1,float('nan'),-1])],inputs=(('x',FLOAT,[1,1,4,4]),))
    cases['nms_max']=model([node('NonMaxSuppression',['b','s','m','i'],['y'])],[f32('b',[0,0,1,1],[1,1,4]),f32('s',[1.0],[1,1,1]),i64('m',[MAX],[1]),f32('i',[0.5],[1])],inputs=())
    cases['nms_min']=model([node('NonMaxSuppression',['b','s','m','i'],['y'])],[f32('b',[0,0,1,1],[1,1,4]),f32('s',[1.0],[1,1,1]),i64('m',[MIN],[1]),f32('i',[0.5],[1])],inputs=())
    cases['clip_nan']=model([node('Clip',['x','lo','hi'],['y'])],[f32('lo',[float('nan')],[]),f32('hi',[float('-inf')],[])])
    cases['cast_to_bad']=model([node('Cast',['x'],['y'],attr_i('to',MAX))])
    cases['cast_f_to_i_const']=model([node('Cast',['c'],['y'],attr_i('to',7))],[f32('c',[3e38,float('nan'),float('inf')])],inputs=())
    cases['cast_f_to_i32_const']=model([node('Cast',['c'],['s']),node('Reshape',['x','s'],['y'])],[f32('c',[3e38,-1])],inputs=())
    cases['layernorm_axis_min']=model([node('LayerNormalization',['x','g'],['y'],attr_i('axis',MIN))],[f32('g',[1.0]*5)],opset=17)
    cases['bn_bad']=model([node('BatchNormalization',['x','a','b','c','d'],['y'])],[f32('a',[1.0]),f32('b',[1.0]),f32('c',[1.0]),f32('d',[-1.0])],inputs=(('x',FLOAT,[1,3,2,2]),))
    cases['div_int_const_zero']=model([node('Div',['a','b'],['y'])],[i64('a',[MIN]),i64('b',[0])],inputs=())
    cases['div_int_const_minus1']=model([node('Div',['a','b'],['s']),node('Reshape',['x','s'],['y'])],[i64('a',[MIN]),i64('b',[-1])])
    cases['mul_int_const_overflow']=model([node('Mul',['a','a'],['s']),node('Reshape',['x','s'],['y'])],[i64('a',[MAX])])
    cases['add_int_const_overflow']=model([node('Add',['a','a'],['s']),node('Reshape',['x','s'],['y'])],[i64('a',[MAX])])
    cases['sub_int_const_overflow']=model([node('Sub',['a','b'],['s']),node('Reshape',['x','s'],['y'])],[i64('a',[MIN]),i64('b',[1])])
    cases['neg_int_min']=model([node('Neg',['a'],['s']),node('Reshape',['x','s'],['y'])],[i64('a',[MIN])])
    cases['abs_int_min']=model([node('Abs',['a'],['s']),node('Reshape',['x','s'],['y'])],[i64('a',[MIN])])
    cases['pow_int']=model([node('Pow',['a','a'],['s']),node('Reshape',['x','s'],['y'])],[i64('a',[MAX])])
    cases['reduceprod_int']=model([node('ReduceProd',['a'],['s'],attr_i('keepdims',1)),node('Reshape',['x','s'],['y'])],[i64('a',[MAX,MAX])])
    cases['reducesum_int']=model([node('ReduceSum',['a'],['s']),node('Reshape',['x','s'],['y'])],[i64('a',[MAX,MAX])])
    cases['shape_mul_overflow']=model([node('Shape',['x'],['s']),node('Mul',['s','s'],['t']),node('Reshape',['x','t'],['y'])],inputs=(('x',FLOAT,[1<<40,1<<40]),))
    cases['shape_sym_mul']=model([node('Shape',['x'],['s']),node('Mul',['s','c'],['t']),node('ConstantOfShape',['t'],['y'])],[i64('c',[MAX,MAX])],inputs=(('x',FLOAT,['n','m']),))
    cases['shape_sym_add']=model([node('Shape',['x'],['s']),node('Add',['s','c'],['t']),node('ConstantOfShape',['t'],['y'])],[i64('c',[MAX,MIN])],inputs=(('x',FLOAT,['n','m']),))
    cases['shape_sym_div']=model([node('Shape',['x'],['s']),node('Div',['s','c'],['t']),node('ConstantOfShape',['t'],['y'])],[i64('c',[0,-1])],inputs=(('x',FLOAT,['n','m']),))
    cases['shape_sym_range']=model([node('Shape',['x'],['s']),node('Gather',['s','z'],['n']),node('Range',['n','c','d'],['y'])],[i64('z',[0],[]),i64('c',[MAX],[]),i64('d',[MIN],[])],inputs=(('x',FLOAT,['n','m']),))
    cases['shape_sym_slice']=model([node('Shape',['x'],['s']),node('Slice',['s','a','b','c','d'],['y'])],[i64('a',[MIN]),i64('b',[MAX]),i64('c',[0]),i64('d',[MIN])],inputs=(('x',FLOAT,['n','m']),))
    cases['shape_sym_slice2']=model([node('Shape',['x'],['s']),node('Gather',['s','z'],['n']),node('Unsqueeze',['n','z1'],['nn']),node('Slice',['x','z2','nn','z1','st'],['y'])],[i64('z',[0],[]),i64('z1',[0]),i64('z2',[MIN]),i64('st',[MIN])],inputs=(('x',FLOAT,['n','m']),))
    cases['where_const_cond']=model([node('Where',['c','x','x'],['y'])],[tensor('c',BOOL,[1],[1])])
    cases['shape_start_end']=model([node('Shape',['x'],['y'],attr_i('start',MIN),attr_i('end',MAX))],opset=15)
    cases['shape_start_max']=model([node('Shape',['x'],['y'],attr_i('start',MAX),attr_i('end',MIN))],opset=15)
    cases['size_huge']=model([node('Size',['x'],['y'])],inputs=(('x',FLOAT,[MAX,MAX]),))
    cases['matmul_huge']=model([node('MatMul',['x','x'],['y'])],inputs=(('x',FLOAT,[MAX,MAX]),))
    cases['gemm_huge']=model([node('Gemm',['x','x'],['y'],attr_i('transB',1))],inputs=(('x',FLOAT,[MAX,MAX]),))
    cases['globalavg_rank1']=model([node('GlobalAveragePool',['x'],['y'])],inputs=(('x',FLOAT,[4]),))
    cases['dropout_ratio']=model([node('Dropout',['x','r','t'],['y'])],[f32('r',[float('nan')],[]),tensor('t',BOOL,[],[1])])
    cases['leaky_nan']=model([node('LeakyRelu',['x'],['y'],attr_f('alpha',float('nan')))])
    cases['cos_value_bad']=model([node('ConstantOfShape',['sh'],['y'],attr_t('value',f32('v',[1.0,2.0])))],[i64('sh',[2])],inputs=())
    cases['constant_value_ints_empty']=model([node('Constant',[],['y'],ld(5, ld(1,b'value_ints')+vi(20,7)))],inputs=())
    cases['if_no_branch']=model([node('If',['c'],['y'])],[tensor('c',BOOL,[],[1])],inputs=())

    cases['conv_input_huge']=model([node('Conv',['x','w'],['y'])],[f32('w',[1.0]*9,[1,1,3,3])],inputs=(('x',FLOAT,[1,1,MAX,MAX]),))
    cases['conv_w_input_huge']=model([node('Conv',['x','w'],['y'])],inputs=(('x',FLOAT,[1,1,4,4]),('w',FLOAT,[1,1,MAX,MAX])))
    cases['conv_stride_max']=model([node('Conv',['x','w'],['y'],attr_ints('strides',[MAX,MAX]))],[f32('w',[1.0]*4,[1,1,2,2])],inputs=(('x',FLOAT,[1,1,4,4]),))
    cases['conv_pads_max']=model([node('Conv',['x','w'],['y'],attr_ints('pads',[MAX,MAX,MAX,MAX]))],[f32('w',[1.0]*4,[1,1,2,2])],inputs=(('x',FLOAT,[1,1,4,4]),))
    cases['convT_input_huge']=model([node('ConvTranspose',['x','w'],['y'],attr_ints('strides',[4,4]))],[f32('w',[1.0]*4,[1,1,2,2])],inputs=(('x',FLOAT,[1,1,1<<62,1<<62]),))
    cases['convT_pads_max']=model([node('ConvTranspose',['x','w'],['y'],attr_ints('pads',[MAX,MAX,MAX,MAX]))],[f32('w',[1.0]*4,[1,1,2,2])],inputs=(('x',FLOAT,[1,1,4,4]),))
    cases['convT_dil_max']=model([node('ConvTranspose',['x','w'],['y'],attr_ints('dilations',[MAX,MAX]))],[f32('w',[1.0]*4,[1,1,2,2])],inputs=(('x',FLOAT,[1,1,4,4]),))
    cases['maxpool_input_huge']=model([node('MaxPool',['x'],['y'],attr_ints('kernel_shape',[3,3]),attr_ints('pads',[1,1,1,1]))],inputs=(('x',FLOAT,[1,1,MAX,MAX]),))
    cases['maxpool_ceil_huge']=model([node('MaxPool',['x'],['y'],attr_ints('kernel_shape',[1,1]),attr_ints('strides',[2,2]),attr_i('ceil_mode',1))],inputs=(('x',FLOAT,[1,1,MAX,MAX]),))
    cases['pad_sym_huge']=model([node('Pad',['x','p'],['y'])],[i64('p',[MAX,MAX,MAX,MAX])],inputs=(('x',FLOAT,['n','m']),))
    cases['pad_dims_huge']=model([node('Pad',['x','p'],['y'])],[i64('p',[1,1,1,1])],inputs=(('x',FLOAT,[MAX,MAX]),))
    cases['concat_huge_dims']=model([node('Concat',['x','x'],['y'],attr_i('axis',0))],inputs=(('x',FLOAT,[MAX,2]),))
    cases['reduceprod_shape']=model([node('Shape',['x'],['s']),node('ReduceProd',['s'],['p'],attr_i('keepdims',1)),node('Reshape',['x','p'],['y'])],inputs=(('x',FLOAT,[1<<40,1<<40]),))
    cases['reducesum_shape']=model([node('Shape',['x'],['s']),node('ReduceSum',['s'],['p']),node('Reshape',['x','p'],['y'])],inputs=(('x',FLOAT,[MAX,MAX]),))
    cases['gather_shape_idx_min']=model([node('Shape',['x'],['s']),node('Gather',['s','i'],['g']),node('Reshape',['x','g'],['y'])],[i64('i',[MIN])],inputs=(('x',FLOAT,['n','m']),))
    cases['tile_huge_dims']=model([node('Tile',['x','r'],['y'])],[i64('r',[4,1])],inputs=(('x',FLOAT,[1<<62,2]),))
    cases['tile_sym_max']=model([node('Tile',['x','r'],['y'])],[i64('r',[MAX,1])],inputs=(('x',FLOAT,['n',2]),))
    cases['expand_sym_max']=model([node('Expand',['x','sh'],['y'])],[i64('sh',[MAX,1])],inputs=(('x',FLOAT,['n']),))
    cases['slice_huge_step2']=model([node('Slice',['x','s','e','a','st'],['y'])],[i64('s',[0]),i64('e',[MAX]),i64('a',[0]),i64('st',[2])],inputs=(('x',FLOAT,[MAX]),))
    cases['slice_huge_neg']=model([node('Slice',['x','s','e','a','st'],['y'])],[i64('s',[-1]),i64('e',[MIN]),i64('a',[0]),i64('st',[-3])],inputs=(('x',FLOAT,[MAX]),))
    cases['slice_sym_neg']=model([node('Slice',['x','s','e','a','st'],['y'])],[i64('s',[MIN]),i64('e',[MAX]),i64('a',[0]),i64('st',[MAX])],inputs=(('x',FLOAT,['n']),))
    cases['slice_sym_neg2']=model([node('Slice',['x','s','e','a','st'],['y'])],[i64('s',[MAX]),i64('e',[MIN]),i64('a',[0]),i64('st',[-2])],inputs=(('x',FLOAT,['n']),))
    cases['topk_sym']=model([node('Shape',['x'],['s']),node('Gather',['s','z'],['k']),node('TopK',['x','k'],['y','i'])],[i64('z',[0])],inputs=(('x',FLOAT,['n']),),outputs=('y','i'))
    cases['resize_sym_scales']=model([node('Resize',['x','','sc'],['y'])],[f32('sc',[1,1,3e38,2])],inputs=(('x',FLOAT,[1,1,'h','w']),))
    cases['resize_huge_dims']=model([node('Resize',['x','','sc'],['y'])],[f32('sc',[1,1,4,4])],inputs=(('x',FLOAT,[1,1,1<<62,1<<62]),))
    cases['resize_sizes_neg']=model([node('Resize',['x','','','sz'],['y'])],[i64('sz',[1,1,MIN,-1])],inputs=(('x',FLOAT,[1,1,4,4]),))
    cases['matmul_sym_huge']=model([node('MatMul',['x','w'],['y'])],[f32('w',[1.0]*4,[2,2])],inputs=(('x',FLOAT,['n',MAX,2]),))
    cases['split_sym']=model([node('Split',['x','sp'],['y','z'],attr_i('axis',0))],[i64('sp',[MAX,MAX])],inputs=(('x',FLOAT,['n']),),outputs=('y','z'))
    cases['split_attr_min']=model([node('Split',['x'],['y','z'],attr_i('axis',0),attr_ints('split',[MIN,MAX]))],outputs=('y','z'),opset=11)
    cases['unsqueeze_attr_max']=model([node('Unsqueeze',['x'],['y'],attr_ints('axes',[MAX]))],opset=11)
    cases['squeeze_attr_min']=model([node('Squeeze',['x'],['y'],attr_ints('axes',[MIN]))],opset=11)
    cases['reduce_attr_keep_min']=model([node('ReduceMax',['x'],['y'],attr_ints('axes',[MIN]),attr_i('keepdims',MIN))],opset=11)
    cases['argmin_axis_keep_max']=model([node('ArgMin',['x'],['y'],attr_i('axis',MAX),attr_i('keepdims',MAX))])
    cases['where_sym_bcast']=model([node('Where',['c','x','z'],['y'])],[tensor('c',BOOL,[1],[1])],inputs=(('x',FLOAT,['n',MAX]),('z',FLOAT,[MAX,'m'])))
    cases['mul_sym_dims_huge']=model([node('Shape',['x'],['s']),node('Mul',['s','s'],['t']),node('ConstantOfShape',['t'],['y'])],inputs=(('x',FLOAT,['n',MAX]),))
    cases['sub_sym_dims']=model([node('Shape',['x'],['s']),node('Sub',['c','s'],['t']),node('ConstantOfShape',['t'],['y'])],[i64('c',[MIN,MIN])],inputs=(('x',FLOAT,['n','m']),))
    cases['neg_shape']=model([node('Shape',['x'],['s']),node('Neg',['s'],['t']),node('Reshape',['x','t'],['y'])],inputs=(('x',FLOAT,[MAX,1]),))
    cases['div_shape_minus1']=model([node('Shape',['x'],['s']),node('Div',['s','c'],['t']),node('Reshape',['x','t'],['y'])],[i64('c',[-1,-1])],inputs=(('x',FLOAT,['n','m']),))
    cases['gather_idx_neg_huge_sym']=model([node('Shape',['x'],['s']),node('Gather',['s','i'],['g']),node('Reshape',['x','g'],['y'])],[i64('i',[-3])],inputs=(('x',FLOAT,['n','m']),))
    cases['const_of_shape_sym_neg']=model([node('Shape',['x'],['s']),node('Sub',['s','c'],['t']),node('ConstantOfShape',['t'],['y'])],[i64('c',[MAX])],inputs=(('x',FLOAT,['n']),))

    os.makedirs(sys.argv[1], exist_ok=True)
    for name, data in cases.items():
        with open(os.path.join(sys.argv[1], "hostile_%s.onnx" % name), "wb") as f:
            f.write(data)
    print(len(cases))


if __name__ == "__main__":
    main()
