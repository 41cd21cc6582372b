/* What the NMODL translator emits for a TABLE procedure and a staged cnexp
 * block (src/nmodl/nmodl_gen_block.c, emit_table_rows and emit_one_division),
 * on the built-in hh (src/mech/builtin/hh.h):
 * - the table as rows (nsm_hh_p_rates_rows): a lookup from them, c + t d at
 *   nsm_hh_p_rates_at's entry and weight, set by nsm_hh_p_rates_set, gives
 *   the columns' lookup (nsm_hh_p_rates) bit for bit, at every v (the
 *   entries, between them, outside the table, +-inf, NaN); the rows are
 *   rebuilt when the table is (a new celsius) and only then;
 * - the exponents from one division (nsm_hh_d_states_pre_set, then
 *   nsm_hh_d_states_pre where it finds a tau out of its range, as the fused
 *   pass runs them; Exp2Syn's two) against the divisions dt (-1 / tau):
 *   within 4 ulps over hh's range of time constants, and where a tau is 0,
 *   -0, tiny, huge, inf or NaN, the same exp (ns_mech_exp) as the
 *   division's, the other exponents still within 4 ulps of theirs. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mech/builtin/builtin.h"
#include "mech/builtin/hh.h"
#include "mech/builtin/Exp2Syn.h"
#include "check.h"
#include "ulps.h"

extern const ns_mech_desc nsm_hh_desc;

static int same(double a, double b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0; }

/* hh's TABLE variables (the TABLE's order: minf, mtau, hinf, htau, ninf, ntau) */
static const int COL_FIELD[6] = {9, 12, 10, 13, 11, 14};

typedef struct hh_one {
    double f[18], ion[2], global[1], table[1211];
    double *F[18];
    ns_mech_ppack p;
} hh_one;

static void hh_one_init(hh_one *h, double celsius) {
    memset(h, 0, sizeof *h);
    for (int k = 0; k < 18; ++k) h->F[k] = &h->f[k];
    h->global[0] = 1.0; /* usetable_hh */
    h->p.n = 1;
    h->p.dt = 0.025;
    h->p.celsius = celsius;
    h->p.global = h->global;
    h->p.table = h->table;
    h->p.field = h->F;
}
#define HH_ARGS(h)                                                                                             \
    h.F[0], h.F[1], h.F[2], h.F[3], h.F[4], h.F[5], h.F[6], h.F[7], h.F[8], h.F[9], h.F[10], h.F[11], h.F[12], \
        h.F[13], h.F[14], h.F[15], h.F[16], h.F[17], &h.ion[0], &h.ion[1]

/* the rows' lookup at v into the fields: entry, weight, c + t d, set */
static void lookup_rows(hh_one *h, const double *rows, double v) {
    int k;
    double t, y[6];
    nsm_hh_p_rates_at(&h->p, v, &k, &t);
    const double *r = rows + NSM_hh_rates_LEAD + (size_t)k * NSM_hh_rates_ROW;
    for (int c = 0; c < 6; ++c) y[c] = r[c] + t * r[NSM_hh_rates_ROW / 2 + c];
    nsm_hh_p_rates_set(&h->p, HH_ARGS((*h)), 0, 0, v, y, 1);
}

static void rows_equal_columns(void) {
    CHECK(nsm_hh_desc.table_size == 1211 && NSM_hh_rates_COLS == 6 && NSM_hh_rates_ROW == 16);
    static double rows[NSM_hh_rates_ROWS];
    hh_one h;
    hh_one_init(&h, 6.3);
    CHECK(nsm_hh_desc.table_update(&h.p) == 1);
    CHECK(nsm_hh_p_rates_rows(&h.p, rows) == 1);
    CHECK(nsm_hh_p_rates_rows(&h.p, rows) == 0); /* the same table: kept */
    int64_t checked = 0, differ = 0, inside = 0;
    for (int pass = 0; pass < 2; ++pass) {
        if (pass == 1) { /* another temperature: the table, then the rows, rebuilt */
            h.p.celsius = 22.0;
            CHECK(nsm_hh_desc.table_update(&h.p) == 1);
            CHECK(nsm_hh_p_rates_rows(&h.p, rows) == 1);
        }
        for (int i = -1300; i <= 1300 + 8; ++i) {
            /* 0.1 mV steps from -130 to 130 (the table's entries at every 1 mV
             * from -100 to 100, so both on and between them), then its ends
             * and the values it has no entry for */
            static const double ENDS[] = {-100.0, 100.0, 99.99999999, -99.99999999, INFINITY, -INFINITY, NAN, -0.0, 0.0};
            const double v = i <= 1300 ? 0.1 * i : ENDS[i - 1301];
            double cols[6], fromrows[6];
            nsm_hh_p_rates(&h.p, HH_ARGS(h), 0, 0, v, v);
            for (int c = 0; c < 6; ++c) cols[c] = h.f[COL_FIELD[c]];
            for (int c = 0; c < 6; ++c) h.f[COL_FIELD[c]] = -1.0;
            lookup_rows(&h, rows, v);
            for (int c = 0; c < 6; ++c) fromrows[c] = h.f[COL_FIELD[c]];
            for (int c = 0; c < 6; ++c) {
                differ += !same(cols[c], fromrows[c]);
                ++checked;
            }
            inside += fabs(v) < 100.0 && fromrows[1] > 0.0 && isfinite(fromrows[1]);
        }
    }
    printf("rows vs columns: %lld values, %lld differ; %lld lookups inside the table\n", (long long)checked,
           (long long)differ, (long long)inside);
    CHECK(differ == 0 && inside > 3000);
}

/* hh's three exponents of taus tau[3] (mtau, htau, ntau) from one division
 * as the fused pass takes them: nsm_hh_d_states_pre_set, and where it says
 * they are out of its range, nsm_hh_d_states_pre (the per-step path's),
 * whose lookup then reads a table whose every entry holds these values;
 * exact: the three divisions. Returns pre_set's range decision. */
static int hh_exponents(double dt, const double tau[3], double fast[3], double exact[3]) {
    hh_one h;
    hh_one_init(&h, 6.3);
    h.p.dt = dt;
    const double y[6] = {0.25, tau[0], 0.5, tau[1], 0.75, tau[2]}; /* the targets distinct */
    double t[3];
    const int in = nsm_hh_d_states_pre_set(&h.p, HH_ARGS(h), 0, 0, 0.0, y, 1, &fast[0], &t[0], &fast[1], &t[1],
                                           &fast[2], &t[2]);
    /* the targets are the rows' columns 0, 2, 4 (the fused state pass reads
     * them there: FUSED_HH_TARGET in mech/blocks_fused.c) */
    CHECK(t[0] == y[0] && t[1] == y[2] && t[2] == y[4]);
    if (!in) {
        const double head[5] = {1.0, 6.3, -100.0, 1.0, 6.3}; /* built, celsius, tmin, 1/dx, celsius */
        memcpy(h.table, head, sizeof head);
        for (int c = 0; c < 6; ++c)
            for (int k = 0; k < 201; ++k) h.table[5 + c * 201 + k] = y[c];
        nsm_hh_d_states_pre(&h.p, HH_ARGS(h), 0, 0, 0.0, &fast[0], &t[0], &fast[1], &t[1], &fast[2], &t[2]);
    }
    for (int k = 0; k < 3; ++k) exact[k] = dt * (-1.0 / tau[k]);
    return in;
}

/* Exp2Syn's two exponents (tau1, tau2: fields, so any value reaches them)
 * by its nsm_Exp2Syn_d_state_pre, and by two divisions */
static void exp2syn_exponents(double dt, const double tau[2], double fast[2], double exact[2]) {
    double f[8] = {tau[0], tau[1], 0, 0, 0, 0, 0, 0}, t[2];
    ns_mech_ppack p;
    memset(&p, 0, sizeof p);
    p.dt = dt;
    nsm_Exp2Syn_d_state_pre(&p, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], 0, 0, 0.0, &fast[0], &t[0],
                            &fast[1], &t[1]);
    for (int k = 0; k < 2; ++k) exact[k] = dt * (-1.0 / tau[k]);
}

static uint64_t state = 0x2545f4914f6cdd1dull;
static double uniform(double lo, double hi) { return uniform_in(&state, lo, hi); }

/* the odd tau's own exponent: the division's exp; the others within 4 ulps */
static int64_t wrong(int n, int at, const double *fast, const double *exact, double odd, double dt) {
    int64_t bad = 0;
    for (int k = 0; k < n; ++k) {
        const int ok = k == at ? same(ns_mech_exp(fast[k]), ns_mech_exp(exact[k])) : ulps(fast[k], exact[k]) <= 4;
        if (!ok)
            printf("  %d taus, tau %g at %d, dt %g: exponent %d %.17g, divisions %.17g\n", n, odd, at, dt, k, fast[k],
                   exact[k]);
        bad += !ok;
    }
    return bad;
}

static void one_division(void) {
    int64_t worst = 0, in = 0;
    for (int i = 0; i < 200000; ++i) {
        const double tau[3] = {pow(10.0, uniform(-4, 3)), pow(10.0, uniform(-4, 3)), pow(10.0, uniform(-4, 3))};
        double fast[3], exact[3];
        in += hh_exponents(i % 2 ? 0.025 : uniform(1e-3, 1.0), tau, fast, exact);
        for (int k = 0; k < 3; ++k) {
            const int64_t u = ulps(fast[k], exact[k]);
            worst = u > worst ? u : worst;
        }
    }
    printf("one division: %lld ulps at most from three over taus in [1e-4, 1e3] ms (%lld of 200000 in range)\n",
           (long long)worst, (long long)in);
    CHECK(worst <= 4 && in == 200000);
    /* a tau out of range beside ordinary ones, in each position: hh's
     * through its table (every finite value and NaN: an infinite entry
     * interpolates to NaN, and -0 to +0), Exp2Syn's as fields (all) */
    static const double ODD[] = {0.0, -0.0, 1e-200, -1e-200, 1e-160, 1e160, 1e200, -1e200, INFINITY, -INFINITY, NAN};
    int64_t bad = 0, cases = 0, decided = 0;
    for (size_t o = 0; o < sizeof ODD / sizeof *ODD; ++o)
        for (int d = 0; d < 2; ++d) {
            const double dt = d ? 0.025 : 1.0;
            const int tabled = (isfinite(ODD[o]) || isnan(ODD[o])) && !(ODD[o] == 0.0 && signbit(ODD[o]));
            for (int at = 0; at < 3 && tabled; ++at) {
                double tau[3] = {0.3, 2.5, 7.0}, fast[3], exact[3];
                tau[at] = ODD[o];
                decided += hh_exponents(dt, tau, fast, exact) == 0;
                bad += wrong(3, at, fast, exact, ODD[o], dt);
                ++cases;
            }
            for (int at = 0; at < 2; ++at) {
                double tau[2] = {0.5, 3.0}, fast[2], exact[2];
                tau[at] = ODD[o];
                exp2syn_exponents(dt, tau, fast, exact);
                bad += wrong(2, at, fast, exact, ODD[o], dt);
            }
        }
    printf("one division with a tau out of range: %lld wrong (hh: %lld cases, %lld found out of range)\n",
           (long long)bad, (long long)cases, (long long)decided);
    CHECK(bad == 0 && decided == cases && cases == 48);
}

int main(void) {
    rows_equal_columns();
    one_division();
    return check_summary("test_table_rows");
}
