#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "common/cli.h"
#include "profile.h"

namespace simdnorm_profile {
namespace {

using simdnorm_tools::AddList;

constexpr const char* kDescription =
    "Measures simdnorm's LayerNorm and RMSNorm on this machine, every ISA,\n"
    "against memcpy of the same bytes, the hand-written loop and oneDNN's\n"
    "LayerNorm (when built in). Default: hidden size 896, rows 1,64,4096,\n"
    "both kinds, f32 and bf16, 1 thread and all threads, plus one fused-add\n"
    "line (RMSNorm bf16, rows 4096: vLLM's pre-norm step, against the\n"
    "unfused add loop + norm), each on aligned buffers and 16 bytes off\n"
    "(about 25 s).";

constexpr const char* kFooter =
    "GB/s counts the bytes a call moves once per row: x read + y written,\n"
    "plus the residual read and sum_out written (fused add) and the int8\n"
    "scales; gamma and beta are not counted. The unfused peer (variants\n"
    "with a fused add or int8 output: an add loop, simdnorm on the first\n"
    "ISA, a quantize loop) is counted with the bytes it moves itself.\n"
    "'of memcpy' = time of memcpy of the call's bytes / time of the row's\n"
    "implementation (1.00 = memcpy speed); 'vs loop', 'vs oneDNN' and 'vs\n"
    "unfused' = the peer's time / this implementation's time (above 1 =\n"
    "faster than the peer).";

// X[:Y[:W]], Y = X and W = Y when left out.
bool ParseDtypes(const std::string& s, Dtypes* t) {
  const std::vector<std::string> p = simdnorm_tools::split(s, ':');
  using simdnorm_tools::parse_dtype;
  return p.size() <= 3 && parse_dtype(p[0], &t->x) &&
         parse_dtype(p.size() > 1 ? p[1] : p[0], &t->y) &&
         parse_dtype(p.back(), &t->param);
}

// "X" or "X:Y", each a multiple of 4 below 64.
bool ParseOffset(const std::string& s, Offset* o) {
  const std::vector<std::string> p = simdnorm_tools::split(s, ':');
  auto one = [](const std::string& v, size_t* n) {
    return simdnorm_tools::parse_size(v, n) && *n < 64 && *n % 4 == 0;
  };
  return p.size() <= 2 && one(p[0], &o->x) && one(p.back(), &o->y);
}

int Fail(const std::string& msg) {
  fmt::print(stderr, "simdnorm-profile: {} (see --help)\n", msg);
  return 2;
}

}  // namespace

std::string DtypesName(const Dtypes& t) {
  if (t.x == t.y && t.y == t.param) return dtype_name(t.x);
  return fmt::format("{}:{}:{}", dtype_name(t.x), dtype_name(t.y),
                     dtype_name(t.param));
}

std::string OffsetName(const Offset& o) {
  return std::to_string(o.x) + (o.x == o.y ? "" : ":" + std::to_string(o.y));
}

int ParseOptions(int argc, char** argv, Options* o) {
  const auto app =
      simdnorm_tools::MakeApp("simdnorm-profile", kDescription, kFooter);
  const CLI::Validator positive = simdnorm_tools::SizeIn(1, SIZE_MAX);
  app->add_option("--cols", o->cols, "hidden sizes (default 896)")
      ->delimiter(',')
      ->check(positive)
      ->type_name("N[,N...]");
  app->add_option("--rows", o->rows, "rows per call (default 1,64,4096)")
      ->delimiter(',')
      ->check(positive)
      ->type_name("N[,N...]");
  app->add_option("--isa", o->isas,
                  "ISAs to force (default: every ISA listed by\n"
                  "simdnorm_isa_name on this machine)")
      ->delimiter(',')
      ->type_name("NAME[,NAME...]");
  simdnorm_tools::AddKinds(app.get(), &o->kinds, true, "(default all)");
  simdnorm_tools::AddOps(app.get(), &o->ops);
  AddList(app.get(), "--dtype,--dtypes", &o->dtypes, ParseDtypes,
          "f32, bf16, f16 or X:Y[:P] of them",
          "f32, bf16, f16, or X:Y[:P] for mixed x, y and\n"
          "parameter types, e.g. bf16:f32 (P = Y when\n"
          "left out) (default f32,bf16; --dtypes too)")
      ->type_name("T[,T...]");
  AddList(app.get(), "--variant", &o->variants, simdnorm_tools::parse_variant,
          simdnorm_tools::kVariantSyntax,
          "plain, fused-add (residual in, sum_out out),\n"
          "gemma (gamma_offset 1), hf-round\n"
          "(ROUND_NORMALIZED), int8 (y int8, a scale per\n"
          "row), int8-gN (a scale per N elements); join\n"
          "with '+', e.g. fused-add+int8 (default plain;\n"
          "this or --kind, --dtype, --cols, --rows drops\n"
          "the default fused-add line)")
      ->type_name("V[,V...]");
  app->add_option("--threads", o->threads,
                  "max_threads values; 0 = all (default 1,0)")
      ->delimiter(',')
      ->check(simdnorm_tools::SizeIn(0, SIZE_MAX))
      ->type_name("N[,N]");
  AddList(app.get(), "--offset", &o->offsets, ParseOffset,
          "X or X:Y, multiples of 4 below 64",
          "where the buffers start, in bytes past a 64-byte\n"
          "line: x (and gamma, beta, residual, sum_out) at\n"
          "X, y at Y (Y = X when left out); multiples of 4\n"
          "below 64; every configuration runs at each\n"
          "(default 0,16: aligned, and 16 bytes off as the\n"
          "rows of a std::vector are)")
      ->type_name("X[:Y][,...]");
  app->add_option("--reps", o->reps,
                  "timed batches per measurement (default 9);\n"
                  "the table reports their median")
      ->check(positive)
      ->type_name("N");
  app->add_option("--batch-ms", o->batch_ms, "length of one batch (default 4)")
      ->check(simdnorm_tools::NumberIf(
          [](double ms) { return ms > 0.0 && ms <= 10000.0; },
          "a number of ms above 0, at most 10000"))
      ->type_name("MS");
  bool no_peers = false, no_check = false;
  app->add_flag("--no-peers", no_peers,
                "simdnorm only (no memcpy, loop, oneDNN)");
  app->add_flag("--no-check", no_check,
                "skip the comparison with the float64 reference");
  app->add_flag("--strict", o->strict,
                "exit status 1 when a simdnorm call fails or its\n"
                "output is off the reference (a smoke test)");
  using simdnorm_tools::AddOptionalFile;  // without FILE: stdout ("-")
  AddOptionalFile(app.get(), "--json", &o->json,
                  "results as JSON (stdout when FILE is absent)");
  AddOptionalFile(app.get(), "--csv", &o->csv,
                  "results as CSV (stdout when FILE is absent)");
  app->add_option("--svg", o->svg, "GB/s per ISA as a grouped SVG bar chart")
      ->type_name("FILE");
  AddOptionalFile(app.get(), "--markdown", &o->markdown,
                  "a summary table in Markdown (stdout when FILE\n"
                  "is absent)");
  app->add_option("--update-doc", o->update_doc,
                  "replace the summary between the markers\n"
                  "<!-- simdnorm-profile:begin/end --> in FILE")
      ->type_name("FILE");
  app->set_help_flag("-h,--help", "this text");

  std::string error;
  if (const int status = simdnorm_tools::Parse(app.get(), argc, argv, &error)) {
    return status < 0 ? status : Fail(error);
  }
  if (app->count("--json") && o->json.empty()) o->json = "-";
  if (app->count("--csv") && o->csv.empty()) o->csv = "-";
  if (app->count("--markdown") && o->markdown.empty()) o->markdown = "-";
  for (const char* name :
       {"--cols", "--rows", "--kind", "--dtype", "--variant"}) {
    if (app->count(name)) o->fused_line = false;
  }
  o->peers = !no_peers;
  o->check = !no_check;
  if (o->cols.empty() || o->rows.empty() || o->threads.empty() ||
      o->kinds.empty() || o->dtypes.empty() || o->variants.empty() ||
      o->offsets.empty()) {
    return Fail("an option needs a value");
  }
  const int to_stdout =
      (o->json == "-") + (o->csv == "-") + (o->markdown == "-");
  if (to_stdout > 1) {
    return Fail("only one of --json, --csv, --markdown can write to stdout");
  }
  if (o->svg == "-" || (app->count("--svg") && o->svg.empty())) {
    return Fail("--svg needs a FILE");
  }
  if (app->count("--update-doc") && o->update_doc.empty()) {
    return Fail("--update-doc needs a FILE");
  }
  // Machine-readable output on stdout replaces the table there.
  o->table = to_stdout == 0;
  return 0;
}

}  // namespace simdnorm_profile
