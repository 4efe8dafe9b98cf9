// The help layout both tools share on CLI11, as their hand-written help
// was: the usage line, the description, the options (grouped, in their
// order, the value as its type name says: "--cols N[,N]"), the footer.
#ifndef SIMDNORM_TOOLS_COMMON_CLI_H_
#define SIMDNORM_TOOLS_COMMON_CLI_H_

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <system_error>
#include <vector>

namespace simdnorm_tools {

class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter() { column_width(25); }
  std::string make_description(const CLI::App*) const override { return ""; }
  std::string make_usage(const CLI::App* app, std::string name) const override {
    return "Usage: " + name + " [options]\n\n" + app->get_description() +
           "\n\n";
  }
  // A blank line between groups (no heading for the default one), none
  // doubled.
  std::string make_group(std::string group, bool is_positional,
                         std::vector<const CLI::Option*> opts) const override {
    std::string out = group == "Options" ? "" : group + ":\n";
    for (const CLI::Option* o : opts) out += make_option(o, is_positional);
    return out;
  }
  std::string make_option_name(const CLI::Option* o, bool) const override {
    std::string names = o->get_name(false, true);  // "-h,--help"
    for (size_t i = names.find(','); i != std::string::npos;
         i = names.find(',', i + 2)) {
      names.insert(i + 1, " ");
    }
    return names;
  }
  std::string make_option_opts(const CLI::Option* o) const override {
    return o->get_type_name().empty() ? "" : " " + o->get_type_name();
  }
};

// A whole decimal number, nothing around it.
inline bool ParseSize(const std::string& s, size_t* v) {
  const char* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, *v);
  return !s.empty() && r.ec == std::errc() && r.ptr == end;
}

// Each value (of a comma-separated list) a whole number in lo..hi.
inline CLI::Validator SizeIn(size_t lo, size_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        size_t v;
        if (ParseSize(s, &v) && v >= lo && v <= hi) return "";
        return "'" + s + "' is not a number " +
               (hi == SIZE_MAX
                    ? ">= " + std::to_string(lo)
                    : "in " + std::to_string(lo) + ".." + std::to_string(hi));
      },
      "");
}

// A comma-separated list option: `parse` converts each element into *out
// (which the given list replaces); an element it rejects is a usage error
// "NAME: 'ELEMENT' is not WHAT".
template <class T, class Parse>
CLI::Option* AddList(CLI::App* app, const std::string& name,
                     std::vector<T>* out, Parse parse, const std::string& what,
                     const std::string& help) {
  const std::string shown = name.substr(0, name.find(','));
  auto convert = [=](const std::vector<std::string>& v) {
    out->clear();
    for (const std::string& s : v) {
      T t;
      if (!parse(s, &t)) {
        throw CLI::ValidationError(shown, "'" + s + "' is not " + what);
      }
      out->push_back(t);
    }
  };
  return app->add_option_function<std::vector<std::string>>(name, convert, help)
      ->delimiter(',');
}

}  // namespace simdnorm_tools

#endif  // SIMDNORM_TOOLS_COMMON_CLI_H_
