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
/* 8 independent division chains (the divider's throughput) */
static double vecdiv(long n, double x) {
    vec a0 = SET1(x), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    const vec c = SET1(1.0000001);
    for (long i = 0; i < n; ++i) {
        a0 = c / a0; a1 = c / a1; a2 = c / a2; a3 = c / a3;
        a4 = c / a4; a5 = c / a5; a6 = c / a6; a7 = c / a7;
        __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7));
    }
    vec s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    return LOW(s);
}
#ifdef __AVX512F__
/* 4 independent gathers per iteration from a 1.6 kB table (in L1), the
 * gates' table lookup */
static double vecgather(long n, double x) {
    static double table[201];
    for (int i = 0; i < 201; ++i) table[i] = x + i;
    __m256i i0 = _mm256_setr_epi32(3, 17, 40, 41, 90, 120, 150, 199), i1 = _mm256_add_epi32(i0, _mm256_set1_epi32(1));
    const __m256i one = _mm256_set1_epi32(1), mask = _mm256_set1_epi32(127);
    vec s0 = SET1(0), s1 = s0, s2 = s0, s3 = s0;
    for (long i = 0; i < n; ++i) {
        s0 += _mm512_i32gather_pd(i0, table, 8);
        s1 += _mm512_i32gather_pd(i1, table, 8);
        s2 += _mm512_i32gather_pd(i0, table + 50, 8);
        s3 += _mm512_i32gather_pd(i1, table + 50, 8);
        i0 = _mm256_and_si256(_mm256_add_epi32(i0, one), mask);
        i1 = _mm256_and_si256(_mm256_add_epi32(i1, one), mask);
    }
    vec s = s0 + s1 + s2 + s3;
    return LOW(s);
}
#else
static double vecgather(long n, double x) { return vecdiv(n, x); }
#endif
static double kernel(int kind, long n) {
    switch (kind) {
    case 0: return chain(n, 1.0);
    case 1: return vecfma(n / 4, 1.0);
    case 2: return vecdiv(n / 40, 1.0);
    default: return vecgather(n / 10, 1.0);
    }
}
static const long per[4] = {1, 4, 40, 10};
static const char *name[4] = {"scalar add chain", "vector fma x8", "vector div x8", "vector gather x4"};
int main(int argc, char **argv) {
    const long n = argc > 1 ? atol(argv[1]) : 400000000L;
    for (int kind = 0; kind < 4; ++kind) {
        double lo = 1e30, hi = 0, sink = 0, each[1024] = {0}, speed = 0;
#pragma omp parallel reduction(min : lo) reduction(max : hi) reduction(+ : sink)
        {
            sink += kernel(kind, n / 100); /* warm up */
            double t = omp_get_wtime();
            sink += kernel(kind, n);
            t = (omp_get_wtime() - t) / (double)(n / per[kind]) * 1e9;
            lo = t < lo ? t : lo;
            hi = t > hi ? t : hi;
            if (omp_get_thread_num() < 1024) each[omp_get_thread_num()] = t;
        }
        printf("threads %d %s: ns/iteration fastest %.4f slowest %.4f; each:", omp_get_max_threads(), name[kind], lo,
               hi);
        for (int t = 0; t < omp_get_max_threads() && t < 1024; ++t) {
            printf(" %.3f", each[t]);
            speed += lo / each[t];
        }
        printf("; sum of speeds / the fastest %.2f (%g)\n", speed, sink);
    }
    return 0;
}
