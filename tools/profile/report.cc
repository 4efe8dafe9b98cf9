#include "report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "common/json.h"
#include "common/text.h"

namespace simdnorm_profile {
namespace {

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

double PeerNs(const ConfigResult& c, ImplType t) {
  for (const ImplResult& r : c.impls) {
    if (r.type == t && r.error.empty() && r.median_ns > 0) return r.median_ns;
  }
  return NAN;
}

std::vector<Row> Rows(const std::vector<ConfigResult>& results) {
  std::vector<Row> rows;
  for (const ConfigResult& c : results) {
    const double mem = PeerNs(c, ImplType::kMemcpy);
    const double loop = PeerNs(c, ImplType::kLoop);
    const double dnn = PeerNs(c, ImplType::kOneDnn);
    const double unf = PeerNs(c, ImplType::kUnfused);
    for (const ImplResult& r : c.impls) {
      Row row;
      row.c = &c;
      row.r = &r;
      if (r.error.empty() && r.median_ns > 0) {
        const double t = r.median_ns;
        row.ns_row = t / static_cast<double>(c.config.rows);
        row.gbps = static_cast<double>(r.bytes ? r.bytes : c.moved_bytes) / t;
        row.of_memcpy = mem / t;
        row.vs_loop = loop / t;
        row.vs_onednn = dnn / t;
        row.vs_unfused = unf / t;
      }
      rows.push_back(row);
    }
  }
  return rows;
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

using simdnorm_tools::CsvField;
using simdnorm_tools::Json;

Json JsonNumber(double v) { return simdnorm_tools::JsonNumber(v, 6); }

Json JsonStringOrNull(const std::string& s) {
  return s.empty() ? Json(nullptr) : Json(s);
}

const char* TypeName(ImplType t) {
  switch (t) {
    case ImplType::kSimdnorm:
      return "simdnorm";
    case ImplType::kMemcpy:
      return "memcpy";
    case ImplType::kLoop:
      return "loop";
    case ImplType::kOneDnn:
      return "onednn";
    case ImplType::kUnfused:
      return "unfused";
  }
  return "?";
}

bool AnyVariant(const std::vector<ConfigResult>& results) {
  for (const ConfigResult& c : results) {
    if (!c.config.variant.plain()) return true;
  }
  return false;
}

bool AnyUnfused(const std::vector<ConfigResult>& results) {
  for (const ConfigResult& c : results) {
    for (const ImplResult& r : c.impls) {
      if (r.type == ImplType::kUnfused) return true;
    }
  }
  return false;
}

bool AnyOffset(const std::vector<ConfigResult>& results) {
  for (const ConfigResult& c : results) {
    if (!c.config.offset.zero()) return true;
  }
  return false;
}

// "rmsnorm", or "rmsnorm fused-add" for a variant.
std::string KindVariant(const Config& c) {
  std::string k = kind_name(c.kind);
  if (!c.variant.plain()) k += " " + c.variant.name();
  return k;
}

}  // namespace

std::string ConfigName(const Config& c) {
  return KindVariant(c) + " " + DTypesName(c.dtypes) + " " +
         std::to_string(c.cols) + "x" + std::to_string(c.rows) + " threads " +
         ThreadsName(c.threads) + " offset " + OffsetName(c.offset);
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
  fmt::print(f, "ISAs:     {}\n", fmt::join(m.isas, " "));
  fmt::print(f, "peers:    memcpy, loop (hand-written, {}), {}\n", m.loop_flags,
             m.onednn);
  fmt::print(f,
             "timing:   median of {} interleaved batches of ~{:.3g} ms per "
             "implementation; same buffers for all\n",
             m.reps, m.batch_ms);
  fmt::print(f,
             "GB/s = (x bytes read + y bytes written) / time, once per row "
             "(gamma, beta not counted); of memcpy = memcpy time / time;\n"
             "vs loop, vs oneDNN = peer time / time (above 1: faster); "
             "err = max |y - float64 reference| in ulps of y's type\n"
             "variants: fused add also counts residual read + sum_out "
             "written, int8 the scales; unfused = add loop, simdnorm on the "
             "first ISA,\nquantize loop, counted with its own bytes; vs "
             "unfused = its time / time; int8 err = max |q - reference q|\n"
             "offset = bytes past a 64-byte line where x (and gamma, beta, "
             "residual, sum_out) and y start, x:y when they differ\n");
}

void WriteTable(std::FILE* f, const std::vector<ConfigResult>& results) {
  const bool variants = AnyVariant(results);
  const bool unfused = AnyUnfused(results);
  const bool offsets = AnyOffset(results);
  // The variant joins the kind column when some configuration has one.
  size_t kind_w = variants ? 12 : 9;
  for (const ConfigResult& c : results) {
    kind_w = std::max(kind_w, KindVariant(c.config).size());
  }
  fmt::print(f, "{:<{}}  {:<13} {:>5} {:>5} {:>7}",
             variants ? "kind variant" : "kind", kind_w, "dtype", "cols",
             "rows", "threads");
  if (offsets) fmt::print(f, " {:>6}", "offset");
  fmt::print(f, "  {:<7} {:>9} {:>8} {:>9} {:>8} {:>9}", "impl", "ns/row",
             "GB/s", "of memcpy", "vs loop", "vs oneDNN");
  if (unfused) fmt::print(f, " {:>10}", "vs unfused");
  fmt::print(f, " {:>7}\n", "err");
  const ConfigResult* prev = nullptr;
  std::vector<std::string> notes;
  for (const Row& row : Rows(results)) {
    if (prev && prev != row.c) std::fputc('\n', f);
    prev = row.c;
    const Config& c = row.c->config;
    const ImplResult& r = *row.r;
    fmt::print(f, "{:<{}}  {:<13} {:>5} {:>5} {:>7}", KindVariant(c), kind_w,
               DTypesName(c.dtypes), c.cols, c.rows, ThreadsName(c.threads));
    if (offsets) fmt::print(f, " {:>6}", OffsetName(c.offset));
    fmt::print(f, "  {:<7} ", r.name);
    if (!r.error.empty()) {
      fmt::print(f, "not measured: {}\n", r.error);
      continue;
    }
    std::string err = r.err_ulp < 0 ? "-" : Sig3(r.err_ulp);
    if (!r.err_ok) err += "!";
    fmt::print(f, "{:>9} {:>8} {:>9} {:>8} {:>9}", Sig3(row.ns_row),
               Sig3(row.gbps), Fixed(row.of_memcpy, 2),
               Fixed(row.vs_loop, 2, "x"), Fixed(row.vs_onednn, 2, "x"));
    if (unfused) fmt::print(f, " {:>10}", Fixed(row.vs_unfused, 2, "x"));
    fmt::print(f, " {:>7}\n", err);
    if (!r.note.empty() &&
        std::find(notes.begin(), notes.end(), r.note) == notes.end()) {
      notes.push_back(r.note);
    }
    if (!r.err_ok) {
      notes.push_back(ConfigName(c) + " " + r.name +
                      ": output differs from the reference by " +
                      Sig3(r.err_ulp) +
                      (c.dtypes.y == SIMDNORM_I8 ? " q" : " ulp") +
                      (r.err_detail.empty() ? "" : "; " + r.err_detail));
    }
  }
  for (const std::string& n : notes) fmt::print(f, "note: {}\n", n);
}

void WriteJson(std::FILE* f, const Meta& m,
               const std::vector<ConfigResult>& results) {
  const Machine& mc = m.machine;
  Json j = {
      {"tool", "simdnorm-profile"},
      {"version", m.version},
      {"machine",
       {{"cpu", mc.cpu},
        {"arch", mc.arch},
        {"logical_cpus", mc.logical_cpus},
        {"caches", mc.caches},
        {"compiler", mc.compiler},
        {"load1_at_start", JsonNumber(mc.load1 >= 0 ? mc.load1 : NAN)},
        {"emulated", JsonStringOrNull(mc.emulated)}}},
      {"isas", m.isas},
      {"onednn", m.onednn},
      {"reps", m.reps},
      {"batch_ms", JsonNumber(m.batch_ms)},
      {"wall_s", JsonNumber(m.wall_s)},
      {"bytes_counted", "x read + y written, once per row"},
      {"bytes_counted_variants",
       "plus residual read and sum_out written (fused add) and the int8 "
       "scales; impl_bytes_per_call: what the implementation itself moves "
       "(the unfused peer more)"},
      {"results", Json::array()}};
  for (const Row& row : Rows(results)) {
    const Config& c = row.c->config;
    const ImplResult& r = *row.r;
    const bool ok = r.error.empty();
    j["results"].push_back({
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
        {"ns_per_call_median", JsonNumber(ok ? r.median_ns : NAN)},
        {"ns_per_call_min", JsonNumber(ok ? r.min_ns : NAN)},
        {"ns_per_row", JsonNumber(row.ns_row)},
        {"gbps", JsonNumber(row.gbps)},
        {"of_memcpy", JsonNumber(row.of_memcpy)},
        {"vs_loop", JsonNumber(row.vs_loop)},
        {"vs_onednn", JsonNumber(row.vs_onednn)},
        {"err_ulp", JsonNumber(r.err_ulp < 0 ? NAN : r.err_ulp)},
        {"err_ok", r.err_ok},
        {"error", JsonStringOrNull(r.error)},
        {"note", JsonStringOrNull(r.note)},
        {"variant", c.variant.name()},
        {"impl_bytes_per_call", r.bytes ? r.bytes : row.c->moved_bytes},
        {"vs_unfused", JsonNumber(row.vs_unfused)},
        {"err_detail", JsonStringOrNull(r.err_detail)},
        {"x_offset", c.offset.x},
        {"y_offset", c.offset.y},
    });
  }
  std::fputs(simdnorm_tools::JsonDump(j).c_str(), f);
}

void WriteCsv(std::FILE* f, const std::vector<ConfigResult>& results) {
  fmt::print(f,
             "kind,x_type,y_type,param_type,cols,rows,threads,impl,"
             "impl_type,bytes_per_call,ns_per_call_median,ns_per_call_min,"
             "ns_per_row,gbps,of_memcpy,vs_loop,vs_onednn,err_ulp,error,"
             "variant,impl_bytes_per_call,vs_unfused,x_offset,y_offset\n");
  auto num = [](double v) {
    return std::isfinite(v) ? fmt::format("{:.6g}", v) : std::string();
  };
  for (const Row& row : Rows(results)) {
    const Config& c = row.c->config;
    const ImplResult& r = *row.r;
    const bool ok = r.error.empty();
    fmt::print(f, "{},{},{},{},{},{},{},{},{},{},", kind_name(c.kind),
               dtype_name(c.dtypes.x), dtype_name(c.dtypes.y),
               dtype_name(c.dtypes.param), c.cols, c.rows, c.threads,
               CsvField(r.name), TypeName(r.type), row.c->moved_bytes);
    fmt::print(f, "{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
               num(ok ? r.median_ns : NAN), num(ok ? r.min_ns : NAN),
               num(row.ns_row), num(row.gbps), num(row.of_memcpy),
               num(row.vs_loop), num(row.vs_onednn),
               num(r.err_ulp < 0 ? NAN : r.err_ulp), CsvField(r.error),
               c.variant.name(), r.bytes ? r.bytes : row.c->moved_bytes,
               num(row.vs_unfused), c.offset.x, c.offset.y);
  }
}

void WriteSvg(std::FILE* f, const Meta& m,
              const std::vector<ConfigResult>& results) {
  // Series: every implementation name, in order of first appearance; each
  // keeps its slot in every group so colors and positions line up.
  std::vector<std::string> series;
  double max_gbps = 0.0;
  const std::vector<Row> rows = Rows(results);
  for (const Row& row : rows) {
    if (std::find(series.begin(), series.end(), row.r->name) == series.end()) {
      series.push_back(row.r->name);
    }
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
  const char* colors[] = {"#1f77b4", "#2ca02c", "#17becf", "#9467bd",
                          "#8c564b", "#bcbd22", "#e377c2", "#393b79"};
  auto color = [&](const std::string& name) -> std::string {
    if (name == "memcpy") return "#7f7f7f";
    if (name == "loop") return "#ff7f0e";
    if (name == "oneDNN") return "#d62728";
    size_t k = 0;
    for (const std::string& s : series) {
      if (s == name) break;
      if (s != "memcpy" && s != "loop" && s != "oneDNN") ++k;
    }
    return colors[k % (sizeof(colors) / sizeof(colors[0]))];
  };

  std::fprintf(f,
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
               "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"sans-serif\" font-size=\"11\">\n",
               width, height, width, height);
  std::fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  std::fprintf(f,
               "<text x=\"%.0f\" y=\"22\" font-size=\"15\" "
               "font-weight=\"bold\">simdnorm: GB/s per implementation "
               "(x read + y written, + residual, sum_out, scales)</text>\n",
               left);
  std::string sub = m.machine.cpu + ", " + m.machine.compiler;
  if (!m.machine.emulated.empty())
    sub += " - EMULATED: not performance figures";
  std::fprintf(f, "<text x=\"%.0f\" y=\"40\" fill=\"#444\">%s</text>\n", left,
               simdnorm_tools::XmlEscape(sub).c_str());
  // Axis and grid.
  for (int i = 0; i <= ticks; ++i) {
    const double v = step * i;
    const double y = top + plot_h - plot_h * v / y_max;
    std::fprintf(f,
                 "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                 "stroke=\"%s\"/>\n",
                 left, y, width - right, y, i == 0 ? "#000" : "#ddd");
    std::fprintf(f,
                 "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                 left - 6, y + 4, Sig3(v).c_str());
  }
  std::fprintf(f,
               "<text transform=\"translate(16,%.1f) rotate(-90)\" "
               "text-anchor=\"middle\">GB/s</text>\n",
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
      std::fprintf(f,
                   "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                   "height=\"%.1f\" fill=\"%s\"><title>%s: %s GB/s, %s "
                   "ns/row</title></rect>\n",
                   x0 + bar * static_cast<double>(k), top + plot_h - h, bar - 1,
                   h, color(row.r->name).c_str(),
                   simdnorm_tools::XmlEscape(row.r->name).c_str(),
                   Sig3(row.gbps).c_str(), Sig3(row.ns_row).c_str());
    }
    const Config& cf = c.config;
    const std::string lines[3] = {
        std::string(cf.kind == SIMDNORM_RMSNORM ? "RMS " : "LN ") +
            DTypesName(cf.dtypes) +
            (cf.variant.plain() ? "" : " " + cf.variant.name()),
        std::to_string(cf.cols) + "x" + std::to_string(cf.rows),
        ThreadsName(cf.threads) + " thr" +
            (cf.offset.zero() ? "" : " +" + OffsetName(cf.offset))};
    for (int i = 0; i < 3; ++i) {
      std::fprintf(f,
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
                   "font-size=\"10\">%s</text>\n",
                   x0 + group_w / 2, top + plot_h + 14 + 13 * i,
                   simdnorm_tools::XmlEscape(lines[i]).c_str());
    }
  }
  // Legend.
  double lx = left;
  const double ly = top + plot_h + label_h + 6;
  for (const std::string& s : series) {
    std::fprintf(f,
                 "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" "
                 "fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                 lx, ly, color(s).c_str(), lx + 16, ly + 10,
                 simdnorm_tools::XmlEscape(s).c_str());
    lx += 28 + 7.0 * static_cast<double>(s.size());
  }
  std::fprintf(f, "</svg>\n");
}

std::string MarkdownSummary(const Meta& m,
                            const std::vector<ConfigResult>& results) {
  std::vector<std::string> impls;
  for (const ConfigResult& c : results) {
    for (const ImplResult& r : c.impls) {
      if (std::find(impls.begin(), impls.end(), r.name) == impls.end()) {
        impls.push_back(r.name);
      }
    }
  }
  const std::string first = m.isas.empty() ? "" : m.isas.front();
  const std::string isas = fmt::format("{}", fmt::join(m.isas, ", "));
  std::string out;
  if (!m.machine.emulated.empty()) {
    out += "**Measured under emulation (" + m.machine.emulated +
           "): these timings are not performance figures.**\n\n";
  }
  out += "`simdnorm-profile` " + m.version + " on " + m.machine.cpu + " (" +
         m.machine.arch + ", " + std::to_string(m.machine.logical_cpus) +
         " logical CPUs; " + m.machine.caches + "), " + m.machine.compiler +
         "; ISAs " + isas + "; peers: memcpy, the hand-written loop (" +
         m.loop_flags + "), " + m.onednn + ".\n";
  out += fmt::format(
      "Median of {} interleaved batches of ~{:.3g} ms each; the whole run "
      "took {:.1f} s",
      m.reps, m.batch_ms, m.wall_s);
  if (m.machine.load1 >= 0) {
    out += fmt::format("; 1-minute load average at start {:.2f}{}",
                       m.machine.load1,
                       m.machine.load1 >= 0.5
                           ? " (other processes were running: noisy numbers)"
                           : "");
  }
  out += ".\n\n";
  const bool unfused = AnyUnfused(results);
  const bool offsets = AnyOffset(results);
  out +=
      "ns per row (lower is better); then, for " + first +
      ", GB/s = (x bytes + y bytes) / time and its ratios (memcpy time, "
      "loop time, oneDNN time divided by its time)" +
      std::string(unfused ? "; a fused add also counts the residual read and "
                            "sum_out written, and vs unfused is the time of "
                            "the add loop + norm (+ quantize loop) divided by "
                            "its time"
                          : "") +
      std::string(offsets ? "; offset = bytes past a 64-byte line where x "
                            "(and the weights) and y start, x:y when they "
                            "differ"
                          : "") +
      ".\n\n";
  out += "| kind | dtype | cols | rows | threads |";
  if (offsets) out += " offset |";
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
                       DTypesName(cf.dtypes), cf.cols, cf.rows,
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

namespace {

// Reads the document and finds its markers: [*begin, *end) is replaced.
bool ReadDoc(const std::string& path, std::string* doc, size_t* begin,
             size_t* end) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "simdnorm-profile: cannot read %s\n", path.c_str());
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  *doc = ss.str();
  const size_t b = doc->find(kDocBegin);
  *end = b == std::string::npos ? b : doc->find(kDocEnd, b);
  if (*end == std::string::npos) {
    std::fprintf(stderr, "simdnorm-profile: %s lacks the lines %s and %s\n",
                 path.c_str(), kDocBegin, kDocEnd);
    return false;
  }
  *begin = b + std::string(kDocBegin).size();
  return true;
}

}  // namespace

bool CheckDoc(const std::string& path) {
  std::string doc;
  size_t b, e;
  return ReadDoc(path, &doc, &b, &e);
}

bool UpdateDoc(const std::string& path, const std::string& text) {
  std::string doc;
  size_t body, e;
  if (!ReadDoc(path, &doc, &body, &e)) return false;
  const std::string updated = doc.substr(0, body) + "\n" + text + doc.substr(e);
  std::ofstream out(path, std::ios::trunc);
  out << updated;
  out.close();
  if (!out) {
    std::fprintf(stderr, "simdnorm-profile: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace simdnorm_profile
