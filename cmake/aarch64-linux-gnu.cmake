# Cross build for 64-bit Arm Linux with Debian's g++-aarch64-linux-gnu and the
# :arm64 multiarch packages of Highway, oneTBB and GoogleTest; what is built
# runs under qemu-user. With CMAKE_LIBRARY_ARCHITECTURE set, find_package
# looks in /usr/lib/aarch64-linux-gnu/cmake and never in the host's x86-64
# library directory.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# The emulated CPU comes from the environment variable QEMU_CPU (qemu-user
# reads it); unset, qemu-aarch64 emulates "max", which has NEON, SVE and
# SVE2. QEMU_CPU=max,sve-max-vq=2 limits SVE vectors to 256 bits.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
