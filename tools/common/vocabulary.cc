#include "common/vocabulary.h"

#include <strings.h>

#include <cerrno>
#include <cstdlib>

namespace simdnorm_tools {

const char* dtype_name(simdnorm_dtype t) {
  switch (t) {
    case SIMDNORM_BF16:
      return "bf16";
    case SIMDNORM_F16:
      return "f16";
    case SIMDNORM_I8:
      return "i8";
    default:
      return "f32";
  }
}

bool parse_dtype(const std::string& s, simdnorm_dtype* t) {
  auto is = [&](const char* name) { return strcasecmp(s.c_str(), name) == 0; };
  if (is("f32") || is("fp32") || is("float")) {
    *t = SIMDNORM_F32;
  } else if (is("bf16")) {
    *t = SIMDNORM_BF16;
  } else if (is("f16") || is("fp16") || is("half")) {
    *t = SIMDNORM_F16;
  } else {
    return false;
  }
  return true;
}

const char* kind_name(simdnorm_kind k) {
  return k == SIMDNORM_RMSNORM ? "rmsnorm" : "layernorm";
}

std::string Variant::name() const {
  std::string s;
  auto add = [&](const std::string& f) { s += (s.empty() ? "" : "+") + f; };
  if (fused_add) add("fused-add");
  if (gemma) add("gemma");
  if (hf_round) add("hf-round");
  if (int8) {
    add(quant_group ? "int8-g" + std::to_string(quant_group) : "int8");
  }
  return s.empty() ? "plain" : s;
}

bool parse_variant(const std::string& s, Variant* v) {
  Variant out;
  if (s == "plain") {
    *v = out;
    return true;
  }
  size_t start = 0;
  for (;;) {
    const size_t end = s.find('+', start);
    const std::string f = s.substr(start, end - start);
    bool repeated = false;
    if (f == "fused-add") {
      repeated = out.fused_add;
      out.fused_add = true;
    } else if (f == "gemma") {
      repeated = out.gemma;
      out.gemma = true;
    } else if (f == "hf-round") {
      repeated = out.hf_round;
      out.hf_round = true;
    } else if (f == "int8" || f.rfind("int8-g", 0) == 0) {
      repeated = out.int8;
      out.int8 = true;
      if (f != "int8") {
        const std::string n = f.substr(6);
        if (n.empty() || n[0] < '1' || n[0] > '9') return false;
        errno = 0;
        char* e = nullptr;
        const unsigned long long g = std::strtoull(n.c_str(), &e, 10);
        if (errno || *e != '\0' || g > (1u << 24)) return false;
        out.quant_group = static_cast<size_t>(g);
      }
    } else {
      return false;
    }
    if (repeated) return false;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  *v = out;
  return true;
}

std::vector<Variant> default_variants() {
  std::vector<Variant> out(6);
  out[1].fused_add = true;
  out[2].gemma = true;
  out[3].hf_round = true;
  out[4].int8 = true;
  out[5].int8 = true;
  out[5].quant_group = 128;
  return out;
}

}  // namespace simdnorm_tools
