: VERBATIM C in a channel (neurosolve's test file, docs/mechanisms.md "VERBATIM"): the
: patterns of published files: C outside the blocks (a static helper), C in FUNCTION and
: PROCEDURE bodies reading and writing RANGE and GLOBAL variables, arguments (_lv) and
: LOCALs (_lq), the FUNCTION's value (_lalphan), a call of another block with
: _threadargscomma_ and one with the NMODL arguments alone (nocmodl's calls in a file that is
: not THREADSAFE, as ModelDB's stats.mod has them), hoc_Exp, t, celsius, `return 0;`, an ASSIGNED array written by the C,
: a name the C declares used by NMODL statements, macros of the C outside the blocks used by
: NMODL statements (one #define'd there, one in a header it includes: vbmacro.h, as ModelDB's
: infot.mod uses misc.h's LG2), and a PROCEDURE only hoc calls (ifarg, getarg) that neurosolve
: leaves out
NEURON {
    SUFFIX vbchan
    USEION k READ ek WRITE ik
    RANGE gbar, ninf, ntau, g, calls
    GLOBAL q10, vhalf
}
UNITS {
    (mA) = (milliamp)
    (mV) = (millivolt)
}
PARAMETER {
    gbar = 0.01 (S/cm2)
    q10 = 3
    vhalf = -40 (mV)
}
ASSIGNED {
    v (mV)
    ek (mV)
    ik (mA/cm2)
    ninf
    ntau (ms)
    g (S/cm2)
    calls
    ab[2]
}
STATE { n }

VERBATIM
#include "vbmacro.h"
#define VB_SHIFT 25
/* a static helper of the file: x / (exp(x / y) - 1), its limit near 0 */
static double vtrap_c(double x, double y) {
    if (fabs(x / y) < 1e-6) return y * (1 - x / y / 2);
    return x / (hoc_Exp(x / y) - 1);
}
ENDVERBATIM

INITIAL {
    calls = 0
    rates(v)
    n = ninf
}
BREAKPOINT {
    SOLVE states METHOD cnexp
    g = gbar * n * n * n * n
    ik = g * (v - ek)
}
DERIVATIVE states {
    rates(v)
    n' = (ninf - n) / ntau
}
FUNCTION alphan(v (mV)) {
    LOCAL q
    q = 0.01
VERBATIM
    _lalphan = _lq * vtrap_c(-(_lv - vhalf - 15.0), 10.0);
ENDVERBATIM
}
FUNCTION betan(v (mV)) {
    betan = VB_BETA * exp(-(v - vhalf + VB_SHIFT) / 80)
}
PROCEDURE rates(v (mV)) {
    LOCAL tadj
    tadj = q10 ^ ((celsius - 6.3) / 10)
VERBATIM
    double sum;
    int k;
    ab[0] = alphan(_threadargscomma_ _lv);
    ab[1] = betan(_lv);
    sum = 0;
    for (k = 0; k < 2; k++) sum += ab[k];
    calls += 1;
ENDVERBATIM
    early()
    ntau = 1 / (tadj * sum)
    ninf = ab[0] / sum
}
PROCEDURE early() {
VERBATIM
    if (t < 0) return 0;
ENDVERBATIM
    calls = calls + 1
}
PROCEDURE fromhoc() {
VERBATIM
    if (ifarg(1)) gbar = *getarg(1);
ENDVERBATIM
}
