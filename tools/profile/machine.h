// What simdnorm-profile prints about the machine it measures.
#ifndef SIMDNORM_TOOLS_PROFILE_MACHINE_H_
#define SIMDNORM_TOOLS_PROFILE_MACHINE_H_

#include <string>

namespace simdnorm_profile {

struct Machine {
  std::string cpu;   // "AMD EPYC" (model name in /proc/cpuinfo)
  std::string arch;  // the architecture this binary was built for
  unsigned logical_cpus = 0;
  std::string caches;    // "L1d 48 KiB, L2 1024 KiB, L3 32768 KiB" (cpu0)
  std::string compiler;  // "GCC 12.2.0"
  // 1-minute load average when the run started (/proc/loadavg), or < 0.
  double load1 = -1.0;
  // Non-empty when the process seems to run under an emulator (qemu): why.
  std::string emulated;
};

Machine DetectMachine();

}  // namespace simdnorm_profile

#endif  // SIMDNORM_TOOLS_PROFILE_MACHINE_H_
