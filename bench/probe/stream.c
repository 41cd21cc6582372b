/* Triad a = b + s c over N doubles per array, OpenMP static, best of 10. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    const long n = atol(argv[1]);
    double *a = malloc(n * 8), *b = malloc(n * 8), *c = malloc(n * 8);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) a[i] = 0, b[i] = 1, c[i] = 2;
    double best = 1e9;
    for (int r = 0; r < 20; ++r) {
        double t = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; ++i) a[i] = b[i] + 3.0 * c[i];
        t = omp_get_wtime() - t;
        if (t < best) best = t;
    }
    printf("n %ld (%.0f MB) threads %d: %.1f GB/s (%g)\n", n, 24.0 * n / 1e6, omp_get_max_threads(), 32.0 * n / best / 1e9, a[n / 2]);
    return 0;
}
