/* Symbol visibility for the simdnorm shared library. */
#ifndef SIMDNORM_EXPORT_H_
#define SIMDNORM_EXPORT_H_

#if defined(SIMDNORM_STATIC)
#define SIMDNORM_API
#elif defined(_WIN32)
#if defined(SIMDNORM_BUILDING)
#define SIMDNORM_API __declspec(dllexport)
#else
#define SIMDNORM_API __declspec(dllimport)
#endif
#else
#define SIMDNORM_API __attribute__((visibility("default")))
#endif

#endif /* SIMDNORM_EXPORT_H_ */
