// decode(): sniffs JPEG or PNG from the leading bytes; everything else is named in the error.
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "image/decoders.h"

namespace systolic::image {
namespace {

bool starts_with(const uint8_t* d, std::size_t n, const char* magic, std::size_t m, std::size_t at = 0) {
  return n >= at + m && std::memcmp(d + at, magic, m) == 0;
}

// Printable ASCII, whitespace and well-formed UTF-8 sequences: what a text file holds. Random
// bytes are almost never well-formed UTF-8.
bool looks_like_text(const uint8_t* d, std::size_t n) {
  const std::size_t k = n < 512 ? n : 512;
  for (std::size_t i = 0; i < k; ++i) {
    const uint8_t c = d[i];
    if (c < 0x80) {
      if ((c < 0x20 && c != '\n' && c != '\r' && c != '\t') || c == 0x7f) return false;
      continue;
    }
    const int more = (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : -1;
    if (more < 0 || c == 0xC0 || c == 0xC1) return false;
    for (int j = 1; j <= more; ++j)
      if (i + j < k && (d[i + j] & 0xC0) != 0x80) return false;  // a sequence cut by the window is fine
    i += more;
  }
  return true;
}

// "text (\"first characters...\")", with control bytes shown as spaces.
std::string text_excerpt(const uint8_t* d, std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n && s.size() < 32; ++i) s += (d[i] < 0x20 || d[i] >= 0x7f) ? ' ' : char(d[i]);
  return "text (\"" + s + (n > 32 ? "...\")" : "\")");
}

std::string what_it_looks_like(const uint8_t* d, std::size_t n) {
  if (n == 0) return "an empty file";
  if (starts_with(d, n, "GIF87a", 6) || starts_with(d, n, "GIF89a", 6)) return "a GIF image";
  if (starts_with(d, n, "RIFF", 4) && starts_with(d, n, "WEBP", 4, 8)) return "a WebP image";
  if (starts_with(d, n, "II*\0", 4) || starts_with(d, n, "MM\0*", 4)) return "a TIFF image";
  if (starts_with(d, n, "ftyp", 4, 4)) return "an ISO media file (HEIC, AVIF or MP4)";
  if (starts_with(d, n, "BM", 2) && n >= 14) return "a BMP image";
  if (starts_with(d, n, "\x93NUMPY", 6)) return "a NumPy .npy file";
  if (starts_with(d, n, "%PDF", 4)) return "a PDF document";
  if (starts_with(d, n, "\x1f\x8b", 2)) return "gzip-compressed data";
  if (starts_with(d, n, "PK\x03\x04", 4)) return "a ZIP archive";
  if (looks_like_text(d, n)) return text_excerpt(d, n);
  return "";
}

}  // namespace

Status prepare_output(int64_t width, int64_t height, const char* format, Image* out) {
  if (width <= 0 || height <= 0) return Err("%s has an empty size %lldx%lld", format, (long long)width, (long long)height);
  if (width * height > kMaxPixels)
    return Err("%s is %lldx%lld pixels, over the limit of %lld pixels", format, (long long)width, (long long)height,
               (long long)kMaxPixels);
  out->width = static_cast<int>(width);
  out->height = static_cast<int>(height);
  out->rgb.resize(static_cast<std::size_t>(width * height * 3));  // keeps capacity when shrinking
  return Status::Ok();
}

Status decode(const uint8_t* data, std::size_t size, Image* out) {
  if (size >= 2 && data[0] == 0xFF && data[1] == 0xD8) return decode_jpeg(data, size, out);
  if (starts_with(data, size, "\x89PNG", 4)) return decode_png(data, size, out);
  const std::string looks = what_it_looks_like(data, size);
  if (!looks.empty()) return Err("not a JPEG or PNG image: it looks like %s", looks.c_str());
  return Err("not a JPEG or PNG image: unrecognised data starting %02x %02x %02x %02x", data[0], size > 1 ? data[1] : 0,
             size > 2 ? data[2] : 0, size > 3 ? data[3] : 0);
}

Status decode_file(const std::string& path, Image* out) {
  // One buffer per thread: a decoding thread reads file after file without allocating.
  thread_local std::vector<uint8_t> bytes;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Err("%s: %s", path.c_str(), std::strerror(errno));
  bytes.clear();
  uint8_t chunk[65536];
  std::size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) bytes.insert(bytes.end(), chunk, chunk + n);
  const bool read_error = std::ferror(f);
  const int err = errno;
  std::fclose(f);
  if (read_error) return Err("%s: %s", path.c_str(), std::strerror(err));
  Status st = decode(bytes.data(), bytes.size(), out);
  if (!st.ok()) return Err("%s: %s", path.c_str(), st.message().c_str());
  return st;
}

}  // namespace systolic::image
