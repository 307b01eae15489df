// Conversion between the gRPC messages (inference.proto) and the server core's protocol-neutral
// types, kept apart from the service so it can be tested without a network.
#pragma once
#include <grpcpp/support/status.h>

#include <optional>
#include <string>
#include <variant>

#include "inference.pb.h"
#include "serve/infer.h"
#include "serve/server.h"

namespace systolic::serve {

using ProtoParams = google::protobuf::Map<std::string, inference::InferParameter>;

grpc::StatusCode grpc_code(Code c);
grpc::Status grpc_status(const Error& e);

std::variant<Params, Error> decode_params(const ProtoParams& in);
void encode_params(const Params& in, ProtoParams* out);

// Inputs come from raw_input_contents (one entry per input, in order) or from each input's
// typed contents, converted to raw little-endian bytes; never both. Raw entries are moved out
// of `m` rather than copied (a batch can be hundreds of MiB). The "timeout" parameter (int64,
// microseconds) becomes timeout_us; an output's "classification" (int64 > 0) becomes
// RequestedOutput::classification.
std::variant<InferRequest, Error> decode_infer_request(inference::ModelInferRequest& m);

// Every output goes to raw_output_contents, the only place tritonclient reads non-BYTES data
// from. The outputs' bytes are moved out of `r`.
void encode_infer_response(InferResponse&& r, inference::ModelInferResponse* m);

void encode_model_metadata(const ModelMetadata& md, inference::ModelMetadataResponse* m);

// Triton's JSON model configuration into the ModelConfig subset; fields the message does not
// carry are skipped.
std::optional<Error> decode_model_config(const std::string& json, inference::ModelConfig* m);

}  // namespace systolic::serve
