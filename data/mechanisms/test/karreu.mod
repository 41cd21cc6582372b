TITLE karreu: a KINETIC scheme of array STATEs by METHOD euler
COMMENT
neurosolve's test file: a chain of four states s[0] ... s[3] in FROM loops, its rates in
arrays, a COMPARTMENT per element; nocmodl's derivative form of a KINETIC block (kinetic.cpp's
kinetic_intmethod: Ds[j] -= flux, Ds[j + 1] += flux) stepped by scopmath's euler.
karrrk.mod is this file with SUFFIX karrrk and METHOD runge.
ENDCOMMENT

NEURON {
    SUFFIX karreu
    NONSPECIFIC_CURRENT i
    RANGE gbar, e
}

UNITS {
    (mA) = (milliamp)
    (mV) = (millivolt)
}

PARAMETER {
    gbar = 0.003 (S/cm2)
    e = -20 (mV)
}

ASSIGNED {
    v (mV)
    i (mA/cm2)
    a[3] (/ms)
    b[3] (/ms)
}

STATE { s[4] }

INITIAL {
    s[0] = 1
}

BREAKPOINT {
    SOLVE k METHOD euler
    i = gbar*s[3]*(v - e)
}

KINETIC k {
    FROM j = 0 TO 2 {
        a[j] = 0.1*(j + 1)*exp((v + 40)/15)
        b[j] = 0.2*exp(-(v + 40)/20)
    }
    COMPARTMENT j, 1 + 0.5*j {s}
    FROM j = 0 TO 2 {
        ~ s[j] <-> s[j + 1] (a[j], b[j])
    }
}
