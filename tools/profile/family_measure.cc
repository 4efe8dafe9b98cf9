// --op: GroupNorm, BatchNorm and the backward passes per ISA on the shapes
// of realistic models (families.h), beside memcpy of the call's bytes;
// timed as the rows are (TimeRunners). Outputs are not checked here:
// simdnorm-accuracy --op does that.
#include <fmt/format.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "profile.h"

namespace simdnorm_profile {

using simdnorm_peers::FamilyOp;
using simdnorm_peers::FamilyOutput;
using simdnorm_peers::FamilyProblem;
using simdnorm_peers::FamilyShape;

std::vector<FamilyResult> MeasureFamilies(
    const Options& o, const std::function<void(const std::string&)>& progress) {
  std::vector<FamilyResult> results;
  for (const FamilyOp& op : o.ops) {
    for (const FamilyShape& s : simdnorm_peers::profile_shapes(op)) {
      for (const Dtypes& dt : o.dtypes) {
        for (size_t threads : o.threads) {
          // N(0,1) data: timing does not depend on the values.
          std::vector<float> x(s.elems()), dy(s.elems());
          for (size_t i = 0; i < x.size(); ++i) {
            x[i] = static_cast<float>(static_cast<int>(i * 37 % 101) - 50) / 29;
            dy[i] = static_cast<float>(static_cast<int>(i * 53 % 97) - 48) / 31;
          }
          auto p = std::make_shared<FamilyProblem>(op, s, dt.x, dt.y, dt.param,
                                                   x, dy);
          auto out = std::make_shared<FamilyOutput>();
          FamilyResult r{op.name,
                         simdnorm_peers::shape_name(op, s),
                         dt,
                         threads,
                         p->moved_bytes(),
                         {}};
          progress(op.name + " " + r.shape);
          std::vector<Runner> runners;
          for (const std::string& isa : o.isas) {
            Runner& run = runners.emplace_back();
            run.result.name = isa;
            simdnorm_set_isa(isa.c_str());
            if (const simdnorm_status st =
                    p->run(out.get(), dt.y, threads, false);
                st != SIMDNORM_OK) {
              run.result.error = simdnorm_status_string(st);
            }
            run.run = [p, out, isa, dt, threads](size_t calls) {
              simdnorm_set_isa(isa.c_str());
              for (size_t i = 0; i < calls; ++i) {
                p->run(out.get(), dt.y, threads, false);
              }
            };
          }
          if (o.peers) {  // half the bytes read, half written
            const size_t half = r.bytes / 2;
            auto buf = std::make_shared<std::vector<char>>(2 * half, 1);
            Runner& copy = runners.emplace_back();
            copy.result.name = "memcpy";
            copy.result.type = ImplType::kMemcpy;
            copy.run = [buf, half](size_t calls) {
              for (size_t i = 0; i < calls; ++i) {
                std::memcpy(buf->data() + half, buf->data(), half);
              }
            };
          }
          TimeRunners(&runners, o, threads, [](const std::string&) {});
          for (Runner& run : runners) r.impls.push_back(run.result);
          results.push_back(r);
        }
      }
    }
  }
  return results;
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
               DtypesName(r.dtypes),
               r.threads ? std::to_string(r.threads) : "all");
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
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const FamilyResult& r : results) {
    nlohmann::ordered_json impls = nlohmann::ordered_json::array();
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
