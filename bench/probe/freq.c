/* Per-core speed with 1 and with every thread running (issue 23's 16 / 1
 * ceiling): each thread times a dependent chain of scalar double additions
 * (latency-bound: proportional to the core clock) and 8 independent
 * AVX-512 (or AVX2) multiply-add chains (throughput; the vector unit's
 * clock), all in registers, no memory traffic. Prints ns per iteration, the
 * slowest and the fastest thread. A probe for bench/README.md; never built
 * into the library. gcc -O2 -march=native -fopenmp freq.c */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
static double chain(long n, double x) {
    double s = x;
    for (long i = 0; i < n; ++i) __asm__ volatile("addsd %1, %0" : "+x"(s) : "x"(x));
    return s;
}
#ifdef __AVX512F__
typedef __m512d vec;
#define FMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#define SET1(x) _mm512_set1_pd(x)
#define LOW(v) _mm512_reduce_add_pd(v)
#else
typedef __m256d vec;
#define FMA(a, b, c) _mm256_fmadd_pd(a, b, c)
#define SET1(x) _mm256_set1_pd(x)
#define LOW(v) (((double *)&v)[0])
#endif
static double vecfma(long n, double x) {
    vec a0 = SET1(x), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    const vec m = SET1(0.999999), c = SET1(1e-9);
    for (long i = 0; i < n; ++i) {
        a0 = FMA(a0, m, c); a1 = FMA(a1, m, c); a2 = FMA(a2, m, c); a3 = FMA(a3, m, c);
        a4 = FMA(a4, m, c); a5 = FMA(a5, m, c); a6 = FMA(a6, m, c); a7 = FMA(a7, m, c);
        __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7));
    }
    vec s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    return LOW(s);
}
int main(int argc, char **argv) {
    const long n = argc > 1 ? atol(argv[1]) : 400000000L;
    for (int kind = 0; kind < 2; ++kind) {
        double lo = 1e30, hi = 0, sink = 0, each[1024] = {0}, speed = 0;
#pragma omp parallel reduction(min : lo) reduction(max : hi) reduction(+ : sink)
        {
            sink += kind ? vecfma(n / 100, 1.0) : chain(n / 100, 1.0); /* warm up */
            double t = omp_get_wtime();
            sink += kind ? vecfma(n / 4, 1.0) : chain(n, 1.0);
            t = (omp_get_wtime() - t) / (double)(kind ? n / 4 : n) * 1e9;
            lo = t < lo ? t : lo;
            hi = t > hi ? t : hi;
            if (omp_get_thread_num() < 1024) each[omp_get_thread_num()] = t;
        }
        printf("threads %d %s: ns/iteration fastest %.4f slowest %.4f; each:", omp_get_max_threads(),
               kind ? "vector fma x8" : "scalar add chain", lo, hi);
        for (int t = 0; t < omp_get_max_threads() && t < 1024; ++t) {
            printf(" %.3f", each[t]);
            speed += lo / each[t];
        }
        printf("; sum of speeds / the fastest %.2f (%g)\n", speed, sink);
    }
    return 0;
}
