#!/usr/bin/env node
// Times ONNX Runtime (CPU) on a model at a given batch size; prints one JSON line.
// Usage: node ort_bench.js MODEL.onnx --batch B [--threads 2] [--iters 20] [--warmup 3]
'use strict';
const path = require('path');
const { ort, parseArgs, createSession, randomInput } = require('./ort_common');

function percentile(sorted, p) {  // nearest rank
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

async function main() {
  const { pos, flags } = parseArgs(process.argv.slice(2));
  if (pos.length !== 1) {
    console.error('usage: ort_bench.js MODEL.onnx --batch B [--threads 2] [--iters 20] [--warmup 3]');
    process.exit(2);
  }
  const batch = Number(flags.batch ?? 1), threads = Number(flags.threads ?? 2);
  const iters = Number(flags.iters ?? 20), warmup = Number(flags.warmup ?? 3);
  const session = await createSession(pos[0], threads);
  const feeds = Object.fromEntries(session.inputMetadata.map(m => [m.name, randomInput(m, batch)]));

  for (let i = 0; i < warmup; i++) await session.run(feeds);
  const ms = [];
  for (let i = 0; i < iters; i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  await session.release();
  const total = ms.reduce((a, b) => a + b, 0);
  ms.sort((a, b) => a - b);
  const r3 = x => Math.round(x * 1000) / 1000;
  console.log(JSON.stringify({
    engine: 'onnxruntime', version: ort.env.versions.node ?? ort.env.versions.common,
    model: path.basename(pos[0], '.onnx'), batch, threads,
    p50_ms: r3(percentile(ms, 50)), p90_ms: r3(percentile(ms, 90)), p99_ms: r3(percentile(ms, 99)),
    throughput_per_s: r3((batch * iters * 1000) / total),
  }));
}

main().catch(e => { console.error(`ort_bench: ${e.message}`); process.exit(1); });
