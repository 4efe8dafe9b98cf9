#include "options.h"

#include <strings.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace simdnorm_profile {
namespace {

constexpr const char* kUsage =
    "Usage: simdnorm-profile [options]\n"
    "\n"
    "Measures simdnorm's LayerNorm and RMSNorm on this machine, every ISA,\n"
    "against memcpy of the same bytes, the hand-written loop and oneDNN's\n"
    "LayerNorm (when built in). Default: hidden size 896, rows 1,64,4096,\n"
    "both kinds, f32 and bf16, 1 thread and all threads, plus one fused-add\n"
    "line (RMSNorm bf16, rows 4096: vLLM's pre-norm step, against the\n"
    "unfused add loop + norm), each on aligned buffers and 16 bytes off\n"
    "(about 25 s).\n"
    "\n"
    "  --cols N[,N...]        hidden sizes (default 896)\n"
    "  --rows N[,N...]        rows per call (default 1,64,4096)\n"
    "  --isa NAME[,NAME...]   ISAs to force (default: every ISA listed by\n"
    "                         simdnorm_isa_name on this machine)\n"
    "  --kind K[,K]           layernorm, rmsnorm (default both)\n"
    "  --dtype T[,T...]       f32, bf16, f16, or X:Y[:P] for mixed x, y and\n"
    "                         parameter types, e.g. bf16:f32 (P = Y when\n"
    "                         left out) (default f32,bf16; --dtypes too)\n"
    "  --variant V[,V...]     plain, fused-add (residual in, sum_out out),\n"
    "                         gemma (gamma_offset 1), hf-round\n"
    "                         (ROUND_NORMALIZED), int8 (y int8, a scale per\n"
    "                         row), int8-gN (a scale per N elements); join\n"
    "                         with '+', e.g. fused-add+int8 (default plain;\n"
    "                         this or --kind, --dtype, --cols, --rows drops\n"
    "                         the default fused-add line)\n"
    "  --threads N[,N]        max_threads values; 0 = all (default 1,0)\n"
    "  --offset X[:Y][,...]   where the buffers start, in bytes past a "
    "64-byte\n"
    "                         line: x (and gamma, beta, residual, sum_out) at\n"
    "                         X, y at Y (Y = X when left out); multiples of 4\n"
    "                         below 64; every configuration runs at each\n"
    "                         (default 0,16: aligned, and 16 bytes off as the\n"
    "                         rows of a std::vector are)\n"
    "  --reps N               timed batches per measurement (default 9);\n"
    "                         the table reports their median\n"
    "  --batch-ms MS          length of one batch (default 4)\n"
    "  --no-peers             simdnorm only (no memcpy, loop, oneDNN)\n"
    "  --no-check             skip the comparison with the float64 reference\n"
    "  --strict               exit status 1 when a simdnorm call fails or its\n"
    "                         output is off the reference (a smoke test)\n"
    "  --json [FILE]          results as JSON (stdout when FILE is absent)\n"
    "  --csv [FILE]           results as CSV (stdout when FILE is absent)\n"
    "  --svg FILE             GB/s per ISA as a grouped SVG bar chart\n"
    "  --markdown [FILE]      a summary table in Markdown (stdout when FILE\n"
    "                         is absent)\n"
    "  --update-doc FILE      replace the summary between the markers\n"
    "                         <!-- simdnorm-profile:begin/end --> in FILE\n"
    "  --help                 this text\n"
    "\n"
    "GB/s counts the bytes a call moves once per row: x read + y written,\n"
    "plus the residual read and sum_out written (fused add) and the int8\n"
    "scales; gamma and beta are not counted. The unfused peer (variants\n"
    "with a fused add or int8 output: an add loop, simdnorm on the first\n"
    "ISA, a quantize loop) is counted with the bytes it moves itself.\n"
    "'of memcpy' = time of memcpy of the call's bytes / time of the row's\n"
    "implementation (1.00 = memcpy speed); 'vs loop', 'vs oneDNN' and 'vs\n"
    "unfused' = the peer's time / this implementation's time (above 1 =\n"
    "faster than the peer).\n";

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool ParseSize(const std::string& s, size_t* v) {
  if (s.empty() || s[0] == '-') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *v = static_cast<size_t>(n);
  return true;
}

bool ParseDType(const std::string& s, simdnorm_dtype* t) {
  if (strcasecmp(s.c_str(), "f32") == 0 || strcasecmp(s.c_str(), "fp32") == 0 ||
      strcasecmp(s.c_str(), "float") == 0) {
    *t = SIMDNORM_F32;
    return true;
  }
  if (strcasecmp(s.c_str(), "bf16") == 0) {
    *t = SIMDNORM_BF16;
    return true;
  }
  if (strcasecmp(s.c_str(), "f16") == 0 || strcasecmp(s.c_str(), "fp16") == 0 ||
      strcasecmp(s.c_str(), "half") == 0) {
    *t = SIMDNORM_F16;
    return true;
  }
  return false;
}

bool ParseDTypes(const std::string& s, DTypes* t) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t end = s.find(':', start);
    parts.push_back(
        s.substr(start, end == std::string::npos ? end : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (parts.empty() || parts.size() > 3) return false;
  if (!ParseDType(parts[0], &t->x)) return false;
  t->y = t->x;
  if (parts.size() >= 2 && !ParseDType(parts[1], &t->y)) return false;
  t->param = t->y;
  if (parts.size() == 3 && !ParseDType(parts[2], &t->param)) return false;
  return true;
}

// "X" or "X:Y", each a multiple of 4 below 64.
bool ParseOffset(const std::string& s, Offset* o) {
  auto one = [](const std::string& v, size_t* n) {
    return ParseSize(v, n) && *n < 64 && *n % 4 == 0;
  };
  const size_t colon = s.find(':');
  if (!one(s.substr(0, colon), &o->x)) return false;
  o->y = o->x;
  return colon == std::string::npos || one(s.substr(colon + 1), &o->y);
}

int Fail(const std::string& msg) {
  std::fprintf(stderr, "simdnorm-profile: %s (see --help)\n", msg.c_str());
  return 2;
}

}  // namespace

const char* DTypeName(simdnorm_dtype t) {
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

std::string DTypesName(const DTypes& t) {
  if (t.x == t.y && t.y == t.param) return DTypeName(t.x);
  return std::string(DTypeName(t.x)) + ":" + DTypeName(t.y) + ":" +
         DTypeName(t.param);
}

std::string Variant::Name() const {
  std::string s;
  auto add = [&](const std::string& f) { s += (s.empty() ? "" : "+") + f; };
  if (fused_add) add("fused-add");
  if (gemma) add("gemma");
  if (hf_round) add("hf-round");
  if (int8) add(quant_group ? "int8-g" + std::to_string(quant_group) : "int8");
  return s.empty() ? "plain" : s;
}

bool ParseVariant(const std::string& s, Variant* v) {
  Variant out;
  if (strcasecmp(s.c_str(), "plain") == 0) {
    *v = out;
    return true;
  }
  size_t start = 0;
  for (;;) {
    const size_t end = s.find('+', start);
    const std::string f =
        s.substr(start, end == std::string::npos ? end : end - start);
    bool* flag = nullptr;
    if (f == "fused-add") {
      flag = &out.fused_add;
    } else if (f == "gemma") {
      flag = &out.gemma;
    } else if (f == "hf-round") {
      flag = &out.hf_round;
    } else if (f == "int8" || f.rfind("int8-g", 0) == 0) {
      flag = &out.int8;
      if (f != "int8") {
        size_t g;
        if (!ParseSize(f.substr(6), &g) || g == 0 || g > (size_t{1} << 24)) {
          return false;
        }
        out.quant_group = g;
      }
    } else {
      return false;
    }
    if (*flag) return false;  // repeated
    *flag = true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  *v = out;
  return true;
}

std::string OffsetName(const Offset& o) {
  return std::to_string(o.x) + (o.x == o.y ? "" : ":" + std::to_string(o.y));
}

const char* KindName(simdnorm_kind k) {
  return k == SIMDNORM_RMSNORM ? "rmsnorm" : "layernorm";
}

int ParseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_value = false;
    if (arg.rfind("--", 0) == 0) {
      const size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_value = true;
      }
    }
    // A required value: the rest after '=' or the next argument.
    auto need = [&](std::string* v) {
      if (has_value) {
        *v = value;
        return true;
      }
      if (i + 1 >= argc) return false;
      *v = argv[++i];
      return true;
    };
    // An optional value: after '=', or a next argument not starting "--".
    auto maybe = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0) {
        return argv[++i];
      }
      return "-";
    };
    auto sizes = [&](std::vector<size_t>* out, bool allow_zero) {
      std::string v;
      if (!need(&v)) return Fail(arg + " needs a value");
      out->clear();
      for (const std::string& p : Split(v)) {
        size_t n;
        if (!ParseSize(p, &n) || (!allow_zero && n == 0)) {
          return Fail("bad number '" + p + "' for " + arg);
        }
        out->push_back(n);
      }
      if (out->empty()) return Fail(arg + " needs a value");
      return 0;
    };

    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return -1;
    } else if (arg == "--cols") {
      o->fused_line = false;
      if (int r = sizes(&o->cols, false)) return r;
    } else if (arg == "--rows") {
      o->fused_line = false;
      if (int r = sizes(&o->rows, false)) return r;
    } else if (arg == "--threads") {
      if (int r = sizes(&o->threads, true)) return r;
    } else if (arg == "--offset") {
      std::string v;
      if (!need(&v)) return Fail(arg + " needs a value");
      o->offsets.clear();
      for (const std::string& p : Split(v)) {
        Offset off;
        if (!ParseOffset(p, &off)) {
          return Fail("bad offset '" + p +
                      "' (X or X:Y, multiples of 4 below 64)");
        }
        o->offsets.push_back(off);
      }
      if (o->offsets.empty()) return Fail(arg + " needs a value");
    } else if (arg == "--isa") {
      std::string v;
      if (!need(&v)) return Fail("--isa needs a value");
      o->isas = Split(v);
    } else if (arg == "--kind") {
      o->fused_line = false;
      std::string v;
      if (!need(&v)) return Fail("--kind needs a value");
      o->kinds.clear();
      for (const std::string& p : Split(v)) {
        if (strcasecmp(p.c_str(), "layernorm") == 0 ||
            strcasecmp(p.c_str(), "ln") == 0) {
          o->kinds.push_back(SIMDNORM_LAYERNORM);
        } else if (strcasecmp(p.c_str(), "rmsnorm") == 0 ||
                   strcasecmp(p.c_str(), "rms") == 0) {
          o->kinds.push_back(SIMDNORM_RMSNORM);
        } else {
          return Fail("unknown kind '" + p + "'");
        }
      }
      if (o->kinds.empty()) return Fail("--kind needs a value");
    } else if (arg == "--dtype" || arg == "--dtypes") {
      o->fused_line = false;
      std::string v;
      if (!need(&v)) return Fail(arg + " needs a value");
      o->dtypes.clear();
      for (const std::string& p : Split(v)) {
        DTypes t;
        if (!ParseDTypes(p, &t)) return Fail("unknown dtype '" + p + "'");
        o->dtypes.push_back(t);
      }
      if (o->dtypes.empty()) return Fail(arg + " needs a value");
    } else if (arg == "--variant") {
      o->fused_line = false;
      std::string v;
      if (!need(&v)) return Fail("--variant needs a value");
      o->variants.clear();
      for (const std::string& p : Split(v)) {
        Variant var;
        if (!ParseVariant(p, &var)) {
          return Fail("unknown variant '" + p +
                      "' (plain, or fused-add, gemma, hf-round, int8, int8-gN "
                      "joined with '+')");
        }
        o->variants.push_back(var);
      }
      if (o->variants.empty()) return Fail("--variant needs a value");
    } else if (arg == "--reps") {
      std::string v;
      size_t n;
      if (!need(&v) || !ParseSize(v, &n) || n == 0) {
        return Fail("--reps needs a positive number");
      }
      o->reps = n;
    } else if (arg == "--batch-ms") {
      std::string v;
      if (!need(&v)) return Fail("--batch-ms needs a value");
      char* end = nullptr;
      const double ms = std::strtod(v.c_str(), &end);
      if (*end != '\0' || !(ms > 0.0) || ms > 10000.0) {
        return Fail("bad --batch-ms '" + v + "'");
      }
      o->batch_ms = ms;
    } else if (arg == "--no-peers") {
      o->peers = false;
    } else if (arg == "--no-check") {
      o->check = false;
    } else if (arg == "--strict") {
      o->strict = true;
    } else if (arg == "--json") {
      o->json = maybe();
    } else if (arg == "--csv") {
      o->csv = maybe();
    } else if (arg == "--markdown") {
      o->markdown = maybe();
    } else if (arg == "--update-doc") {
      if (!need(&o->update_doc) || o->update_doc.empty()) {
        return Fail("--update-doc needs a FILE");
      }
    } else if (arg == "--svg") {
      if (!need(&o->svg) || o->svg.empty()) return Fail("--svg needs a FILE");
    } else {
      return Fail("unknown argument '" + std::string(argv[i]) + "'");
    }
  }
  const int to_stdout =
      (o->json == "-") + (o->csv == "-") + (o->markdown == "-");
  if (to_stdout > 1) {
    return Fail("only one of --json, --csv, --markdown can write to stdout");
  }
  if (o->svg == "-") return Fail("--svg needs a FILE");
  // Machine-readable output on stdout replaces the table there.
  o->table = to_stdout == 0;
  return 0;
}

}  // namespace simdnorm_profile
