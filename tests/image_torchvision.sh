#!/usr/bin/env bash
# systolic's decode + Resize(256) + CenterCrop(224) against torchvision's on PIL images (JPEG and
# PNG, many sizes, aspect ratios and modes): mean absolute difference <= 1/255 per pixel.
# Exit 77 (skipped) when PIL/torchvision is missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build/image_torchvision}
bin=${2:-$root/build/systolic}
py=/usr/bin/python3
if ! $py -c "import numpy, PIL, torchvision" 2>/dev/null; then
  echo "skipped: missing python3-pil/python3-torchvision"; exit 77
fi
rm -rf "$out"
exec $py "$root/tests/image_torchvision.py" --systolic "$bin" --out "$out"
