// ONNX Runtime's session creation, once, in this (fresh) process: the counterpart of hetpass's
// time to ready in bench/import/import_bench.py, which runs this script once per process.
//
//   node ort_create.mjs MODEL.onnx   one InferenceSession.create with the options of
//                                    bench/ort/ort_bench.mjs (graphOptimizationLevel 'all', ORT's
//                                    ORT_ENABLE_ALL; one intra-op and one inter-op thread,
//                                    sequential), timed from the call to the resolved session
//   node ort_create.mjs --baseline   only loads onnxruntime-node: node's and the binding's own
//                                    resident memory, to read a session's figure net of them
//
// Prints one JSON line: {"create_ms", "import_ms", "after_import_rss_mb"} (create_ms is null
// with --baseline). The process's peak resident memory is taken by the caller (/usr/bin/time's
// "Maximum resident set size"), so nothing here adds to it after the session exists. ORT comes from ORT_NODE_MODULE (bench/ort/ensure_ort.sh), as in ort_bench.mjs.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const t0 = process.hrtime.bigint();
const ort = require(process.env.ORT_NODE_MODULE || 'onnxruntime-node');
const importMs = Number(process.hrtime.bigint() - t0) / 1e6;
// resourceUsage().maxRSS is in kilobytes: the peak so far, i.e. node plus the loaded binding.
const afterImportRssMb = process.resourceUsage().maxRSS / 1024;

const arg = process.argv[2];
if (!arg) {
  console.error('usage: node ort_create.mjs MODEL.onnx | --baseline');
  process.exit(2);
}
let createMs = null;
if (arg !== '--baseline') {
  const options = {
    intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
  };
  const t1 = process.hrtime.bigint();
  await ort.InferenceSession.create(arg, options);
  createMs = Number(process.hrtime.bigint() - t1) / 1e6;
}
console.log(JSON.stringify({ create_ms: createMs, import_ms: importMs, after_import_rss_mb: afterImportRssMb }));
process.exit(0);
