// What both tools' writers share: output files, JSON numbers as the tools
// have always written them, CSV fields and XML text.
#ifndef SIMDNORM_TOOLS_COMMON_OUTPUT_H_
#define SIMDNORM_TOOLS_COMMON_OUTPUT_H_

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace simdnorm_tools {

// An output: stdout for "-" (and ""), else a file; closed when destroyed.
class Output {
 public:
  Output() = default;
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;
  ~Output() { Close(); }
  bool Open(const std::string& path) {
    f_ = path.empty() || path == "-" ? stdout : std::fopen(path.c_str(), "w");
    return f_ != nullptr;
  }
  std::FILE* get() const { return f_; }
  bool is_stdout() const { return f_ == stdout; }
  // False when a write failed.
  bool Close() {
    std::FILE* f = f_;
    f_ = nullptr;
    if (!f) return true;
    return f == stdout ? std::fflush(f) == 0 : std::fclose(f) == 0;
  }

 private:
  std::FILE* f_ = nullptr;
};

using Json = nlohmann::ordered_json;

// A number written as text: an integer unless it has a point or exponent.
inline Json JsonNumberText(const std::string& s) {
  if (s.find_first_of(".e") == std::string::npos) return std::stoll(s);
  return std::stod(s);
}

// A number as printf's %.Ng writes it, so a whole value stays a JSON
// integer ("32", not "32.0") and the digits are the same; null when not
// finite.
inline Json JsonNumber(double v, int digits) {
  if (!std::isfinite(v)) return nullptr;
  return JsonNumberText(fmt::format("{:.{}g}", v, digits));
}

inline std::string JsonDump(const Json& j) {
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

// A CSV field: quoted (quotes doubled) when it holds a comma, quote or
// newline.
inline std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// fmt::print and a newline (for raw-string formats such as SVG elements).
template <class... T>
void PrintLine(std::FILE* f, fmt::format_string<T...> format, T&&... args) {
  fmt::print(f, format, std::forward<T>(args)...);
  std::fputc('\n', f);
}

// Text for XML (SVG) content and attribute values.
inline std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    const char* e = c == '&'   ? "&amp;"
                    : c == '<' ? "&lt;"
                    : c == '>' ? "&gt;"
                    : c == '"' ? "&quot;"
                               : nullptr;
    out += e ? std::string(e) : std::string(1, c);
  }
  return out;
}

}  // namespace simdnorm_tools

#endif  // SIMDNORM_TOOLS_COMMON_OUTPUT_H_
