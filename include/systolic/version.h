#pragma once
namespace systolic {
inline constexpr const char* kVersion = "0.1.0";
}
