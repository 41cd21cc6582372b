TITLE Array STATEs in a DERIVATIVE block by derivimplicit, with equations not linear in them

COMMENT
Written for neurosolve's tests (the project's licence). x[0..3] is a chain whose transfers
saturate (a x[j-1] (1 - x[j])) and whose elements decay in pairs (b x[j]^2); the equations are
x'[j] in a FROM loop with constant bounds (a DEFINE) after x'[0], solved together by Newton's method
(derivimplicit). (NEURON 9.0.2's nocmodl warns that it does not translate derivatives of array
STATEs and emits C that does not compile: the reference is validation/nmodl_twins/arrdi.mod, this
file with x0..x3.)
ENDCOMMENT

DEFINE N 4

NEURON {
    SUFFIX arrdi
    NONSPECIFIC_CURRENT i
    RANGE gbar, e, i, o
}

UNITS {
    (mV) = (millivolt)
    (mA) = (milliamp)
    (S) = (siemens)
}

PARAMETER {
    gbar = 0.01 (S/cm2)
    e = -80 (mV)
    b = 0.4 (/ms)
}

ASSIGNED {
    v (mV)
    i (mA/cm2)
    a (/ms)
    o
}

STATE { x[N] }

INITIAL {
    FROM j = 0 TO N - 1 {
        x[j] = 0
    }
}

BREAKPOINT {
    SOLVE chain METHOD derivimplicit
    o = x[N - 1]
    i = gbar * o * (v - e)
}

DERIVATIVE chain {
    a = 0.5 * exp((v + 40) / 15)
    x'[0] = a * (1 - x[0]) - b * x[0] * x[1]
    FROM j = 1 TO N - 1 {
        x'[j] = a * x[j - 1] * (1 - x[j]) - b * x[j] * x[j]
    }
}
