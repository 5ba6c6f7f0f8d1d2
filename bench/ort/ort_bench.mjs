// ONNX Runtime's CPU provider on a model folder laid out like ONNX's backend test data
// (model.onnx + test_data_set_N/input_*.pb), one thread, for the side-by-side bench
// (bench/ort/compare.sh). ORT is driven from this script only, never linked into hetpass.
//
//   node ort_bench.mjs MODEL_DIR [--set=0] [--runs=200] [--warmup=20]
// prints one JSON line: {"model", "set", "runs", "median_us", "min_us", "outputs": [{shape, sum}]}
//
//   node ort_bench.mjs MODEL_DIR --set=K --dump=OUT_DIR
// one run of set K instead, its outputs written for a cross-check (tools/models/export_zoo.py):
// OUT_DIR/output_<j>.bin (raw little-endian data) and OUT_DIR/outputs.json ([{name, type, dims}]).
//
//   node ort_bench.mjs MODEL_DIR --create=N
// session creation instead (bench/compile_time.sh): N sessions created one after another in this
// process with the options below (graphOptimizationLevel 'all', ORT's ORT_ENABLE_ALL: basic,
// extended and layout optimizations), each timed from the call to the resolved session; prints
// {"model", "creations", "create_ms_median", "create_ms_min", "create_ms_first", "create_ms"}.
// The first creation also pays ORT's one-time initialisation (environment, allocators).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const ort = require(process.env.ORT_NODE_MODULE || 'onnxruntime-node');

// Minimal protobuf reader for onnx.TensorProto: dims (1), data_type (2), float_data (4),
// int32_data (5), int64_data (7), name (8), raw_data (9), double_data (10).
function readVarint(buf, pos) {
  let result = 0n, shift = 0n, b;
  do {
    b = buf[pos++];
    result |= BigInt(b & 0x7f) << shift;
    shift += 7n;
  } while (b & 0x80);
  return [result, pos];
}

function parseTensorProto(buf) {
  const t = { dims: [], dataType: 0, raw: null, floats: [], ints32: [], ints64: [], doubles: [], name: '' };
  let pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Number(key >> 3n), wire = Number(key & 7n);
    if (wire === 0) {
      let v;
      [v, pos] = readVarint(buf, pos);
      if (field === 1) t.dims.push(Number(BigInt.asIntN(64, v)));
      else if (field === 2) t.dataType = Number(v);
      else if (field === 5) t.ints32.push(Number(BigInt.asIntN(32, v)));
      else if (field === 7) t.ints64.push(BigInt.asIntN(64, v));
    } else if (wire === 2) {
      let len;
      [len, pos] = readVarint(buf, pos);
      const end = pos + Number(len);
      const bytes = buf.subarray(pos, end);
      if (field === 9) t.raw = Buffer.from(bytes);
      else if (field === 8) t.name = bytes.toString('utf8');
      else if (field === 1) { let p = 0; while (p < bytes.length) { let v; [v, p] = readVarint(bytes, p); t.dims.push(Number(v)); } }
      else if (field === 4) for (let i = 0; i + 4 <= bytes.length; i += 4) t.floats.push(bytes.readFloatLE(i));
      else if (field === 10) for (let i = 0; i + 8 <= bytes.length; i += 8) t.doubles.push(bytes.readDoubleLE(i));
      else if (field === 5) { let p = 0; while (p < bytes.length) { let v; [v, p] = readVarint(bytes, p); t.ints32.push(Number(BigInt.asIntN(32, v))); } }
      else if (field === 7) { let p = 0; while (p < bytes.length) { let v; [v, p] = readVarint(bytes, p); t.ints64.push(BigInt.asIntN(64, v)); } }
      pos = end;
    } else if (wire === 5) pos += 4;
    else if (wire === 1) pos += 8;
    else throw new Error(`unsupported wire type ${wire}`);
  }
  return t;
}

const kTypes = { 1: ['float32', Float32Array], 6: ['int32', Int32Array], 7: ['int64', BigInt64Array],
                 9: ['bool', Uint8Array], 11: ['float64', Float64Array], 2: ['uint8', Uint8Array] };

function toOrtTensor(t) {
  const [type, Array] = kTypes[t.dataType] || [];
  if (!type) throw new Error(`tensor ${t.name}: data type ${t.dataType} not supported by this script`);
  let data;
  if (t.raw) {
    const copy = Buffer.from(t.raw);
    data = new Array(copy.buffer, copy.byteOffset, copy.byteLength / Array.BYTES_PER_ELEMENT);
  } else if (t.dataType === 1) data = Float32Array.from(t.floats);
  else if (t.dataType === 7) data = BigInt64Array.from(t.ints64);
  else if (t.dataType === 6 || t.dataType === 9 || t.dataType === 2) data = Array.from(t.ints32);
  else if (t.dataType === 11) data = Float64Array.from(t.doubles);
  return new ort.Tensor(type, data, t.dims);
}

const args = process.argv.slice(2);
const dir = args.find((a) => !a.startsWith('--'));
const opt = (name, dflt) => { const a = args.find((x) => x.startsWith(`--${name}=`)); return a ? Number(a.split('=')[1]) : dflt; };
if (!dir) { console.error('usage: node ort_bench.mjs MODEL_DIR [--set=0] [--runs=200] [--warmup=20]'); process.exit(2); }
const set = opt('set', 0), runs = opt('runs', 200), warmup = opt('warmup', 20);
const sessionOptions = {
  intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
};

const creations = opt('create', 0);
if (creations > 0) {
  const times = [];
  for (let i = 0; i < creations; ++i) {
    const t0 = process.hrtime.bigint();
    const s = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), sessionOptions);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (s.release) await s.release();
  }
  const sorted = [...times].sort((a, b) => a - b);
  console.log(JSON.stringify({ model: path.basename(dir), creations, create_ms_median: sorted[sorted.length >> 1],
                               create_ms_min: sorted[0], create_ms_first: times[0], create_ms: times }));
  process.exit(0);
}

const session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), sessionOptions);
const setDir = path.join(dir, `test_data_set_${set}`);
const feeds = {};
session.inputNames.forEach((name, i) => {
  feeds[name] = toOrtTensor(parseTensorProto(fs.readFileSync(path.join(setDir, `input_${i}.pb`))));
});
const dumpArg = args.find((x) => x.startsWith('--dump='));
if (dumpArg) {
  const outDir = dumpArg.slice('--dump='.length);
  fs.mkdirSync(outDir, { recursive: true });
  const res = await session.run(feeds);
  const meta = session.outputNames.map((n, j) => {
    const t = res[n];
    const d = t.data;
    fs.writeFileSync(path.join(outDir, `output_${j}.bin`), Buffer.from(d.buffer, d.byteOffset, d.byteLength));
    return { name: n, type: t.type, dims: t.dims };
  });
  fs.writeFileSync(path.join(outDir, 'outputs.json'), JSON.stringify(meta));
  process.exit(0);
}
let out;
for (let i = 0; i < warmup; ++i) out = await session.run(feeds);
const times = [];
for (let i = 0; i < runs; ++i) {
  const t0 = process.hrtime.bigint();
  out = await session.run(feeds);
  times.push(Number(process.hrtime.bigint() - t0) / 1000);
}
times.sort((a, b) => a - b);
const outputs = session.outputNames.map((n) => {
  const t = out[n];
  let sum = 0;
  for (const v of t.data) sum += Number(v);
  return { name: n, shape: t.dims, sum };
});
console.log(JSON.stringify({ model: path.basename(dir), set, runs, median_us: times[times.length >> 1], min_us: times[0], outputs }));
