: A FROM loop whose bound is a PARAMETER in a KINETIC block (nocmodl: a loop in the block's C):
: hh.mod's n gate as a five-state chain, c[0] <-> ... <-> c[4] with rates (n - i) alpha and
: (i + 1) beta computed in the loop; the reactions in a loop with constant bounds.
NEURON {
    SUFFIX kloop
    USEION k READ ek WRITE ik
    RANGE gbar, o
    GLOBAL n
}

DEFINE N 5

UNITS {
    (mV) = (millivolt)
    (mA) = (milliamp)
    (S) = (siemens)
}

PARAMETER {
    gbar = 0.036 (S/cm2)
    n = 4
}

ASSIGNED {
    v (mV)
    ek (mV)
    ik (mA/cm2)
    a[N] (/ms)
    b[N] (/ms)
    o
}

STATE { c[N] }

BREAKPOINT {
    SOLVE chain METHOD sparse
    o = c[N - 1]
    ik = gbar * o * (v - ek)
}

INITIAL {
    c[0] = 1
}

KINETIC chain {
    LOCAL x, al, be
    x = -(v + 55)
    if (fabs(x / 10) < 1e-6) {
        al = 0.1 * (1 - x / 20)
    } else {
        al = 0.01 * x / (exp(x / 10) - 1)
    }
    be = 0.125 * exp(-(v + 65) / 80)
    FROM i = 0 TO n - 1 {
        a[i] = (n - i) * al
        b[i] = (i + 1) * be
    }
    FROM i = 0 TO N - 2 {
        ~ c[i] <-> c[i + 1] (a[i], b[i])
    }
}
