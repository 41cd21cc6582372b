: VERBATIM random numbers (neurosolve's test file, docs/mechanisms.md "VERBATIM"): a noise
: current drawn once per step from NEURON's mcell_ran4 (its hash of an index kept in a RANGE
: variable) and from a Random123 stream of nrnran123 (ids 1, 2, 3; its position the step),
: as published files draw them in C; plus NEURON's nrn_ghk, in C and in an NMODL statement
: (declared by the file's C, as published files do)
NEURON {
    SUFFIX vbrand
    NONSPECIFIC_CURRENT i
    RANGE amp, idx, u1, u2, inoise
    GLOBAL low
}
PARAMETER {
    amp = 0.001 (mA/cm2)
    low = 7
}
ASSIGNED {
    v (mV)
    i (mA/cm2)
    idx
    u1
    u2
    inoise (mA/cm2)
}
VERBATIM
extern double nrn_ghk(double, double, double, double);
ENDVERBATIM
INITIAL {
    idx = 1
    draw()
}
BREAKPOINT {
    SOLVE draw
    i = inoise + 1e-8 * nrn_ghk(v, 5e-5, 2, 2)
}
PROCEDURE draw() {
VERBATIM
    uint32_t high = (uint32_t)idx;
    double x;
    nrnran123_State *s;
    mcell_ran4_init((uint32_t)low);
    mcell_ran4(&high, &x, 1, 1.0);
    idx = high;
    u1 = x;
    s = nrnran123_newstream3(1, 2, 3);
    nrnran123_setseq(s, (uint32_t)(t / dt + 0.5), 0);
    u2 = nrnran123_dblpick(s) + nrnran123_negexp(s) * 0.001;
    nrnran123_deletestream(s);
    inoise = amp * (u1 + u2 - 1.0) + 1e-7 * nrn_ghk(v, 5e-5, 2.0, 2.0);
ENDVERBATIM
}
