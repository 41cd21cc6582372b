/* neurosolve: NS_API marks the functions of the public API.
 *
 * The library is compiled with hidden visibility (-fvisibility=hidden), so
 * that only what is marked NS_API is exported from libneurosolve.so; every
 * internal function stays private to the library. Static libraries are
 * unaffected. */
#ifndef NEUROSOLVE_EXPORT_H
#define NEUROSOLVE_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define NS_API __attribute__((visibility("default")))
#else
#define NS_API
#endif

#endif
