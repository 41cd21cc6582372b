: A gap junction as a density mechanism (SUFFIX): at each segment where it is
: inserted, a conductance g per area from v to the value that POINTER vgap
: reaches (NEURON's setpointer: another cell's v for a gap junction, the
: parent segment's v, an ion's reversal potential). Written for neurosolve's
: tests (tests/nmodl/test_nmodl_dpointer.c, validation/nmodl_density_pointer.py).
NEURON {
    SUFFIX dgap
    NONSPECIFIC_CURRENT i
    RANGE g, i
    POINTER vgap
}
PARAMETER { g = 1e-4 (siemens/cm2) }
ASSIGNED {
    v (millivolt)
    vgap (millivolt)
    i (milliamp/cm2)
}
BREAKPOINT { i = g * (v - vgap) }
