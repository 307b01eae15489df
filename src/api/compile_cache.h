// The compile cache: plans compiled from .onnx models, kept under the user's cache directory
// and keyed by the model's bytes, the target's features, the compile options and the build.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "plan/program.h"

namespace systolic::api {

// $SYSTOLIC_CACHE_DIR, else $XDG_CACHE_HOME/systolic, else $HOME/.cache/systolic ("" if none).
std::string default_cache_dir();

// 128-bit content hash (hex) of `n` bytes; fast enough for models of hundreds of MiB.
std::string content_hash(const void* data, std::size_t n);

// The key of compiling `model_bytes` (read from `model_path`; external data files named
// in it count by name, size and mtime) with `opts`: plan version, target ISA and feature
// bits, batch, optimize flag, and this executable's size and mtime.
std::string cache_key(const std::string& model_path, std::string_view model_bytes, const plan::CompileOptions& opts);

// The cache's size cap in bytes: $SYSTOLIC_CACHE_MAX (bytes, or a number with K, M or G:
// powers of 1024), default 2 GiB; 0 turns caching off. A value that is not a size keeps the
// default and says so in *note.
uint64_t cache_max_bytes(std::string* note);

// Deletes the .plan entries of `dir`, least recently used first (a hit touches its entry's
// mtime), until they take at most `cap` bytes; never `keep`. Safe beside other processes: an
// entry appears complete (written aside, then renamed) and a reader that mapped an entry keeps
// its bytes when it is deleted.
void evict_lru(const std::string& dir, uint64_t cap, const std::string& keep);

struct CachedCompile {
  std::shared_ptr<const plan::Program> program;
  bool hit = false;        // loaded from the cache, no compilation
  std::string path;        // the cache entry ("" when caching was off or failed)
  std::string note;        // why caching was skipped or an entry ignored ("" if nothing to say)
  double compile_ms = 0;   // import + pass pipeline (as stored in the plan on a hit)
  double load_ms = 0;      // hashing the model, reading and checking the plan on a hit
};

// Imports and compiles the .onnx at `model_path`, or loads the plan cached for it in
// `cache_dir` ("" disables caching). A corrupt, unreadable or unrunnable entry is ignored and
// recompiled; an unwritable directory only disables caching (with a note). Writes are atomic;
// after a write the directory is trimmed to cache_max_bytes().
Expected<CachedCompile> compile_onnx_cached(const std::string& model_path, const plan::CompileOptions& opts,
                                            const std::string& cache_dir);

}  // namespace systolic::api
