// Shared by ort_run.js and ort_bench.js: argument parsing, session setup, seeded inputs.
'use strict';
const ort = require('onnxruntime-node');

// Splits argv into positionals and --flag value pairs.
function parseArgs(argv) {
  const pos = [], flags = {};
  for (let i = 0; i < argv.length; i++) {
    if (argv[i].startsWith('--')) flags[argv[i].slice(2)] = argv[++i];
    else pos.push(argv[i]);
  }
  return { pos, flags };
}

function createSession(modelPath, threads) {
  return ort.InferenceSession.create(modelPath, {
    intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
}

// mulberry32 seeded from the input name: the same model always gets the same data, so
// another engine can be fed the identical tensor (ort_run.js also writes it out).
function rng(name) {
  let s = 0x9e3779b9;
  for (const c of name) s = Math.imul(s ^ c.charCodeAt(0), 0x01000193);
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// A tensor for input `meta`: N(0,1) floats or small ints [0,10); symbolic dims get `batch`
// for the first dim and 1 elsewhere.
function randomInput(meta, batch = 1) {
  const shape = meta.shape.map((d, i) => (typeof d === 'number' && d >= 0 ? d : i === 0 ? batch : 1));
  const n = shape.reduce((a, b) => a * b, 1);
  const u = rng(meta.name);
  switch (meta.type) {
    case 'float32': {
      const a = new Float32Array(n);
      for (let i = 0; i < n; i++) {  // Box-Muller
        const r = Math.sqrt(-2 * Math.log(1 - u())), th = 2 * Math.PI * u();
        a[i] = r * Math.cos(th);
      }
      return new ort.Tensor('float32', a, shape);
    }
    case 'int64': return new ort.Tensor('int64', BigInt64Array.from({ length: n }, () => BigInt(Math.floor(10 * u()))), shape);
    case 'int32': return new ort.Tensor('int32', Int32Array.from({ length: n }, () => Math.floor(10 * u())), shape);
    default: throw new Error(`input ${meta.name}: cannot generate data of type ${meta.type}`);
  }
}

module.exports = { ort, parseArgs, createSession, randomInput };
