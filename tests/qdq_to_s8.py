# Rewrites a QDQ model's uint8 activations as int8 (every uint8 zero point z becomes z - 128, the
# same real values), the form ONNX Runtime's quantizer writes with activation_type=QInt8.
import sys, numpy as np, onnx
from onnx import numpy_helper
m = onnx.load(sys.argv[1])
done = 0
for i, t in enumerate(m.graph.initializer):
    if t.data_type == onnx.TensorProto.UINT8:
        a = numpy_helper.to_array(t).astype(np.int16) - 128
        m.graph.initializer[i].CopyFrom(numpy_helper.from_array(a.astype(np.int8), t.name))
        done += 1
for n in m.graph.node:
    if n.op_type == "Constant" and n.attribute[0].t.data_type == onnx.TensorProto.UINT8:
        a = numpy_helper.to_array(n.attribute[0].t).astype(np.int16) - 128
        n.attribute[0].t.CopyFrom(numpy_helper.from_array(a.astype(np.int8)))
        done += 1
assert done > 0, "no uint8 zero point found"
onnx.save(m, sys.argv[2])
print("converted", done)
