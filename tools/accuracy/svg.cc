// A handwritten SVG chart: per family, one horizontal bar per ISA and
// shortcut, on log scales. Left panel: fp32 output, max scaled ulps. Right
// panel: bf16 and f16 output, share of elements not equal to the
// once-rounded truth. Each bar is the worst over kinds and dtype
// combinations of the plain calls (the engine variants are in the tables).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "accuracy.h"
#include "common/output.h"

namespace simdnorm_accuracy {
namespace {

constexpr const char* kIsaColors[] = {"#1f4e9c", "#2f7fd0", "#5aaee8",
                                      "#2ca02c", "#8fd18f", "#6a51a3",
                                      "#9e9ac8", "#555555"};
constexpr const char* kShortcutColors[] = {"#d62728", "#ff7f0e", "#e377c2",
                                           "#bcbd22"};

constexpr const char* kHead = R"(<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{0:g}" height="{1:g}" viewBox="0 0 {0:g} {1:g}" font-family="sans-serif">
<style>.h{{font-size:13px;font-weight:bold}}.t{{font-size:16px;font-weight:bold}}.s{{font-size:11px;fill:#444}}.tick{{font-size:10px;text-anchor:middle;fill:#444}}.fam{{font-size:11px;text-anchor:end}}.grid{{stroke:#ddd;stroke-width:1}}.bound{{stroke:#c00;stroke-width:1.5;stroke-dasharray:5,3}}.bl{{font-size:10px;fill:#c00}}.over{{font-size:9px;fill:#c00}}.lg{{font-size:11px}}</style>
<rect width="100%" height="100%" fill="white"/>
<text x="10" y="22" class="t">simdnorm-accuracy: worst error per input family (over kinds and dtype combinations)</text>
<text x="10" y="40" class="s">{2}</text>
<text x="10" y="56" class="s">bars: library per ISA (blue/green) and textbook shortcuts (red/orange/pink); a dot marks zero error, 'inf' a non-finite result, 'simdnorm max N ulps' a library bf16 or f16 result beyond 1 ulp</text>
)";

std::string esc(const std::string& s) { return simdnorm_tools::XmlEscape(s); }

struct Series {
  std::string isa, method, label, color;
};

struct Panel {
  std::string title;
  double lo_exp, hi_exp;  // decades shown
  double bound;
  std::string bound_label;
  std::vector<Series> series = {};
  // [family][series index] -> value (absent = no data)
  std::map<std::string, std::map<size_t, double>> values = {};
  // bf16 panel: [family][series index] -> max bf16 ulps, noted when > 1
  std::map<std::string, std::map<size_t, double>> max_ulps = {};

  double x_of(double v, double x0, double width) const {
    const double t = (std::log10(v) - lo_exp) / (hi_exp - lo_exp);
    return x0 + width * std::max(0.0, std::min(1.0, t));
  }
  size_t series_index(const ResultRow& r) {
    size_t n_isa = 0, n_short = 0;
    for (size_t i = 0; i < series.size(); ++i) {
      if (series[i].isa == r.isa && series[i].method == r.method) return i;
      (series[i].method == "simdnorm" ? n_isa : n_short)++;
    }
    const bool lib = r.method == "simdnorm";
    series.push_back(
        {r.isa, r.method, lib ? r.isa : r.method,
         lib ? kIsaColors[n_isa % 8] : kShortcutColors[n_short % 4]});
    return series.size() - 1;
  }
};

void draw_panel(std::FILE* f, const Panel& p,
                const std::vector<std::string>& families, double x0,
                double width, double y0, double row_h, double bar_h) {
  const double height = row_h * static_cast<double>(families.size());
  simdnorm_tools::PrintLine(f, R"(<text x="{:g}" y="{:g}" class="h">{}</text>)",
                            x0, y0 - 34, esc(p.title));
  for (int e = static_cast<int>(p.lo_exp); e <= static_cast<int>(p.hi_exp);
       ++e) {
    const double x = p.x_of(std::pow(10.0, e), x0, width);
    simdnorm_tools::PrintLine(
        f,
        R"(<line x1="{0:g}" y1="{1:g}" x2="{0:g}" y2="{2:g}" class="grid"/>)"
        "\n"
        R"(<text x="{0:g}" y="{3:g}" class="tick">1e{4}</text>)",
        x, y0 - 4, y0 + height, y0 - 8, e);
  }
  const double bx = p.x_of(p.bound, x0, width);
  simdnorm_tools::PrintLine(
      f,
      R"(<line x1="{0:g}" y1="{1:g}" x2="{0:g}" y2="{2:g}" class="bound"/>)"
      "\n"
      R"(<text x="{3:g}" y="{4:g}" class="bl">{5}</text>)",
      bx, y0 - 20, y0 + height, bx + 3, y0 - 22, esc(p.bound_label));
  for (size_t fi = 0; fi < families.size(); ++fi) {
    const double ry = y0 + row_h * static_cast<double>(fi);
    if (fi % 2 == 0) {
      simdnorm_tools::PrintLine(
          f,
          R"(<rect x="{:g}" y="{:g}" width="{:g}" height="{:g}" fill="#f4f4f4"/>)",
          x0, ry, width, row_h);
    }
    // bf16: one note per family when a library result is beyond 1 ulp.
    auto mu = p.max_ulps.find(families[fi]);
    if (mu != p.max_ulps.end()) {
      double worst = 0;
      for (const auto& [si, u] : mu->second) {
        if (p.series[si].method == "simdnorm" && !(u <= worst)) worst = u;
      }
      if (!(worst <= kHalfMaxUlps)) {
        simdnorm_tools::PrintLine(
            f,
            R"(<text x="{:g}" y="{:g}" class="over">simdnorm max {} ulps</text>)",
            x0 + width + 4, ry + row_h / 2 + 4, format_error(worst));
      }
    }
    auto it = p.values.find(families[fi]);
    if (it == p.values.end()) continue;
    for (const auto& [si, v] : it->second) {
      const double y = ry + 2 + bar_h * static_cast<double>(si);
      const Series& s = p.series[si];
      const std::string tip =
          esc(families[fi] + ", " + s.label + ": " + format_error(v));
      if (v <= 0 || std::isnan(v)) {
        simdnorm_tools::PrintLine(
            f,
            R"(<circle cx="{:g}" cy="{:g}" r="1.5" fill="{}"><title>{} (zero)</title></circle>)",
            x0 + 2, y + bar_h / 2, s.color, tip);
        continue;
      }
      const double x1 = std::isinf(v) ? x0 + width : p.x_of(v, x0, width);
      simdnorm_tools::PrintLine(
          f,
          R"(<rect x="{:g}" y="{:g}" width="{:g}" height="{:g}" fill="{}"><title>{}</title></rect>)",
          x0, y, std::max(1.0, x1 - x0), bar_h - 1, s.color, tip);
      if (std::isinf(v) || std::log10(v) > p.hi_exp) {
        simdnorm_tools::PrintLine(
            f, R"(<text x="{:g}" y="{:g}" class="over">{}</text>)",
            x0 + width + 2, y + bar_h, std::isinf(v) ? "inf" : "&gt;");
      }
    }
  }
}

}  // namespace

void write_svg(std::FILE* f, const Report& r) {
  Panel f32{"fp32 output: max scaled ulps (log scale)", -2, 0,
            kF32MaxScaledUlps, "bound 32"};
  // The bf16 bound is 0 (correctly rounded): drawn at 1e-6.
  Panel bf{"bf16 and f16 output: share not correctly rounded (log)", -6, 0,
           1e-6, "bound 0"};
  double hi = 1e3;
  for (const ResultRow& row : r.out.rows) {
    if (row.s.count == 0 || row.variant != "plain") continue;
    const bool half = Is16(row.dt.y);
    Panel* p = half ? &bf : &f32;
    const size_t si = p->series_index(row);
    const double v = half ? 1.0 - row.s.exact_share() : row.s.max;
    auto& cell = p->values[row.family];
    auto it = cell.find(si);
    if (it == cell.end() || v > it->second || std::isnan(v)) cell[si] = v;
    if (half) {
      double& mu = p->max_ulps[row.family][si];
      mu = std::max(mu, row.s.max);
    } else if (std::isfinite(v)) {
      hi = std::max(hi, v);
    }
  }
  f32.hi_exp = std::min(30.0, std::ceil(std::log10(hi)));

  std::vector<std::string> families;
  for (const std::string& fam : r.cfg.all_families()) {
    if (f32.values.count(fam) || bf.values.count(fam)) families.push_back(fam);
  }
  const double bar_h = 5;
  const size_t n_bars =
      std::max<size_t>(1, std::max(f32.series.size(), bf.series.size()));
  const double row_h = bar_h * static_cast<double>(n_bars) + 6;
  const double label_w = 180, panel_w = 420, gap = 90;
  const double top = 70 + 16.0 * 2 + 50;  // title, two legend lines
  const double width = label_w + 2 * panel_w + gap + 150;
  const double height = top + row_h * static_cast<double>(families.size()) + 40;
  fmt::print(f, kHead, width, height, esc(r.command));
  // Legends, one line per panel.
  for (const Panel* p : {&f32, &bf}) {
    double x = 10;
    const double y = p == &f32 ? 78 : 94;
    simdnorm_tools::PrintLine(
        f, R"(<text x="{:g}" y="{:g}" class="lg">{}</text>)", x, y + 9,
        p == &f32 ? "fp32 out:" : "16-bit out:");
    x += 80;
    for (const Series& s : p->series) {
      simdnorm_tools::PrintLine(
          f,
          R"(<rect x="{:g}" y="{:g}" width="10" height="10" fill="{}"/>)"
          "\n"
          R"(<text x="{:g}" y="{:g}" class="lg">{}</text>)",
          x, y, s.color, x + 14, y + 9, esc(s.label));
      x += 24 + 7.0 * static_cast<double>(s.label.size());
    }
  }
  for (size_t fi = 0; fi < families.size(); ++fi) {
    simdnorm_tools::PrintLine(
        f, R"(<text x="{:g}" y="{:g}" class="fam">{}</text>)", label_w - 8,
        top + row_h * static_cast<double>(fi) + row_h / 2 + 4,
        esc(families[fi]));
  }
  draw_panel(f, f32, families, label_w, panel_w, top, row_h, bar_h);
  draw_panel(f, bf, families, label_w + panel_w + gap, panel_w, top, row_h,
             bar_h);
  fmt::print(f, "</svg>\n");
}

}  // namespace simdnorm_accuracy
