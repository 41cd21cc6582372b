: A LOCAL declared inside a FROM loop with constant bounds in a KINETIC block (nocmodl declares it in
: the loop's C block): hh.mod's n gate as a five-state chain, c[0] <-> ... <-> c[4], each reaction's
: rates (N - 1 - i) alpha and (i + 1) beta in the loop's LOCALs; a nested loop's LOCAL sums 0..i.
NEURON {
    SUFFIX kfloc
    USEION k READ ek WRITE ik
    RANGE gbar, o
}

DEFINE N 5

UNITS {
    (mV) = (millivolt)
    (mA) = (milliamp)
    (S) = (siemens)
}

PARAMETER {
    gbar = 0.036 (S/cm2)
}

ASSIGNED {
    v (mV)
    ek (mV)
    ik (mA/cm2)
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
    FROM i = 0 TO N - 2 {
        LOCAL kf, kb, s
        s = 0
        FROM j = 0 TO i {
            LOCAL t
            t = j
            s = s + t
        }
        kf = (N - 1 - i) * al
        kb = (s - i * (i - 1) / 2 + 1) * be
        ~ c[i] <-> c[i + 1] (kf, kb)
    }
}
