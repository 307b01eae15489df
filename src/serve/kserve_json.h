// The REST body codec: KServe v2 JSON and Triton's binary tensor data extension, to and from the
// protocol-neutral InferRequest/InferResponse. Kept apart from the HTTP server so it can be
// tested without a network. Nothing here throws: every malformed body is an Error naming the
// field.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

#include "serve/infer.h"

namespace systolic::serve {

// `body` is the whole request body; `header_length` the Inference-Header-Content-Length value,
// "" when absent (then the body is JSON only). With it, the first N bytes are the JSON and each
// input with parameters.binary_data_size takes that many of the following bytes, in the order of
// the JSON inputs. JSON `data` may be flat or nested (each nested level one leading dimension,
// the innermost holding the rest); numbers are converted to the datatype with range checks.
// An output's binary flag is its parameters.binary_data, else the request's binary_data_output.
std::variant<InferRequest, Error> decode_rest_request(std::string_view body, std::string_view header_length,
                                                      const std::string& model, const std::string& version);

// Sets r.binary for every output from the request (the front end owns this REST-only choice):
// a requested output's own flag, else the request's binary_data_output.
void resolve_binary_outputs(const InferRequest& req, InferResponse& r);

struct RestBody {
  std::string body;
  bool binary = false;            // some output is binary: send Inference-Header-Content-Length
  std::size_t header_length = 0;  // the JSON part's bytes when binary
};

// JSON outputs carry a flat `data` array (BYTES as strings, non-finite floats as null, FP16 and
// BF16 widened); binary ones carry parameters.binary_data_size and follow the JSON in order.
// An output whose bytes disagree with its shape is an internal error.
std::variant<RestBody, Error> encode_rest_response(const InferResponse& r);

// {"error": message}
std::string error_json(std::string_view message);

// A JSON string literal, invalid UTF-8 replaced rather than failing.
std::string json_string(std::string_view s);

}  // namespace systolic::serve
