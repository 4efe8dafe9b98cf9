// Text escapes both tools' writers share.
#ifndef SIMDNORM_TOOLS_COMMON_TEXT_H_
#define SIMDNORM_TOOLS_COMMON_TEXT_H_

#include <string>

namespace simdnorm_tools {

// A CSV field: quoted (quotes doubled) when it holds a comma, quote or
// newline.
inline std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Text for XML (SVG) content and attribute values.
inline std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace simdnorm_tools

#endif  // SIMDNORM_TOOLS_COMMON_TEXT_H_
