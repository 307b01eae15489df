// Small text helpers shared by the file parsers (SCALE-Sim topologies and configs).
#pragma once
#include <cctype>
#include <string>

namespace systolic {

// `s` without leading and trailing white space.
inline std::string trim(const std::string& s) {
  std::size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

}  // namespace systolic
