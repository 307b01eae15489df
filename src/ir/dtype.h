// Element types, numbered as ONNX's TensorProto.DataType so the frontend maps them 1:1.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace systolic::ir {

enum class DType : uint8_t {
  undefined = 0,
  f32 = 1,
  u8 = 2,
  i8 = 3,
  u16 = 4,
  i16 = 5,
  i32 = 6,
  i64 = 7,
  string = 8,
  boolean = 9,
  f16 = 10,
  f64 = 11,
  u32 = 12,
  u64 = 13,
  bf16 = 16,
};

inline std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: case DType::i32: case DType::u32: return 4;
    case DType::u8: case DType::i8: case DType::boolean: return 1;
    case DType::u16: case DType::i16: case DType::f16: case DType::bf16: return 2;
    case DType::i64: case DType::f64: case DType::u64: return 8;
    default: return 0;
  }
}

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::u8: return "uint8";
    case DType::i8: return "int8";
    case DType::u16: return "uint16";
    case DType::i16: return "int16";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::string: return "string";
    case DType::boolean: return "bool";
    case DType::f16: return "float16";
    case DType::f64: return "float64";
    case DType::u32: return "uint32";
    case DType::u64: return "uint64";
    case DType::bf16: return "bfloat16";
    default: return "undefined";
  }
}

// Types the interpreter computes with (others are rejected with a clear error).
inline bool dtype_supported(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::i32 || t == DType::i64 ||
         t == DType::boolean || t == DType::u8 || t == DType::i8 || t == DType::u16 || t == DType::i16 ||
         t == DType::u32 || t == DType::u64;
}

}  // namespace systolic::ir
