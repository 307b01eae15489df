# systolic built from source on Debian 12, serving a model repository mounted at /mnt/models
# (KServe's storage initializer puts the model there). Build: docker build -t systolic .
FROM debian:12 AS build
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      build-essential cmake g++ libonnx-dev libprotobuf-dev protobuf-compiler libcpuinfo-dev libpthreadpool-dev \
      libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev libjpeg62-turbo-dev libpng-dev \
      libboost1.81-dev libgrpc++-dev protobuf-compiler-grpc pkg-config && rm -rf /var/lib/apt/lists/*
COPY . /src
RUN cmake -S /src -B /build -DCMAKE_BUILD_TYPE=Release -DSYSTOLIC_PYTHON=OFF -DSYSTOLIC_BENCH=OFF \
    && cmake --build /build -j"$(nproc)" --target systolic

FROM debian:12
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libonnx1 libprotobuf32 libcpuinfo0 libpthreadpool0 libjpeg62-turbo libpng16-16 libgrpc++1.51 \
      && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/systolic /usr/local/bin/systolic
# Compiled plans are cached here; mount a volume to keep them across restarts.
ENV SYSTOLIC_CACHE_DIR=/var/cache/systolic
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/systolic", "serve"]
CMD ["--model-repository=/mnt/models", "--http-port=8080", "--grpc-port=8081"]
