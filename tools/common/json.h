// JSON numbers as the tools have always written them: printf's %.Ng text,
// so a whole value stays a JSON integer ("32", not "32.0") and the digits
// are the same; null when not finite.
#ifndef SIMDNORM_TOOLS_COMMON_JSON_H_
#define SIMDNORM_TOOLS_COMMON_JSON_H_

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

namespace simdnorm_tools {

using Json = nlohmann::ordered_json;

// A number written as text: an integer unless it has a point or exponent.
inline Json JsonNumberText(const std::string& s) {
  if (s.find_first_of(".e") == std::string::npos) return std::stoll(s);
  return std::stod(s);
}

inline Json JsonNumber(double v, int digits) {
  if (!std::isfinite(v)) return nullptr;
  return JsonNumberText(fmt::format("{:.{}g}", v, digits));
}

inline std::string JsonDump(const Json& j) {
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace simdnorm_tools

#endif  // SIMDNORM_TOOLS_COMMON_JSON_H_
