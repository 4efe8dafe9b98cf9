/* Counting replacements of glibc's allocation functions, linked only into
 * simdnorm_alloc_tests (never into a sanitizer build: those runtimes replace
 * malloc themselves). An executable's definitions of malloc & co. interpose
 * on every shared library of the process (glibc supports replacing malloc
 * this way), so allocations made by libsimdnorm, libtbb, libstdc++ and libc
 * itself are all counted; the memory still comes from glibc (__libc_*).
 *
 * oneTBB takes its own memory from libtbbmalloc.so.2 (scalable_malloc, which
 * gets pages with mmap) when it can load that library; then nothing TBB
 * allocates would pass through malloc. dlopen() below refuses to load
 * libtbbmalloc in this process, so that TBB falls back to malloc (see
 * tbb/src/tbb/allocator.cpp: initialize_handler_pointers) and what it
 * allocates is counted too. The test checks that the fallback took place. */
#define _GNU_SOURCE
#include "alloc_hooks.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

extern void* __libc_malloc(size_t size);
extern void* __libc_calloc(size_t n, size_t size);
extern void* __libc_realloc(void* p, size_t size);
extern void* __libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void* p);

static atomic_int counting;
static atomic_size_t allocations;
static atomic_size_t frees;
static atomic_size_t refused_dlopens;

static void Count(void) {
  if (atomic_load_explicit(&counting, memory_order_relaxed)) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
  }
}

void simdnorm_alloc_counting(int on) {
  atomic_store_explicit(&counting, on, memory_order_seq_cst);
}
size_t simdnorm_alloc_count(void) { return atomic_load(&allocations); }
size_t simdnorm_free_count(void) { return atomic_load(&frees); }
void simdnorm_alloc_reset(void) {
  atomic_store(&allocations, 0);
  atomic_store(&frees, 0);
}
size_t simdnorm_refused_dlopens(void) { return atomic_load(&refused_dlopens); }

void* malloc(size_t size) {
  Count();
  return __libc_malloc(size);
}

void* calloc(size_t n, size_t size) {
  Count();
  return __libc_calloc(n, size);
}

void* realloc(void* p, size_t size) {
  Count();
  return __libc_realloc(p, size);
}

void* memalign(size_t alignment, size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}

void* aligned_alloc(size_t alignment, size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}

int posix_memalign(void** out, size_t alignment, size_t size) {
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) {
    return EINVAL;
  }
  Count();
  void* p = __libc_memalign(alignment, size);
  if (p == NULL) return ENOMEM;
  *out = p;
  return 0;
}

void* valloc(size_t size) {
  Count();
  return __libc_memalign((size_t)sysconf(_SC_PAGESIZE), size);
}

void* pvalloc(size_t size) {
  Count();
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return __libc_memalign(page, (size + page - 1) / page * page);
}

void free(void* p) {
  if (p != NULL && atomic_load_explicit(&counting, memory_order_relaxed)) {
    atomic_fetch_add_explicit(&frees, 1, memory_order_relaxed);
  }
  __libc_free(p);
}

typedef void* (*DlopenFn)(const char*, int);

void* dlopen(const char* file, int mode) {
  if (file != NULL && strstr(file, "libtbbmalloc") != NULL) {
    atomic_fetch_add(&refused_dlopens, 1);
    return NULL;
  }
  static DlopenFn next;
  if (next == NULL) next = (DlopenFn)dlsym(RTLD_NEXT, "dlopen");
  return next(file, mode);
}
