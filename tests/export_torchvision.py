# Exports torchvision models (random weights, opset 13, symbolic batch), a SegNet-style
# encoder-decoder (MaxPool indices into MaxUnpool), a CRNN (BiLSTM and GRU), two OCR-style
# networks: a DBNet-like text detector (FPN, upsampling, ConvTranspose head) and a CTC text
# recognizer whose width is symbolic too (exported as [N,3,32,W]), and two detectors with
# their post-processing (one 320x320 image in; boxes, scores and labels out), and two video
# classifiers (3-D convs; R(2+1)D factorizes them into spatial and temporal ones).
import sys, torch, torch.nn as nn, torch.nn.functional as F, torchvision.models as m
import torchvision.models.detection as det
import torchvision.models.segmentation as seg
import torchvision.models.video as video
torch.manual_seed(0)


def vit():
    model = m.vit_b_16()
    nn.init.normal_(model.heads.head.weight, std=0.02)  # torchvision zero-initialises the head
    return model


class TextDetector(nn.Module):  # DBNet-style: backbone stages -> FPN -> probability map
    def __init__(self):
        super().__init__()
        f = m.mobilenet_v3_small().features
        self.stages = nn.ModuleList([f[:2], f[2:4], f[4:9], f[9:]])
        self.lateral = nn.ModuleList([nn.Conv2d(c, 64, 1) for c in (16, 24, 48, 576)])
        self.smooth = nn.ModuleList([nn.Conv2d(64, 16, 3, padding=1) for _ in range(4)])
        self.head = nn.Sequential(nn.Conv2d(64, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.ConvTranspose2d(16, 16, 2, 2), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.ConvTranspose2d(16, 1, 2, 2), nn.Sigmoid())

    def forward(self, x):
        feats = []
        for s in self.stages:
            x = s(x)
            feats.append(x)
        p = [l(f) for l, f in zip(self.lateral, feats)]
        for i in range(3, 0, -1):
            p[i - 1] = p[i - 1] + F.interpolate(p[i], size=p[i - 1].shape[2:], mode='nearest')
        size = p[0].shape[2:]
        outs = [F.interpolate(s(q), size=size, mode='bilinear', align_corners=False) for s, q in zip(self.smooth, p)]
        return self.head(torch.cat(outs, 1))


class TextRecognizer(nn.Module):  # CRNN-style without recurrence: convs -> columns -> CTC logits
    def __init__(self, classes=97):
        super().__init__()
        def block(i, o, pool):
            return [nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(), nn.MaxPool2d(pool, pool)]
        self.body = nn.Sequential(*block(3, 32, (2, 2)), *block(32, 64, (2, 2)), *block(64, 128, (2, 1)),
                                  *block(128, 128, (2, 1)), nn.Conv2d(128, 256, (2, 1)), nn.ReLU())
        self.fc = nn.Linear(256, classes)

    def forward(self, x):
        f = self.body(x).squeeze(2).permute(0, 2, 1)  # [N, W/4, 256]
        return F.log_softmax(self.fc(f), dim=-1)


class CRNN(nn.Module):  # the classic text recognizer: convs -> columns -> BiLSTM x2 -> GRU -> CTC logits
    def __init__(self, classes=97):
        super().__init__()
        self.body = TextRecognizer().body
        self.lstm = nn.LSTM(256, 96, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(192, 64, batch_first=True)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        f = self.body(x).squeeze(2).permute(0, 2, 1)  # [N, W/4, 256]
        f, _ = self.lstm(f)
        f, _ = self.gru(f)
        return F.log_softmax(self.fc(f), dim=-1)


class SegNet(nn.Module):  # SegNet-style: max pools remember where each maximum was, unpools put it back
    def __init__(self, classes=12):
        super().__init__()
        def block(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())
        self.enc = nn.ModuleList([block(3, 32), block(32, 64), block(64, 64)])
        self.dec = nn.ModuleList([block(64, 32), block(32, 32)])
        self.head = nn.Conv2d(32, classes, 3, padding=1)

    def forward(self, x):
        x = self.enc[0](x)
        x, i1 = F.max_pool2d(x, 2, 2, return_indices=True)
        x = self.enc[1](x)
        x, i2 = F.max_pool2d(x, 2, 2, return_indices=True)
        x = self.dec[0](F.max_unpool2d(self.enc[2](x), i2, 2, 2))
        x = self.dec[1](F.max_unpool2d(x, i1, 2, 2))
        return self.head(x)


# PyTorch 1.13 has no ONNX export for max_unpool2d: SegNet's 2x2 unpools written as MaxUnpool,
# the way users export them.
def max_unpool2x2(g, x, indices, output_size):
    return g.op('MaxUnpool', x, indices, kernel_shape_i=[2, 2], strides_i=[2, 2])


torch.onnx.register_custom_op_symbolic('aten::max_unpool2d', max_unpool2x2, 11)


specs = {'vgg11': (m.vgg11, 224), 'alexnet': (m.alexnet, 224), 'squeezenet1_0': (m.squeezenet1_0, 224),
         'densenet121': (m.densenet121, 224), 'inception_v3': (lambda: m.inception_v3(aux_logits=False, init_weights=True), 299),
         'googlenet': (lambda: m.googlenet(aux_logits=False, init_weights=True), 224),
         'shufflenet_v2_x1_0': (m.shufflenet_v2_x1_0, 224), 'mobilenet_v3_small': (m.mobilenet_v3_small, 224),
         'efficientnet_b0': (m.efficientnet_b0, 224), 'resnet18': (m.resnet18, 224),
         'vit_b_16': (vit, 224), 'swin_t': (m.swin_t, 224), 'convnext_tiny': (m.convnext_tiny, 224),
         'efficientnet_v2_s': (m.efficientnet_v2_s, 224),
         'deeplabv3_mobilenet_v3_large': (lambda: seg.deeplabv3_mobilenet_v3_large(weights_backbone=None, aux_loss=False), 224),
         'fcn_resnet50': (lambda: seg.fcn_resnet50(weights_backbone=None, aux_loss=False), 224),
         'lraspp_mobilenet_v3_large': (lambda: seg.lraspp_mobilenet_v3_large(weights_backbone=None), 224),
         'text_detector': (TextDetector, 256), 'text_recognizer': (TextRecognizer, (32, 160)),
         'segnet': (SegNet, 96), 'crnn': (CRNN, (32, 160)),
         # Video classifiers: a clip of 4 frames of 64x64 (the input is [N, 3, T, H, W]) for the
         # tests, and of 16 frames of 112x112, as trained on Kinetics-400, for the benchmarks.
         'r3d_18': (video.r3d_18, (4, 64, 64)), 'r2plus1d_18': (video.r2plus1d_18, (4, 64, 64)),
         'r3d_18_16x112': (video.r3d_18, (16, 112, 112)), 'r2plus1d_18_16x112': (video.r2plus1d_18, (16, 112, 112)),
         's3d_16x224': (video.s3d, (16, 224, 224))}


def detector(make):
    # torchvision's own initialisation leaves the heads' outputs all but constant (every score
    # 1/91, every box its anchor), which would test nothing: scaled normal weights and random
    # batch-norm statistics give varied scores and boxes, without saturating the softmax.
    model = make(weights=None, weights_backbone=None, num_classes=91)
    for mod in model.modules():
        if isinstance(mod, nn.Conv2d):
            nn.init.kaiming_normal_(mod.weight, nonlinearity='linear')
            if mod.bias is not None:
                nn.init.normal_(mod.bias, std=0.1)
        elif isinstance(mod, nn.BatchNorm2d):
            nn.init.uniform_(mod.weight, 0.5, 1.5)
            nn.init.normal_(mod.bias, std=0.1)
            mod.running_mean.normal_(0, 0.1)
            mod.running_var.uniform_(0.5, 1.5)
    if hasattr(model, 'roi_heads'):  # enough boxes over Faster R-CNN's 0.05 score threshold
        with torch.no_grad():
            model.roi_heads.box_predictor.cls_score.weight.mul_(20)
    return model


class Detections(nn.Module):  # one image in, its detections out as three tensors
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        d = self.model([x[0]])[0]
        return d['boxes'], d['scores'], d['labels']


detectors = {'ssdlite320_mobilenet_v3_large': det.ssdlite320_mobilenet_v3_large,
             'fasterrcnn_mobilenet_v3_large_320_fpn': det.fasterrcnn_mobilenet_v3_large_320_fpn}


class Logits(nn.Module):  # segmentation models return {'out': ...}
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        y = self.model(x)
        return y['out'] if isinstance(y, dict) else y


for name in sys.argv[1:]:
    if name in detectors:
        torch.onnx.export(Detections(detector(detectors[name])).eval(), torch.rand(1, 3, 320, 320), name + '.onnx',
                          opset_version=13, input_names=['input'], output_names=['boxes', 'scores', 'labels'])
        print('exported', name)
        continue
    fn, size = specs[name]
    dims = size if isinstance(size, tuple) else (size, size)
    model = Logits(fn()).eval()
    x = torch.randn(1, 3, *dims)
    axes = {0: 'N', 3: 'W'} if name == 'text_recognizer' else {0: 'N'}
    torch.onnx.export(model, x, name + '.onnx', opset_version=13, input_names=['input'], output_names=['logits'],
                      dynamic_axes={'input': axes, 'logits': {0: 'N'}})
    print('exported', name)
