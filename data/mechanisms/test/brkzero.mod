: finitialize's evaluation of the currents (neurosolve's test file; the pattern of ModelDB 20212's
: capump.mod): BREAKPOINT's `if (t == 0) {parms()}` sets the compartment and the rates of a
: KINETIC scheme, which divides by it. NEURON's finitialize evaluates every BREAKPOINT with
: currents once at t = 0 after INITIAL (setup_tree_matrix: nrn_cur, the BREAKPOINT but its SOLVE),
: so parms() runs there and only there (a step evaluates the currents at t + dt/2).
NEURON {
    SUFFIX brkzero
    NONSPECIFIC_CURRENT i
    RANGE g, e, area1
    GLOBAL k1, k2
}
PARAMETER {
    g = 2e-4 (S/cm2)
    e = -100 (mV)
    k1 = 0.2 (/ms)
    k2 = 0.05 (/ms)
}
ASSIGNED {
    v (mV)
    i (mA/cm2)
    area1 (um2)
    c1 (um2/ms)
    c2 (um2/ms)
}
STATE {
    c
    o
}
INITIAL {
    c = 0.9
    o = 0.1
}
BREAKPOINT {
    if (t == 0) {parms()}
    SOLVE kin METHOD sparse
    i = g * o * (v - e)
}
KINETIC kin {
    COMPARTMENT area1 {c o}
    ~ c <-> o (c1 * exp((v + 65) / 20), c2)
}
PROCEDURE parms() {
    area1 = 3 + 0.01 * (v + 65)
    c1 = area1 * k1
    c2 = area1 * k2
}
