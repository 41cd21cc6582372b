/* Private: NS_PRAGMA(x), an OpenMP directive written inside a macro or a
 * line (_Pragma); nothing in a build without OpenMP. */
#ifndef NS_CORE_PRAGMA_H
#define NS_CORE_PRAGMA_H

#ifdef _OPENMP
#define NS_PRAGMA(x) _Pragma(#x)
#else
#define NS_PRAGMA(x)
#endif

#endif
