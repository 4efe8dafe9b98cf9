#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

#include "common/output.h"
#include "profile.h"

namespace simdnorm_profile {
namespace {

using simdnorm_tools::Json;

constexpr const char* kDefinitions =
    R"(GB/s = (x bytes read + y bytes written) / time, once per row (gamma, beta not counted); of memcpy = memcpy time / time;
vs loop, vs oneDNN = peer time / time (above 1: faster); err = max |y - float64 reference| in ulps of y's type
variants: fused add also counts residual read + sum_out written, int8 the scales; unfused = add loop, simdnorm on the first ISA,
quantize loop, counted with its own bytes; vs unfused = its time / time; int8 err = max |q - reference q|
offset = bytes past a 64-byte line where x (and gamma, beta, residual, sum_out) and y start, x:y when they differ
)";

// One printed line: an implementation on a configuration, with its ratios.
struct Row {
  const ConfigResult* c = nullptr;
  const ImplResult* r = nullptr;
  double ns_row = NAN;
  double gbps = NAN;        // bytes it moves / time, 1e9 bytes per s
  double of_memcpy = NAN;   // memcpy time / this time
  double vs_loop = NAN;     // loop time / this time
  double vs_onednn = NAN;   // oneDNN time / this time
  double vs_unfused = NAN;  // unfused peer's time / this time
};

std::vector<Row> Rows(const std::vector<ConfigResult>& results) {
  std::vector<Row> rows;
  for (const ConfigResult& c : results) {
    auto peer_ns = [&](ImplType t) {
      for (const ImplResult& r : c.impls) {
        if (r.type == t && r.error.empty() && r.median_ns > 0) {
          return r.median_ns;
        }
      }
      return double{NAN};
    };
    for (const ImplResult& r : c.impls) {
      rows.push_back({&c, &r});
      if (!r.error.empty() || !(r.median_ns > 0)) continue;
      const double t = r.median_ns;
      rows.back() = {&c,
                     &r,
                     t / static_cast<double>(c.config.rows),
                     static_cast<double>(r.bytes) / t,
                     peer_ns(ImplType::kMemcpy) / t,
                     peer_ns(ImplType::kLoop) / t,
                     peer_ns(ImplType::kOneDnn) / t,
                     peer_ns(ImplType::kUnfused) / t};
    }
  }
  return rows;
}

// Every implementation's name, in order of first appearance.
std::vector<std::string> ImplNames(const std::vector<ConfigResult>& results) {
  std::vector<std::string> names;
  for (const ConfigResult& c : results) {
    for (const ImplResult& r : c.impls)
      simdnorm_tools::AddUnique(&names, r.name);
  }
  return names;
}

// "f32", "bf16" when all three agree, else "x:y:w" ("bf16:f32:f32").
std::string DtypesName(const Dtypes& t) {
  if (t.x == t.y && t.y == t.param) return dtype_name(t.x);
  return fmt::format("{}:{}:{}", dtype_name(t.x), dtype_name(t.y),
                     dtype_name(t.param));
}

// "16", or "16:0" when x and y differ.
std::string OffsetName(const Offset& o) {
  return std::to_string(o.x) + (o.x == o.y ? "" : ":" + std::to_string(o.y));
}

std::string ThreadsName(size_t t) { return t == 0 ? "all" : std::to_string(t); }

// v with `digits` decimals and a suffix ("1.25x"), "-" when not a number.
std::string Fixed(double v, int digits, const char* suffix = "") {
  if (std::isnan(v)) return "-";
  return fmt::format("{:.{}f}{}", v, digits, suffix);
}

// Three significant digits, never scientific notation for the table.
std::string Sig3(double v) {
  if (std::isnan(v)) return "-";
  if (std::isinf(v)) return "inf";
  if (v == 0) return "0";
  const double a = std::fabs(v);
  return Fixed(v, a >= 100 ? 0 : (a >= 10 ? 1 : (a >= 1 ? 2 : 3)));
}

Json Number(double v) { return simdnorm_tools::JsonNumber(v, 6); }
Json StringOrNull(const std::string& s) {
  return s.empty() ? Json(nullptr) : Json(s);
}

const char* TypeName(ImplType t) {
  static const char* const kNames[] = {"simdnorm", "memcpy", "loop", "onednn",
                                       "unfused"};
  return kNames[static_cast<int>(t)];
}

// The optional columns: shown when a configuration needs them.
struct Shown {
  bool variants = false, unfused = false, offsets = false;
  explicit Shown(const std::vector<ConfigResult>& results) {
    for (const ConfigResult& c : results) {
      variants = variants || !c.config.variant.plain();
      offsets = offsets || !c.config.offset.zero();
      for (const ImplResult& r : c.impls) {
        unfused = unfused || r.type == ImplType::kUnfused;
      }
    }
  }
};

// "rmsnorm", or "rmsnorm fused-add" for a variant.
std::string KindVariant(const Config& c) {
  std::string k = kind_name(c.kind);
  if (!c.variant.plain()) k += " " + c.variant.name();
  return k;
}

// The rows of the JSON report, whose keys (but err_ok, note and
// err_detail) are the CSV's columns.
Json ResultsJson(const std::vector<ConfigResult>& results) {
  Json rows = Json::array();
  for (const Row& row : Rows(results)) {
    const Config& c = row.c->config;
    const ImplResult& r = *row.r;
    const bool ok = r.error.empty();
    rows.push_back({
        {"kind", kind_name(c.kind)},
        {"x_type", dtype_name(c.dtypes.x)},
        {"y_type", dtype_name(c.dtypes.y)},
        {"param_type", dtype_name(c.dtypes.param)},
        {"cols", c.cols},
        {"rows", c.rows},
        {"threads", c.threads},
        {"impl", r.name},
        {"impl_type", TypeName(r.type)},
        {"bytes_per_call", row.c->moved_bytes},
        {"ns_per_call_median", Number(ok ? r.median_ns : NAN)},
        {"ns_per_call_min", Number(ok ? r.min_ns : NAN)},
        {"ns_per_row", Number(row.ns_row)},
        {"gbps", Number(row.gbps)},
        {"of_memcpy", Number(row.of_memcpy)},
        {"vs_loop", Number(row.vs_loop)},
        {"vs_onednn", Number(row.vs_onednn)},
        {"err_ulp", Number(r.err_ulp < 0 ? NAN : r.err_ulp)},
        {"err_ok", r.err_ok},
        {"error", StringOrNull(r.error)},
        {"note", StringOrNull(r.note)},
        {"variant", c.variant.name()},
        {"impl_bytes_per_call", r.bytes},
        {"vs_unfused", Number(row.vs_unfused)},
        {"err_detail", StringOrNull(r.err_detail)},
        {"x_offset", c.offset.x},
        {"y_offset", c.offset.y},
    });
  }
  return rows;
}

}  // namespace

std::string ConfigName(const Config& c) {
  return fmt::format("{} {} {}x{} threads {} offset {}", KindVariant(c),
                     DtypesName(c.dtypes), c.cols, c.rows,
                     ThreadsName(c.threads), OffsetName(c.offset));
}

void WriteHeader(std::FILE* f, const Meta& m) {
  fmt::print(f, "simdnorm-profile {}\n", m.version);
  if (!m.machine.emulated.empty()) {
    fmt::print(f,
               "WARNING: running under emulation ({}): these timings are not "
               "performance figures.\n",
               m.machine.emulated);
  }
  fmt::print(f, "machine:  {}, {}, {} logical CPUs, {}\n", m.machine.cpu,
             m.machine.arch, m.machine.logical_cpus, m.machine.caches);
  fmt::print(f, "compiler: {}\n", m.machine.compiler);
  if (m.machine.load1 >= 0.5) {
    fmt::print(f,
               "load:     1-minute load average {:.2f} at start: other "
               "processes compete for the CPUs, the timings are noisy\n",
               m.machine.load1);
  }
  fmt::print(f, "ISAs:     {}\n", fmt::join(m.options.isas, " "));
  fmt::print(f, "peers:    memcpy, loop (hand-written, {}), {}\n", m.loop_flags,
             m.onednn);
  fmt::print(f,
             "timing:   median of {} interleaved batches of ~{:.3g} ms per "
             "implementation; same buffers for all\n{}",
             m.options.reps, m.options.batch_ms, kDefinitions);
}

void WriteTable(std::FILE* f, const std::vector<ConfigResult>& results) {
  const Shown shown(results);
  // The variant joins the kind column when some configuration has one.
  int kind_w = shown.variants ? 12 : 9;
  for (const ConfigResult& c : results) {
    kind_w = std::max<int>(kind_w, KindVariant(c.config).size());
  }
  // Per column: the text before it, its width (negative: left-aligned) and
  // whether it is shown.
  const std::tuple<const char*, int, bool> columns[] = {
      {"", -kind_w, true},      {"  ", -13, true}, {" ", 5, true},
      {" ", 5, true},           {" ", 7, true},    {" ", 6, shown.offsets},
      {"  ", -7, true},         {" ", 9, true},    {" ", 8, true},
      {" ", 9, true},           {" ", 8, true},    {" ", 9, true},
      {" ", 10, shown.unfused}, {" ", 7, true}};
  auto print = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      const auto& [before, width, show] = columns[i];
      if (!show) continue;
      fmt::print(f, fmt::runtime(width < 0 ? "{}{:<{}}" : "{}{:>{}}"), before,
                 cells[i], std::abs(width));
    }
  };
  print({shown.variants ? "kind variant" : "kind", "dtype", "cols", "rows",
         "threads", "offset", "impl", "ns/row", "GB/s", "of memcpy", "vs loop",
         "vs oneDNN", "vs unfused", "err"});
  fmt::print(f, "\n");
  const ConfigResult* prev = nullptr;
  std::vector<std::string> notes;
  for (const Row& row : Rows(results)) {
    if (prev && prev != row.c) fmt::print(f, "\n");
    prev = row.c;
    const Config& c = row.c->config;
    const ImplResult& r = *row.r;
    std::vector<std::string> cells = {KindVariant(c),
                                      DtypesName(c.dtypes),
                                      std::to_string(c.cols),
                                      std::to_string(c.rows),
                                      ThreadsName(c.threads),
                                      OffsetName(c.offset),
                                      r.name};
    if (!r.error.empty()) {
      print(cells);
      fmt::print(f, " not measured: {}\n", r.error);
      continue;
    }
    cells.insert(
        cells.end(),
        {Sig3(row.ns_row), Sig3(row.gbps), Fixed(row.of_memcpy, 2),
         Fixed(row.vs_loop, 2, "x"), Fixed(row.vs_onednn, 2, "x"),
         Fixed(row.vs_unfused, 2, "x"),
         (r.err_ulp < 0 ? "-" : Sig3(r.err_ulp)) + (r.err_ok ? "" : "!")});
    print(cells);
    fmt::print(f, "\n");
    if (!r.note.empty()) simdnorm_tools::AddUnique(&notes, r.note);
    if (!r.err_ok) {
      notes.push_back(fmt::format(
          "{} {}: output differs from the reference by {}{}{}", ConfigName(c),
          r.name, Sig3(r.err_ulp), c.dtypes.y == SIMDNORM_I8 ? " q" : " ulp",
          r.err_detail.empty() ? "" : "; " + r.err_detail));
    }
  }
  for (const std::string& n : notes) fmt::print(f, "note: {}\n", n);
}

void WriteJson(std::FILE* f, const Meta& m,
               const std::vector<ConfigResult>& results) {
  const Machine& mc = m.machine;
  const Json j = {
      {"tool", "simdnorm-profile"},
      {"version", m.version},
      {"machine",
       {{"cpu", mc.cpu},
        {"arch", mc.arch},
        {"logical_cpus", mc.logical_cpus},
        {"caches", mc.caches},
        {"compiler", mc.compiler},
        {"load1_at_start", Number(mc.load1 >= 0 ? mc.load1 : NAN)},
        {"emulated", StringOrNull(mc.emulated)}}},
      {"isas", m.options.isas},
      {"onednn", m.onednn},
      {"reps", m.options.reps},
      {"batch_ms", Number(m.options.batch_ms)},
      {"wall_s", Number(m.wall_s)},
      {"bytes_counted", "x read + y written, once per row"},
      {"bytes_counted_variants",
       "plus residual read and sum_out written (fused add) and the int8 "
       "scales; impl_bytes_per_call: what the implementation itself moves "
       "(the unfused peer more)"},
      {"results", ResultsJson(results)}};
  fmt::print(f, "{}", simdnorm_tools::JsonDump(j));
}

void WriteCsv(std::FILE* f, const std::vector<ConfigResult>& results) {
  const Json rows = ResultsJson(results);
  std::vector<std::string> keys;
  for (const auto& [key, value] : rows.front().items()) {
    if (key != "err_ok" && key != "note" && key != "err_detail")
      keys.push_back(key);
  }
  fmt::print(f, "{}\n", fmt::join(keys, ","));
  for (const Json& row : rows) {
    std::vector<std::string> cells;
    for (const std::string& k : keys) {
      const Json& v = row[k];
      cells.push_back(
          v.is_null()           ? ""
          : v.is_string()       ? simdnorm_tools::CsvField(v.get<std::string>())
          : v.is_number_float() ? fmt::format("{:.6g}", v.get<double>())
                                : v.dump());
    }
    fmt::print(f, "{}\n", fmt::join(cells, ","));
  }
}

void WriteSvg(std::FILE* f, const Meta& m,
              const std::vector<ConfigResult>& results) {
  using simdnorm_tools::XmlEscape;
  // Series: every implementation; each keeps its slot in every group so
  // colors and positions line up.
  const std::vector<std::string> series = ImplNames(results);
  double max_gbps = 0.0;
  const std::vector<Row> rows = Rows(results);
  for (const Row& row : rows) {
    if (std::isfinite(row.gbps)) max_gbps = std::max(max_gbps, row.gbps);
  }
  // A round axis maximum: 1, 2, 2.5 or 5 times a power of ten per tick.
  const int ticks = 5;
  double step = 1.0;
  if (max_gbps > 0) {
    const double raw = max_gbps / ticks;
    const double p10 = std::pow(10.0, std::floor(std::log10(raw)));
    for (double k : {1.0, 2.0, 2.5, 5.0, 10.0}) {
      step = k * p10;
      if (step >= raw) break;
    }
  }
  const double y_max = step * ticks;

  const double bar = 10, group_gap = 22, left = 64, right = 20, top = 64;
  const double plot_h = 320, label_h = 64, legend_h = 22;
  const double group_w = bar * static_cast<double>(series.size());
  const double width =
      left + right +
      static_cast<double>(results.size()) * (group_w + group_gap);
  const double height = top + plot_h + label_h + legend_h + 16;
  // Peers in their colors, the ISAs (and the unfused peer) in turn.
  std::map<std::string, std::string> color;
  static const char* const kColors[] = {"#1f77b4", "#2ca02c", "#17becf",
                                        "#9467bd", "#8c564b", "#bcbd22",
                                        "#e377c2", "#393b79"};
  size_t k = 0;
  for (const std::string& s : series) {
    color[s] = s == "memcpy"   ? "#7f7f7f"
               : s == "loop"   ? "#ff7f0e"
               : s == "oneDNN" ? "#d62728"
                               : kColors[k++ % 8];
  }

  fmt::print(
      f,
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0:.0f}" height="{1:.0f}" viewBox="0 0 {0:.0f} {1:.0f}" font-family="sans-serif" font-size="11">
<rect width="100%" height="100%" fill="white"/>
<text x="{2:.0f}" y="22" font-size="15" font-weight="bold">simdnorm: GB/s per implementation (x read + y written, + residual, sum_out, scales)</text>
<text x="{2:.0f}" y="40" fill="#444">{3}</text>
)",
      width, height, left,
      XmlEscape(m.machine.cpu + ", " + m.machine.compiler +
                (m.machine.emulated.empty()
                     ? ""
                     : " - EMULATED: not performance figures")));
  // Axis and grid.
  for (int i = 0; i <= ticks; ++i) {
    const double v = step * i;
    const double y = top + plot_h - plot_h * v / y_max;
    simdnorm_tools::PrintLine(
        f,
        R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}"/>)"
        "\n"
        R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end">{}</text>)",
        left, y, width - right, y, i == 0 ? "#000" : "#ddd", left - 6, y + 4,
        Sig3(v));
  }
  simdnorm_tools::PrintLine(
      f,
      R"svg(<text transform="translate(16,{:.1f}) rotate(-90)" text-anchor="middle">GB/s</text>)svg",
      top + plot_h / 2);
  // Groups.
  for (size_t g = 0; g < results.size(); ++g) {
    const ConfigResult& c = results[g];
    const double x0 =
        left + group_gap / 2 + static_cast<double>(g) * (group_w + group_gap);
    for (const Row& row : rows) {
      if (row.c != &c || !std::isfinite(row.gbps)) continue;
      const size_t k = static_cast<size_t>(
          std::find(series.begin(), series.end(), row.r->name) -
          series.begin());
      const double h = plot_h * row.gbps / y_max;
      simdnorm_tools::PrintLine(
          f,
          R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}"><title>{}: {} GB/s, {} ns/row</title></rect>)",
          x0 + bar * static_cast<double>(k), top + plot_h - h, bar - 1, h,
          color[row.r->name], XmlEscape(row.r->name), Sig3(row.gbps),
          Sig3(row.ns_row));
    }
    const Config& cf = c.config;
    const std::string lines[3] = {
        fmt::format("{} {}{}", simdnorm_tools::kind_label(cf.kind),
                    DtypesName(cf.dtypes),
                    cf.variant.plain() ? "" : " " + cf.variant.name()),
        fmt::format("{}x{}", cf.cols, cf.rows),
        ThreadsName(cf.threads) + " thr" +
            (cf.offset.zero() ? "" : " +" + OffsetName(cf.offset))};
    for (int i = 0; i < 3; ++i) {
      simdnorm_tools::PrintLine(
          f,
          R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle" font-size="10">{}</text>)",
          x0 + group_w / 2, top + plot_h + 14 + 13 * i, XmlEscape(lines[i]));
    }
  }
  // Legend.
  double lx = left;
  const double ly = top + plot_h + label_h + 6;
  for (const std::string& s : series) {
    simdnorm_tools::PrintLine(
        f,
        R"(<rect x="{:.1f}" y="{:.1f}" width="12" height="12" fill="{}"/><text x="{:.1f}" y="{:.1f}">{}</text>)",
        lx, ly, color[s], lx + 16, ly + 10, XmlEscape(s));
    lx += 28 + 7.0 * static_cast<double>(s.size());
  }
  fmt::print(f, "</svg>\n");
}

std::string MarkdownSummary(const Meta& m,
                            const std::vector<ConfigResult>& results) {
  const std::vector<std::string> impls = ImplNames(results);
  const std::vector<std::string>& isas = m.options.isas;
  const std::string first = isas.empty() ? "" : isas.front();
  const Machine& mc = m.machine;
  std::string out;
  if (!mc.emulated.empty()) {
    out += "**Measured under emulation (" + mc.emulated +
           "): these timings are not performance figures.**\n\n";
  }
  out += fmt::format(
      "`simdnorm-profile` {} on {} ({}, {} logical CPUs; {}), {}; ISAs {}; "
      "peers: memcpy, the hand-written loop ({}), {}.\n"
      "Median of {} interleaved batches of ~{:.3g} ms each; the whole run "
      "took {:.1f} s",
      m.version, mc.cpu, mc.arch, mc.logical_cpus, mc.caches, mc.compiler,
      fmt::join(isas, ", "), m.loop_flags, m.onednn, m.options.reps,
      m.options.batch_ms, m.wall_s);
  if (mc.load1 >= 0) {
    out += fmt::format("; 1-minute load average at start {:.2f}{}", mc.load1,
                       mc.load1 >= 0.5
                           ? " (other processes were running: noisy numbers)"
                           : "");
  }
  const Shown shown(results);
  const bool unfused = shown.unfused, offsets = shown.offsets;
  out += fmt::format(
      ".\n\nns per row (lower is better); then, for {}, GB/s = (x bytes + y "
      "bytes) / time and its ratios (memcpy time, loop time, oneDNN time "
      "divided by its time){}{}.\n\n| kind | dtype | cols | rows | threads |{}",
      first,
      unfused ? "; a fused add also counts the residual read and sum_out "
                "written, and vs unfused is the time of the add loop + norm "
                "(+ quantize loop) divided by its time"
              : "",
      offsets ? "; offset = bytes past a 64-byte line where x (and the "
                "weights) and y start, x:y when they differ"
              : "",
      offsets ? " offset |" : "");
  for (const std::string& i : impls) out += " " + i + " |";
  out += " " + first + " GB/s | of memcpy | vs loop | vs oneDNN |";
  if (unfused) out += " vs unfused |";
  out += "\n|---|---|---:|---:|---:|";
  for (size_t i = 0; i < impls.size() + 4 + unfused + offsets; ++i) {
    out += "---:|";
  }
  out += "\n";
  const std::vector<Row> rows = Rows(results);
  for (const ConfigResult& c : results) {
    const Config& cf = c.config;
    out += fmt::format("| {} | {} | {} | {} | {} |", KindVariant(cf),
                       DtypesName(cf.dtypes), cf.cols, cf.rows,
                       ThreadsName(cf.threads));
    if (offsets) out += " " + OffsetName(cf.offset) + " |";
    const Row* lead = nullptr;
    for (const std::string& name : impls) {
      const Row* found = nullptr;
      for (const Row& row : rows) {
        if (row.c == &c && row.r->name == name) found = &row;
      }
      if (found && found->r->name == first) lead = found;
      std::string cell = found ? Sig3(found->ns_row) : "";
      if (found && !found->r->err_ok) cell += " (wrong)";
      out += " " + cell + " |";
    }
    if (lead) {
      out += fmt::format(
          " {} | {} | {} | {} |", Sig3(lead->gbps), Fixed(lead->of_memcpy, 2),
          Fixed(lead->vs_loop, 2, "x"), Fixed(lead->vs_onednn, 2, "x"));
      if (unfused) out += " " + Fixed(lead->vs_unfused, 2, "x") + " |";
    } else {
      out += unfused ? " | | | | |" : " | | | |";
    }
    out += "\n";
  }
  return out;
}

void WriteFamilies(std::FILE* f, const std::vector<FamilyResult>& results) {
  fmt::print(f,
             "us per call (lower is better), median of the batches; GB/s = "
             "(x [+ dy] read + y or dx written) / time of the first ISA; of "
             "memcpy = memcpy time of the same bytes / its time.\n\n"
             "{:<28} {:<22} {:<5} {:>7}",
             "op", "shape", "dtype", "threads");
  for (const ImplResult& i :
       results.empty() ? std::vector<ImplResult>() : results[0].impls) {
    fmt::print(f, " {:>9}", i.name);
  }
  fmt::print(f, " {:>7} {:>9}\n", "GB/s", "of memcpy");
  for (const FamilyResult& r : results) {
    fmt::print(f, "{:<28} {:<22} {:<5} {:>7}", r.op, r.shape,
               DtypesName(r.dtypes), ThreadsName(r.threads));
    double first = 0, copy = 0;
    for (const ImplResult& i : r.impls) {
      fmt::print(f, " {:>9}",
                 i.error.empty() ? fmt::format("{:.1f}", i.median_ns / 1e3)
                                 : "failed");
      if (i.type == ImplType::kMemcpy) copy = i.median_ns;
      if (first == 0 && i.type == ImplType::kSimdnorm) first = i.median_ns;
    }
    fmt::print(f, " {:>7.1f} {:>9}\n", first ? r.bytes / first : 0.0,
               first && copy ? fmt::format("{:.2f}", copy / first) : "-");
  }
}

void WriteFamiliesJson(std::FILE* f, const std::vector<FamilyResult>& results) {
  Json j = Json::array();
  for (const FamilyResult& r : results) {
    Json impls = Json::array();
    for (const ImplResult& i : r.impls) {
      impls.push_back({{"name", i.name},
                       {"error", i.error},
                       {"median_ns", i.median_ns},
                       {"min_ns", i.min_ns}});
    }
    j.push_back({{"op", r.op},
                 {"shape", r.shape},
                 {"dtypes", DtypesName(r.dtypes)},
                 {"threads", r.threads},
                 {"bytes", r.bytes},
                 {"impls", impls}});
  }
  fmt::print(f, "{}\n", j.dump(1));
}

}  // namespace simdnorm_profile
