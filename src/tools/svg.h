// Small helpers for the hand-written SVG charts (roofline, tune).
#pragma once
#include <string>

namespace systolic::tools {

// Text and attribute values escaped for XML.
inline std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '&') o += "&amp;";
    else if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

}  // namespace systolic::tools
