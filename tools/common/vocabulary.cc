#include "common/vocabulary.h"

#include <fmt/format.h>
#include <strings.h>

#include <charconv>
#include <cmath>
#include <cstring>

namespace simdnorm_tools {

const char* dtype_name(simdnorm_dtype t) {
  static const char* const kNames[] = {"f32", "bf16", "f16", "i8"};
  return kNames[t];
}

bool parse_dtype(const std::string& s, simdnorm_dtype* t) {
  static const std::pair<const char*, simdnorm_dtype> kNames[] = {
      {"f32", SIMDNORM_F32},   {"fp32", SIMDNORM_F32}, {"float", SIMDNORM_F32},
      {"bf16", SIMDNORM_BF16}, {"f16", SIMDNORM_F16},  {"fp16", SIMDNORM_F16},
      {"half", SIMDNORM_F16}};
  for (const auto& [name, type] : kNames) {
    if (strcasecmp(s.c_str(), name) == 0) {
      *t = type;
      return true;
    }
  }
  return false;
}

namespace {

// The aliases and chart labels the tools have for some kinds.
struct Short {
  simdnorm_kind kind;
  const char *alias, *label;
};
constexpr Short kShort[] = {{SIMDNORM_LAYERNORM, "ln", "LN"},
                            {SIMDNORM_RMSNORM, "rms", "RMS"}};
const Short* short_of(simdnorm_kind k) {
  for (const Short& s : kShort) {
    if (s.kind == k) return &s;
  }
  return nullptr;
}

}  // namespace

const char* kind_label(simdnorm_kind k) {
  const Short* s = short_of(k);
  return s ? s->label : op_of(k).title;
}

bool parse_kind(const std::string& s, simdnorm_kind* k, bool lenient) {
  for (simdnorm_kind c : AllKinds()) {
    const Short* a = short_of(c);
    if (lenient ? strcasecmp(s.c_str(), kind_name(c)) == 0 ||
                      (a && strcasecmp(s.c_str(), a->alias) == 0)
                : s == kind_name(c)) {
      *k = c;
      return true;
    }
  }
  return false;
}

std::string kind_list() {
  std::vector<const char*> names;
  for (simdnorm_kind k : AllKinds()) names.push_back(kind_name(k));
  return fmt::format("{}", fmt::join(names, ", "));
}

std::string kind_names() {
  const std::string list = kind_list();
  const size_t last = list.rfind(", ");
  if (last == std::string::npos) return list;
  return list.substr(0, last) + " or " + list.substr(last + 2);
}

bool parse_size(const std::string& s, size_t* v) {
  const char* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, *v);
  return !s.empty() && r.ec == std::errc() && r.ptr == end;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == sep) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::string Variant::name() const {
  std::vector<std::string> f;
  if (fused_add) f.push_back("fused-add");
  if (gemma) f.push_back("gemma");
  if (hf_round) f.push_back("hf-round");
  if (int8)
    f.push_back(quant_group ? fmt::format("int8-g{}", quant_group) : "int8");
  return f.empty() ? "plain" : fmt::format("{}", fmt::join(f, "+"));
}

bool parse_variant(const std::string& s, Variant* v) {
  Variant out;
  for (const std::string& f :
       s == "plain" ? std::vector<std::string>() : split(s, '+')) {
    bool* feature = f == "fused-add"                           ? &out.fused_add
                    : f == "gemma"                             ? &out.gemma
                    : f == "hf-round"                          ? &out.hf_round
                    : f == "int8" || f.rfind("int8-g", 0) == 0 ? &out.int8
                                                               : nullptr;
    if (!feature || *feature) return false;  // unknown or repeated
    *feature = true;
    const std::string n = f.substr(std::min<size_t>(6, f.size()));
    if (feature == &out.int8 && f != "int8" &&  // int8-gN, no leading 0
        (n[0] == '0' || !parse_size(n, &out.quant_group) ||
         out.quant_group > (1u << 24))) {
      return false;
    }
  }
  *v = out;
  return true;
}

std::vector<Variant> default_variants() {
  std::vector<Variant> out(6);
  out[1].fused_add = true;
  out[2].gemma = true;
  out[3].hf_round = true;
  out[4].int8 = out[5].int8 = true;
  out[5].quant_group = 128;
  return out;
}

}  // namespace simdnorm_tools
