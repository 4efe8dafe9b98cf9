// The command line both tools share on CLI11: the help layout their
// hand-written help had (the usage line, the description, the options
// grouped in their order with the value as its type name says: "--cols
// N[,N]", the footer), number checks and comma-separated lists.
#ifndef SIMDNORM_TOOLS_COMMON_CLI_H_
#define SIMDNORM_TOOLS_COMMON_CLI_H_

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "common/vocabulary.h"
#include "family_problem.h"

namespace simdnorm_tools {

class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter() { column_width(25); }
  std::string make_description(const CLI::App*) const override { return ""; }
  std::string make_usage(const CLI::App* app, std::string name) const override {
    return "Usage: " + name + " [options]\n\n" + app->get_description() +
           "\n\n";
  }
  // A blank line between groups (no heading for the default one).
  std::string make_group(std::string group, bool is_positional,
                         std::vector<const CLI::Option*> opts) const override {
    std::string out = group == "Options" ? "" : group + ":\n";
    for (const CLI::Option* o : opts) out += make_option(o, is_positional);
    return out;
  }
  std::string make_option_name(const CLI::Option* o, bool) const override {
    // "-h,--help" as "-h, --help".
    return fmt::format("{}",
                       fmt::join(split(o->get_name(false, true), ','), ", "));
  }
  std::string make_option_opts(const CLI::Option* o) const override {
    return o->get_type_name().empty() ? "" : " " + o->get_type_name();
  }
};

// An app laid out as above, its help flag to be added last.
inline std::unique_ptr<CLI::App> MakeApp(const std::string& name,
                                         const std::string& description,
                                         const std::string& footer) {
  auto app = std::make_unique<CLI::App>(description, name);
  app->formatter(std::make_shared<HelpFormatter>());
  app->footer(footer);
  app->set_help_flag();
  app->option_defaults()->disable_flag_override();  // no "--strict=1"
  return app;
}

// Parses argv: 0 to go on, -1 after printing the help on stdout, 2 with the
// message of a usage error in *error.
inline int Parse(CLI::App* app, int argc, char** argv, std::string* error) {
  try {
    app->parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app->help());
    return -1;
  } catch (const CLI::ParseError& e) {
    *error = e.what();
    return 2;
  }
  return 0;
}

// Each value (of a comma-separated list) a whole number in lo..hi.
inline CLI::Validator SizeIn(size_t lo, size_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        size_t v;
        if (parse_size(s, &v) && v >= lo && v <= hi) return "";
        return fmt::format("'{}' is not a number {}", s,
                           hi == SIZE_MAX ? fmt::format(">= {}", lo)
                                          : fmt::format("in {}..{}", lo, hi));
      },
      "");
}

// A number (all of the text) that ok(value) accepts, else "'TEXT' is not
// WHAT".
template <class Ok>
CLI::Validator NumberIf(Ok ok, const std::string& what) {
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        return !s.empty() && *end == '\0' && ok(v)
                   ? ""
                   : "'" + s + "' is not " + what;
      },
      "");
}

// An option whose FILE may be left out (the tools then write to stdout).
inline CLI::Option* AddOptionalFile(CLI::App* app, const std::string& name,
                                    std::string* path,
                                    const std::string& help) {
  return app->add_option(name, *path, help)
      ->expected(0, 1)
      ->type_name("[FILE]");
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
      if (!parse(s, &out->emplace_back())) {
        throw CLI::ValidationError(shown, "'" + s + "' is not " + what);
      }
    }
  };
  return app->add_option_function<std::vector<std::string>>(name, convert, help)
      ->delimiter(',');
}

// --kind K[,K]: kinds of the registry by name (lenient: in any case, or an
// alias); the help lists them, then default_text.
inline CLI::Option* AddKinds(CLI::App* app, std::vector<simdnorm_kind>* kinds,
                             bool lenient, const std::string& default_text) {
  auto parse = [lenient](const std::string& s, simdnorm_kind* k) {
    return parse_kind(s, k, lenient);
  };
  return AddList(app, "--kind", kinds, parse, kind_names(),
                 kind_list() + " " + default_text)
      ->type_name("K[,K]");
}

// --op OP[,OP]: GroupNorm, BatchNorm and the backward passes
// (bench/peers/family_problem.h)
// instead of the row kinds' forward pass; "all" for every one.
using simdnorm_peers::family_op_list;
using simdnorm_peers::family_ops;
using simdnorm_peers::FamilyOp;
inline CLI::Option* AddOps(CLI::App* app, std::vector<FamilyOp>* ops) {
  auto parse = [ops](const std::string& s, FamilyOp* op) {
    if (s != "all") return simdnorm_peers::parse_family_op(s, op);
    const std::vector<FamilyOp> all = family_ops();
    ops->back() = all.back();  // AddList's slot for this element
    ops->insert(ops->end() - 1, all.begin(), all.end() - 1);
    return true;
  };
  std::string help = "instead of the row kinds' forward pass: all, or\n", line;
  for (const FamilyOp& op : family_ops()) {
    if (!line.empty() && line.size() + op.name.size() > 50) {
      help += line + ",\n";
      line.clear();
    }
    line += (line.empty() ? "" : ", ") + op.name;
  }
  help += line + "\n(default: none)";
  return AddList(app, "--op", ops, parse, "all or " + family_op_list(), help)
      ->type_name("OP[,OP]");
}

}  // namespace simdnorm_tools

#endif  // SIMDNORM_TOOLS_COMMON_CLI_H_
