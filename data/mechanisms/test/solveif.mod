: A SOLVE nested in BREAKPOINT's if/else (neurosolve's test file; the pattern of ModelDB's
: bg_cvode.inc): nocmodl moves every SOLVE of a BREAKPOINT to nrn_state, however nested, so the
: states are integrated whatever the condition; the condition stays in the currents. A FROM
: loop with an undeclared index raising m to a GLOBAL power. And a STATE q that INITIAL does not
: set, whose GLOBAL PARAMETER q0 is its value before INITIAL (nocmodl's initmodel: `q = q0`, as
: NEURON's cabpump.mod starts its pump).
NEURON {
    SUFFIX solveif
    USEION k READ ek WRITE ik
    RANGE gbar, g
    GLOBAL mexp, q0
}
PARAMETER {
    gbar = 0.01 (S/cm2)
    mexp = 3
    q0 = 0.4
}
ASSIGNED {
    v (mV)
    ek (mV)
    ik (mA/cm2)
    g (S/cm2)
    minf
    mtau (ms)
    mpow
}
STATE {
    m
    q
}
INITIAL {
    rates(v)
    m = minf
}
BREAKPOINT {
    if (gbar == 0) {
        g = 0
    } else {
        SOLVE states METHOD cnexp
        mpow = 1
        FROM index = 1 TO mexp {
            mpow = mpow * m
        }
        g = gbar * mpow * (1 + q)
    }
    ik = g * (v - ek)
}
DERIVATIVE states {
    rates(v)
    m' = (minf - m) / mtau
    q' = -q / 8
}
PROCEDURE rates(v (mV)) {
    minf = 1 / (1 + exp(-(v + 40) / 8))
    mtau = 1 + 4 / (1 + exp((v + 50) / 10))
}
