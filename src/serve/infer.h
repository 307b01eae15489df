// The server's protocol-neutral request and response: what the REST (KServe v2 JSON and binary
// tensor extension) and gRPC front ends decode into and encode from. Tensors travel as raw
// little-endian, row-major bytes; a BYTES tensor is each element as a 4-byte little-endian
// length followed by its bytes (the binary extension's and raw_input_contents' encoding).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace systolic::serve {

// How a failure maps onto HTTP (400/404/503/501/500) and gRPC status codes.
enum class Code { ok, invalid_argument, not_found, unavailable, unimplemented, internal };
int http_status(Code c);

struct Error {
  Code code = Code::internal;
  std::string message;
};

using Param = std::variant<bool, int64_t, double, std::string>;
using Params = std::map<std::string, Param>;

struct WireTensor {
  std::string name;
  std::string datatype;        // KServe spelling: FP32, UINT8, INT64, BYTES, BOOL, ...
  std::vector<int64_t> shape;
  std::string data;            // raw bytes as above
  Params parameters;
};

struct RequestedOutput {
  std::string name;
  int64_t classification = 0;  // > 0: top-K "score:index:label" BYTES instead of the tensor
  bool binary = false;         // REST: send as binary (per output, or binary_data_output)
  Params parameters;
};

struct InferRequest {
  std::string model, version, id;
  Params parameters;
  std::vector<WireTensor> inputs;
  std::vector<RequestedOutput> outputs;  // empty: every output
  int64_t timeout_us = 0;                // > 0: dropped unless computed within this time
};

struct InferResponse {
  std::string model, version, id;
  std::vector<WireTensor> outputs;
  std::vector<bool> binary;              // REST: per output, whether it goes binary
};

// KServe datatype <-> element size (0 for BYTES and unknown names).
std::size_t datatype_size(const std::string& datatype);

}  // namespace systolic::serve
