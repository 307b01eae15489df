#!/usr/bin/env bash
# Installs what systolic needs on Debian 12 (only what is missing), then configures and builds.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(build-essential cmake g++ libonnx-dev libprotobuf-dev protobuf-compiler libcpuinfo-dev
      libpthreadpool-dev libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev
      libbenchmark-dev libonnx-testdata libjpeg62-turbo-dev libpng-dev
      libboost1.81-dev libgrpc++-dev protobuf-compiler-grpc python3-grpcio python3-protobuf curl
      pybind11-dev python3-pybind11 python3-pytest python3-setuptools python3-pip python3-numpy python3-pil python3-onnx python3-torch python3-torchvision)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js may come from elsewhere (with its own npm); install Debian's only when absent.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# ONNX Runtime (CPU) for the side-by-side checks and benchmarks, from npm, at the version the
# benchmarks' figures were measured against (bench/package.json pins it; a newer release would
# change the peer under every ratio).
ort_version=1.30.0
installed=$(node -p "require('./bench/node_modules/onnxruntime-node/package.json').version" 2>/dev/null || true)
if [ "$installed" != "$ort_version" ]; then
  (cd bench && npm install --no-save --ignore-scripts --no-audit --no-fund --silent "onnxruntime-node@$ort_version") ||
    echo "setup: onnxruntime-node $ort_version could not be installed; ORT comparisons will be skipped"
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
