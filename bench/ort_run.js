#!/usr/bin/env node
// Runs an ONNX model once with ONNX Runtime (CPU) and writes every output as OUTDIR/<name>.npy.
// Usage: node ort_run.js MODEL.onnx OUTDIR [NAME=FILE.npy ...] [--threads 2]
'use strict';
const fs = require('fs');
const path = require('path');
const { readNpy, writeNpy } = require('./npy');
const { ort, parseArgs, createSession, randomInput } = require('./ort_common');

async function main() {
  const { pos, flags } = parseArgs(process.argv.slice(2));
  if (pos.length < 2) {
    console.error('usage: ort_run.js MODEL.onnx OUTDIR [NAME=FILE.npy ...] [--threads 2]');
    process.exit(2);
  }
  const [model, outdir, ...given] = pos;
  const threads = Number(flags.threads ?? 2);
  fs.mkdirSync(outdir, { recursive: true });
  const session = await createSession(model, threads);

  const files = Object.fromEntries(given.map(g => [g.slice(0, g.indexOf('=')), g.slice(g.indexOf('=') + 1)]));
  for (const name of Object.keys(files)) {
    if (!session.inputNames.includes(name)) throw new Error(`model has no input '${name}' (inputs: ${session.inputNames})`);
  }
  const feeds = {};
  for (const meta of session.inputMetadata) {
    if (files[meta.name]) {
      const { type, shape, data } = readNpy(files[meta.name]);
      feeds[meta.name] = new ort.Tensor(type, data, shape);
    } else {
      // Generated inputs are saved so another engine can run on exactly the same data.
      feeds[meta.name] = randomInput(meta);
      writeNpy(path.join(outdir, `${meta.name}.input.npy`), feeds[meta.name].data, feeds[meta.name].dims);
    }
  }

  const results = await session.run(feeds);
  for (const name of session.outputNames) {
    const t = results[name];
    const f32 = t.data instanceof Float32Array ? t.data : Float32Array.from(t.data, Number);
    writeNpy(path.join(outdir, `${name}.npy`), f32, t.dims);
    console.log(`${name}: [${t.dims.join(', ')}] ${t.type} -> ${path.join(outdir, name + '.npy')}`);
  }
  await session.release();
}

main().catch(e => { console.error(`ort_run: ${e.message}`); process.exit(1); });
