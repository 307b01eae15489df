#!/usr/bin/env node
// Serves ONNX Runtime inference over stdin/stdout for a client in another language: each
// request is a uint32 byte count then that many bytes of float32 [1,C,H,W]; each reply is the
// int32 top-1 class. Requests are answered one at a time, in order.
// Usage: node ort_serve.js MODEL.onnx [--threads 2]
'use strict';
const { ort, parseArgs, createSession } = require('./ort_common');

async function main() {
  const { pos, flags } = parseArgs(process.argv.slice(2));
  if (pos.length !== 1) {
    console.error('usage: ort_serve.js MODEL.onnx [--threads 2]');
    process.exit(2);
  }
  const session = await createSession(pos[0], Number(flags.threads ?? 2));
  const meta = session.inputMetadata[0];
  const dims = meta.shape.map((d, i) => (typeof d === 'number' && d >= 0 ? d : 1));
  let buf = Buffer.alloc(0);
  let busy = Promise.resolve();
  process.stdin.on('data', chunk => {
    buf = Buffer.concat([buf, chunk]);
    while (buf.length >= 4 && buf.length >= 4 + buf.readUInt32LE(0)) {
      const n = buf.readUInt32LE(0);
      const body = Buffer.from(buf.subarray(4, 4 + n));  // own copy: aligned for Float32Array
      buf = buf.subarray(4 + n);
      busy = busy.then(async () => {
        const x = new Float32Array(body.buffer, body.byteOffset, n / 4);
        const out = await session.run({ [meta.name]: new ort.Tensor('float32', x, dims) });
        const y = out[session.outputNames[0]].data;
        let best = 0;
        for (let i = 1; i < y.length; i++) if (y[i] > y[best]) best = i;
        const reply = Buffer.alloc(4);
        reply.writeInt32LE(best, 0);
        process.stdout.write(reply);
      });
    }
  });
  process.stdin.on('end', () => busy.then(() => session.release()));
}

main().catch(e => { console.error(`ort_serve: ${e.message}`); process.exit(1); });
