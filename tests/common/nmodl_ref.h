/* The NEURON 9.0.2 traces of tests/data/nmodl/ (validation/nmodl_neuron_traces.py)
 * for the one-compartment tests. Include after check.h, with NS_TEST_DATA. */
#ifndef NS_TESTS_NMODL_REF_H
#define NS_TESTS_NMODL_REF_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRACE_DIR NS_TEST_DATA "/nmodl"

/* NEURON's trace: rows t, v[, cai, eca] every 4th step; "# spikes" line. */
typedef struct ref {
    int n, cols;
    double *row; /* n * 4 */
    double spikes[256];
    int n_spikes;
} ref;

static int read_ref(const char *name, ref *r) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.csv", TRACE_DIR, name);
    memset(r, 0, sizeof *r);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[4096];
    int cap = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "# spikes", 8)) {
            char *p = line + 8;
            char *end;
            for (double x = strtod(p, &end); end != p && r->n_spikes < 256; x = strtod(p, &end)) {
                r->spikes[r->n_spikes++] = x;
                p = end;
            }
            continue;
        }
        if (line[0] == '#') continue;
        if (line[0] == 't') {
            r->cols = strstr(line, "cai") ? 4 : strstr(line, "probe") ? 3 : 2;
            continue;
        }
        if (r->n == cap) {
            cap = cap ? 2 * cap : 4096;
            double *nr = realloc(r->row, (size_t)cap * 4 * sizeof *nr);
            if (!nr) { fclose(f); return -1; }
            r->row = nr;
        }
        double *x = r->row + 4 * r->n;
        x[2] = x[3] = 0;
        if (sscanf(line, "%lf,%lf,%lf,%lf", &x[0], &x[1], &x[2], &x[3]) < 2) { fclose(f); return -1; }
        r->n++;
    }
    fclose(f);
    return 0;
}

#endif
