: usetable read as a name (neurosolve's test file, docs/mechanisms.md): NEURON's one flag of
: the mechanism's TABLEs (usetable_usetab in hoc, 1 by default), here INITIAL's choice of m's
: start, as ModelDB's bg.inc reads it; a PROCEDURE called as a value; a TABLE of a STATE that
: no equation integrates (b, a magnesium block, as ModelDB 18198's nmda5.mod has it); a TABLE'd
: PROCEDURE that sets NEURON globals its TABLE does not name (tadj, as Mainen's kv.mod of 1995 has
: it, and vlast): NEURON's table build leaves them as its last point did, which the current reads;
: a TABLE of an array, w, every element a column (ModelDB 20212's hh3_flei.mod: TABLE inf, fac)
NEURON {
    SUFFIX usetab
    NONSPECIFIC_CURRENT i
    RANGE gbar
}
PARAMETER {
    gbar = 0.002 (S/cm2)
    e = -80 (mV)
    mg = 1 (mM)
}
ASSIGNED {
    v (mV)
    i (mA/cm2)
    minf
    tau (ms)
    tadj
    vlast (mV)
    w[2]
}
STATE { m b }
INITIAL {
    minf = rates(v) : rates sets minf, then the call's value, 0, replaces it (nocmodl's procedures
                    : return 0; ModelDB's NMDA.mod: B = mgblock(v))
    if (usetable == 0) {
        m = 1
    } else {
        m = minf + 0.25
    }
}
BREAKPOINT {
    mgblock(v)
    SOLVE states METHOD cnexp
    i = gbar * m * b * (v - e) * tadj * vlast / 100 * (w[0] + w[1])
}
DERIVATIVE states {
    rates(v)
    m' = (minf - m) / tau
}
PROCEDURE rates(v (mV)) {
    TABLE minf, tau, w FROM -100 TO 100 WITH 200
    minf = 1 / (1 + exp(-(v + 55) / 8))
    tau = 1 + 5 * exp(-((v + 50) / 20)^2)
    tadj = 2 + celsius / 10
    vlast = v
    w[0] = 0.5
    w[1] = 1 / (1 + exp((v + 60) / 10))
}
PROCEDURE mgblock(v (mV)) {
    TABLE b DEPEND mg FROM -100 TO 100 WITH 200
    b = 1 / (1 + exp(0.062 * -v) * (mg / 3.57))
}
