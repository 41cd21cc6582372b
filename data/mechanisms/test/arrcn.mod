TITLE A gate as a chain of four states: an array STATE in a DERIVATIVE block, by cnexp

COMMENT
Written for neurosolve's tests (the project's licence). x[0..3] is a chain with forward rate a(v)
and backward rate b; the conductance follows the last state. The equations are x'[i] in a FROM loop
with constant bounds (a DEFINE), and x'[0], x'[N-1] outside it; each is linear in its own element,
and cnexp updates them one after the other, each with the others' latest values, as nocmodl's cnexp
does scalar STATEs. (NEURON 9.0.2's nocmodl warns that it does not translate derivatives of array
STATEs and emits C that does not compile: the reference is validation/nmodl_twins/arrcn.mod, this
file with x0..x3.)
ENDCOMMENT

DEFINE N 4

NEURON {
    SUFFIX arrcn
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
    b = 0.3 (/ms)
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
    x[0] = 1
}

BREAKPOINT {
    SOLVE chain METHOD cnexp
    o = x[N - 1]
    i = gbar * o * (v - e)
}

DERIVATIVE chain {
    a = 0.5 * exp((v + 40) / 15)
    x'[0] = -a * x[0] + b * x[1]
    FROM j = 1 TO N - 2 {
        x'[j] = a * x[j - 1] - (a + b) * x[j] + b * x[j + 1]
    }
    x'[N - 1] = a * x[N - 2] - b * x[N - 1]
}
