import sys, torch, torchvision.models as m
torch.manual_seed(0)
specs = {'vgg11': (m.vgg11, 224), 'alexnet': (m.alexnet, 224), 'squeezenet1_0': (m.squeezenet1_0, 224),
         'densenet121': (m.densenet121, 224), 'inception_v3': (lambda: m.inception_v3(aux_logits=False, init_weights=True), 299),
         'googlenet': (lambda: m.googlenet(aux_logits=False, init_weights=True), 224),
         'shufflenet_v2_x1_0': (m.shufflenet_v2_x1_0, 224), 'mobilenet_v3_small': (m.mobilenet_v3_small, 224),
         'efficientnet_b0': (m.efficientnet_b0, 224), 'resnet18': (m.resnet18, 224)}
for name in sys.argv[1:]:
    fn, size = specs[name]
    model = fn().eval()
    x = torch.randn(1, 3, size, size)
    torch.onnx.export(model, x, name + '.onnx', opset_version=13, input_names=['input'], output_names=['logits'],
                      dynamic_axes={'input': {0: 'N'}, 'logits': {0: 'N'}})
    print('exported', name)
