: VERBATIM random numbers (neurosolve's test file, docs/mechanisms.md "VERBATIM"): a noise
: current drawn once per step from NEURON's mcell_ran4 (its hash of an index kept in a RANGE
: variable) and from a Random123 stream of nrnran123 (ids 1, 2, 3; its position the step),
: as published files draw them in C; plus NEURON's nrn_ghk, in C and in an NMODL statement
: (declared by the file's C, as published files do); a FROM loop's counter in C (_lj, an int
: as nocmodl declares it: a switch on it), and, as ModelDB's files write them for NEURON before
: 8.2, nrn_random_pick's prototype and VecStim's Vector access and reference count (a Vector only
: hoc gives: none)
NEURON {
    SUFFIX vbrand
    NONSPECIFIC_CURRENT i
    RANGE amp, idx, u1, u2, inoise, wgt, space
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
    wgt
    space
}
VERBATIM
extern double nrn_ghk(double, double, double, double);
#ifndef NRN_VERSION_GTEQ_8_2_0
double nrn_random_pick(void* r);
extern double* vector_vec();
extern int vector_capacity();
#endif
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
    LOCAL j
    FROM j = 0 TO 2 {
VERBATIM
        switch (_lj) {
        case 0: wgt = 0.5; break;
        default: wgt += 0.125 * _lj;
        }
ENDVERBATIM
    }
VERBATIM
#ifndef NRN_VERSION_GTEQ_8_2_0
    {
        void *vv = *((void **)(&space));
        if (vv) wgt += vector_vec(vv)[0] * vector_capacity(vv);
        if (vv) hoc_obj_unref(*vector_pobj(vv));
    }
#endif
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
    inoise = amp * wgt * (u1 + u2 - 1.0) + 1e-7 * nrn_ghk(v, 5e-5, 2.0, 2.0);
ENDVERBATIM
}
