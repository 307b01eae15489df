// Internal to src/image: libjpeg's error manager for the decoder and the encoder. libjpeg's
// error_exit must not return: on_error stores the message and longjmps to the setjmp of the
// phase function that called libjpeg; output_message is silenced (the library never prints).
#pragma once
#include <csetjmp>
#include <cstdio>
// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>

namespace systolic::image::jpeg {

struct ErrorManager {
  jpeg_error_mgr pub;  // first, so a j_common_ptr's err can be cast back
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] inline void on_error(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

inline void no_output(j_common_ptr) {}

}  // namespace systolic::image::jpeg
