# PyTorch's own int8: FX graph-mode static quantization (fbgemm: u8 activations, s8 per-channel
# weights), calibrated on random batches, exported to ONNX as QuantizeLinear/DequantizeLinear.
import sys, torch, torchvision.models as m
from torch.ao.quantization import get_default_qconfig_mapping
from torch.ao.quantization.quantize_fx import prepare_fx, convert_fx
torch.manual_seed(0)
specs = {'resnet18': m.resnet18, 'mobilenet_v2': m.mobilenet_v2}
for name in sys.argv[1:]:
    model = specs[name]()
    # Random weights shrink MobileNetV2's signal to ~1e-9 through its eval-mode batch norms:
    # set their statistics from random batches first so activations (and logits) are ~1.
    model.train()
    with torch.no_grad():
        for _ in range(3): model(torch.randn(8, 3, 224, 224))
    model.eval()
    x = torch.randn(1, 3, 224, 224)
    prepared = prepare_fx(model, get_default_qconfig_mapping('fbgemm'), (x,))
    with torch.no_grad():
        for _ in range(4): prepared(torch.randn(2, 3, 224, 224))
    q = convert_fx(prepared)
    torch.onnx.export(q, x, name + '_torchq.onnx', opset_version=13, input_names=['input'], output_names=['logits'])
    print('exported', name)
