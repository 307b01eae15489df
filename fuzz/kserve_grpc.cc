// Fuzz target: a gRPC ModelInferRequest (protobuf bytes) through the KServe request decoder.
#include <cstddef>
#include <cstdint>

#include "serve/grpc_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  inference::ModelInferRequest m;
  if (!m.ParseFromArray(data, static_cast<int>(size))) return 0;
  (void)systolic::serve::decode_infer_request(m);
  return 0;
}
