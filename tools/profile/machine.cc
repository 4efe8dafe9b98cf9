#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "profile.h"

namespace simdnorm_profile {
namespace {

// The first word of a file (a sysfs value), "" when it cannot be read.
std::string Word(const std::string& path) {
  std::string w;
  std::ifstream(path) >> w;
  return w;
}

// The value of the first "key : value" line of /proc/cpuinfo.
std::string CpuInfoField(const std::string& cpuinfo, const std::string& key) {
  std::smatch m;
  const std::regex line("^[ \t]*" + key + "[ \t]*:[ \t]*(.*?)[ \t\r]*$",
                        std::regex::multiline);
  return std::regex_search(cpuinfo, m, line) ? m.str(1) : "";
}

std::string Caches() {
  std::string out;
  for (int i = 0; i < 8; ++i) {
    const std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    const std::string level = Word(dir + "level");
    if (level.empty()) break;
    const std::string type = Word(dir + "type");
    std::string size = Word(dir + "size");
    if (type == "Instruction") continue;
    if (!size.empty() && size.back() == 'K')
      size.replace(size.size() - 1, 1, " KiB");
    out += (out.empty() ? "L" : ", L") + level + (type == "Data" ? "d " : " ") +
           size;
  }
  if (!out.empty()) return out + " (cpu0)";
  // No sysfs cache entries (some KVM guests): glibc's sizes, from CPUID.
  const long sizes[] = {sysconf(_SC_LEVEL1_DCACHE_SIZE),
                        sysconf(_SC_LEVEL2_CACHE_SIZE),
                        sysconf(_SC_LEVEL3_CACHE_SIZE)};
  const char* names[] = {"L1d ", "L2 ", "L3 "};
  for (int i = 0; i < 3; ++i) {
    if (sizes[i] <= 0) continue;
    out += (out.empty() ? "" : ", ") + std::string(names[i]) +
           std::to_string(sizes[i] >> 10) + " KiB";
  }
  return out.empty() ? "unknown" : out + " (CPUID)";
}

}  // namespace

bool ReadFile(const std::string& path, std::string* text) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  *text = ss.str();
  return f.good();
}

Machine DetectMachine() {
  Machine m;
#if defined(__x86_64__) || defined(_M_X64)
  m.arch = "x86_64";
#elif defined(__i386__)
  m.arch = "x86";
#elif defined(__aarch64__)
  m.arch = "aarch64";
#elif defined(__arm__)
  m.arch = "arm";
#elif defined(__riscv)
  m.arch = "riscv";
#elif defined(__powerpc64__)
  m.arch = "ppc64";
#else
  m.arch = "unknown";
#endif
  std::string cpuinfo;
  ReadFile("/proc/cpuinfo", &cpuinfo);
  m.cpu = CpuInfoField(cpuinfo, "model name");
  if (m.cpu.empty()) m.cpu = CpuInfoField(cpuinfo, "Hardware");
  const std::string impl = CpuInfoField(cpuinfo, "CPU implementer");
  if (m.cpu.empty() && !impl.empty()) {
    m.cpu =
        "implementer " + impl + ", part " + CpuInfoField(cpuinfo, "CPU part");
  }
  if (m.cpu.empty()) m.cpu = "unknown CPU";
  m.logical_cpus = std::thread::hardware_concurrency();
  m.caches = Caches();
  if (!(std::ifstream("/proc/loadavg") >> m.load1)) m.load1 = -1.0;
#if defined(__clang__)
  m.compiler = "Clang " __clang_version__;
#elif defined(__GNUC__)
  m.compiler = "GCC " __VERSION__;
#elif defined(_MSC_VER)
  m.compiler = "MSVC " + std::to_string(_MSC_VER);
#else
  m.compiler = "unknown compiler";
#endif

  // Emulation: kept simple. An explicit variable, qemu's own variables, or
  // a /proc/cpuinfo of another architecture than this binary's (qemu-user
  // passes the host's through).
  const char* forced = std::getenv("SIMDNORM_EMULATED");
  const bool x86 = m.arch == "x86_64" || m.arch == "x86";
  const bool cpuinfo_x86 = cpuinfo.find("vendor_id") != std::string::npos;
  if (forced && *forced && std::string(forced) != "0") {
    m.emulated = "SIMDNORM_EMULATED is set";
  } else if (std::getenv("QEMU_CPU") || std::getenv("QEMU_LD_PREFIX")) {
    m.emulated = "QEMU_CPU or QEMU_LD_PREFIX is set";
  } else if (!cpuinfo.empty() && cpuinfo_x86 != x86) {
    m.emulated = "/proc/cpuinfo describes another architecture than this " +
                 m.arch + " binary (qemu-user)";
  }
  return m;
}

}  // namespace simdnorm_profile
