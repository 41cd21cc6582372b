: A TABLE'd FUNCTION that reads a GLOBAL that INITIAL sets (neurosolve's test file, docs/mechanisms.md;
: in verbatim/: it runs on the CPU loop only;
: ModelDB 20212's My_cat.mod has it): k, a PARAMETER without a value (0), is computed by INITIAL, and
: the tabled rate FUNCTIONs divide by it. NEURON builds the table of a file that nocmodl finds not thread
: safe (VERBATIM without THREADSAFE: the `return 0;` in rates) at the function's first call, INITIAL's
: rates(v), with k as INITIAL set it.
NEURON {
    SUFFIX tablazy
    NONSPECIFIC_CURRENT i
    RANGE gbar
}
UNITSOFF
PARAMETER {
    gbar = 0.002 (S/cm2)
    e = -80 (mV)
    celsius (degC)
    k
}
ASSIGNED {
    v (mV)
    i (mA/cm2)
    minf
    tau (ms)
}
STATE { m }
INITIAL {
    k = 20 + celsius
    rates(v)
    m = minf
}
BREAKPOINT {
    SOLVE states METHOD cnexp
    i = gbar * m * (v - e)
}
DERIVATIVE states {
    rates(v)
    m' = (minf - m) / tau
}
PROCEDURE rates(v (mV)) {
    LOCAL a, b
    a = alpm(v)
    b = betm(v)
    minf = a / (a + b)
    tau = 1 / (a + b)
    VERBATIM
    return 0;
    ENDVERBATIM
}
FUNCTION alpm(v (mV)) {
    TABLE FROM -150 TO 150 WITH 200
    alpm = 0.1 * exp(2 * (v + 47) / k)
}
FUNCTION betm(v (mV)) {
    TABLE FROM -150 TO 150 WITH 200
    betm = 0.1 * exp(-3 * (v + 47) / k)
}
UNITSON
