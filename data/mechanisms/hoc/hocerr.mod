: A leak whose VERBATIM C stops the simulation (neurosolve's test of the error channel,
: docs/mechanisms.md "Errors in a mechanism"): INITIAL with hoc_execerror when g < 0,
: BREAKPOINT once t passes terr, by hoc_execerror (how 0), exit (1) or abort (2).
NEURON {
    SUFFIX hocerr
    NONSPECIFIC_CURRENT i
    RANGE g, e, terr, how
}
PARAMETER {
    g = 1e-4 (S/cm2)
    e = -65 (mV)
    terr = 5 (ms)
    how = 0
}
ASSIGNED {
    v (mV)
    i (mA/cm2)
}
INITIAL {
VERBATIM
    if (g < 0) hoc_execerror("hocerr: g must not be negative", 0);
ENDVERBATIM
}
BREAKPOINT {
    i = g * (v - e)
VERBATIM
    if (t > terr) {
        if (how == 1) exit(3);
        if (how == 2) abort();
        hoc_execerror("hocerr: t passed terr", "(stopping)");
    }
ENDVERBATIM
}
