: A leak whose VERBATIM C counts its calls in a static variable, which every instance
: shares: NEURON calls such a mechanism "not thread safe" (no THREADSAFE) and refuses
: more than one thread; so does neurosolve (docs/mechanisms.md "VERBATIM").
NEURON {
    SUFFIX vbstatic
    NONSPECIFIC_CURRENT i
    RANGE g, e
}
PARAMETER {
    g = 1e-4 (S/cm2)
    e = -65 (mV)
}
ASSIGNED {
    v (mV)
    i (mA/cm2)
}
VERBATIM
static int ncalls;
ENDVERBATIM
BREAKPOINT {
    i = g * (v - e)
VERBATIM
    ncalls++;
ENDVERBATIM
}
