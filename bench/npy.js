// Minimal NumPy .npy reader/writer (little-endian, C order; writes format version 1.0).
'use strict';
const fs = require('fs');

// .npy descr -> [ORT tensor type, TypedArray constructor].
const DTYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
  '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array],
  '|u1': ['uint8', Uint8Array], '|b1': ['bool', Uint8Array],
};

function readNpy(path) {
  const buf = fs.readFileSync(path);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${path}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${path}: Fortran order unsupported`);
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1] ?? '';
  const shape = shapeText.split(',').map(s => s.trim()).filter(s => s).map(Number);
  if (!DTYPES[descr]) throw new Error(`${path}: unsupported dtype ${descr}`);
  const [type, Ctor] = DTYPES[descr];
  const count = shape.reduce((a, b) => a * b, 1);
  // Copy into a fresh, aligned buffer: the payload offset need not be a multiple of 8.
  const bytes = buf.subarray(start + hlen, start + hlen + count * Ctor.BYTES_PER_ELEMENT);
  const data = new Ctor(count);
  new Uint8Array(data.buffer).set(bytes);
  return { type, shape, data: type === 'bool' ? Uint8Array.from(data, v => v !== 0) : data };
}

function writeNpy(path, data, shape) {
  const descr = Object.keys(DTYPES).find(k => DTYPES[k][1] === data.constructor && k !== '|b1');
  if (!descr) throw new Error(`writeNpy: unsupported array type ${data.constructor.name}`);
  const shapeText = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeText}, }`;
  // Pad so the payload starts on a 64-byte boundary, as numpy does; header ends with '\n'.
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(path, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

module.exports = { readNpy, writeNpy };
