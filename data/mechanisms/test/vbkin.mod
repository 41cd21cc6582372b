: VERBATIM C in a KINETIC block (NEURON runs it where the block is evaluated, at each step of
: sparse's Newton iteration): a two-state potassium channel whose rates the C computes from v,
: a LOCAL of the block (_ltadj) and a constant of its own; RANGE kf and kb hold them.
NEURON {
    SUFFIX vbkin
    USEION k READ ek WRITE ik
    RANGE gbar, kf, kb
}

UNITS {
    (mV) = (millivolt)
    (mA) = (milliamp)
    (S) = (siemens)
}

PARAMETER {
    gbar = 0.036 (S/cm2)
    q10 = 3
}

ASSIGNED {
    v (mV)
    ek (mV)
    ik (mA/cm2)
    celsius (degC)
    kf (/ms)
    kb (/ms)
}

STATE { c o }

BREAKPOINT {
    SOLVE kin METHOD sparse
    ik = gbar * o * o * o * o * (v - ek)
}

INITIAL {
    c = 1
    o = 0
}

KINETIC kin {
    LOCAL tadj
    tadj = q10 ^ ((celsius - 6.3) / 10)
VERBATIM
    {
        const double x = -(v + 55.0);
        if (fabs(x / 10.0) < 1e-6) {
            kf = _ltadj * 0.1 * (1.0 - x / 20.0);
        } else {
            kf = _ltadj * 0.01 * x / (exp(x / 10.0) - 1.0);
        }
        kb = _ltadj * 0.125 * exp(-(v + 65.0) / 80.0);
    }
ENDVERBATIM
    ~ c <-> o (kf, kb)
    CONSERVE c + o = 1
}
