#include "serve/infer.h"

namespace systolic::serve {

int http_status(Code c) {
  switch (c) {
    case Code::ok: return 200;
    case Code::invalid_argument: return 400;
    case Code::not_found: return 404;
    case Code::unavailable: return 503;
    case Code::unimplemented: return 501;
    case Code::internal: return 500;
  }
  return 500;
}

std::size_t datatype_size(const std::string& d) {
  if (d == "BOOL" || d == "UINT8" || d == "INT8") return 1;
  if (d == "UINT16" || d == "INT16" || d == "FP16" || d == "BF16") return 2;
  if (d == "UINT32" || d == "INT32" || d == "FP32") return 4;
  if (d == "UINT64" || d == "INT64" || d == "FP64") return 8;
  return 0;
}

}  // namespace systolic::serve
