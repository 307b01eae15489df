// Fuzz target: the KServe v2 REST body parser (JSON and Triton's binary tensor extension).
// The input is "LENGTH\nBODY": LENGTH is the Inference-Header-Content-Length value ("" when
// the header is absent). A request that parses is answered with its own inputs as outputs,
// through the response encoder.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "serve/kserve_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace systolic::serve;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::size_t nl = in.find('\n');
  if (nl == std::string_view::npos) return 0;
  auto req = decode_rest_request(in.substr(nl + 1), in.substr(0, nl), "m", "1");
  if (const auto* r = std::get_if<InferRequest>(&req)) {
    InferResponse resp;
    resp.model = r->model;
    resp.outputs = r->inputs;
    resolve_binary_outputs(*r, resp);
    (void)encode_rest_response(resp);
  }
  return 0;
}
