/* The counters of alloc_hooks.c (simdnorm_alloc_tests only). */
#ifndef SIMDNORM_TESTS_ALLOC_HOOKS_H_
#define SIMDNORM_TESTS_ALLOC_HOOKS_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Allocations (malloc, calloc, realloc, memalign, aligned_alloc,
 * posix_memalign, valloc, pvalloc) and frees of any thread are counted
 * while counting is on. */
void simdnorm_alloc_counting(int on);
void simdnorm_alloc_reset(void);
size_t simdnorm_alloc_count(void);
size_t simdnorm_free_count(void);
/* How many times dlopen refused to load libtbbmalloc. */
size_t simdnorm_refused_dlopens(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SIMDNORM_TESTS_ALLOC_HOOKS_H_ */
