: Recursive FUNCTIONs and PROCEDUREs (NEURON's C recurses; so does ours): a
: delayed-rectifier potassium channel (hh.mod's n gate) whose rates come from
: recursive functions: a power by recursion, a factorial, exp as its series
: summed by a recursive call, a pair of functions that call each other, a
: PROCEDURE that calls itself, and a TABLE'd FUNCTION over the recursion.
NEURON {
    SUFFIX recur
    USEION k READ ek WRITE ik
    RANGE gbar, ninf, ntau
    GLOBAL depth
}

UNITS {
    (mV) = (millivolt)
    (mA) = (milliamp)
    (S) = (siemens)
}

PARAMETER {
    gbar = 0.036 (S/cm2)
    depth = 3
}

ASSIGNED {
    v (mV)
    ek (mV)
    ik (mA/cm2)
    ninf
    ntau (ms)
}

STATE { n }

BREAKPOINT {
    SOLVE states METHOD cnexp
    ik = gbar * ipow(n, 4) * (v - ek)
}

INITIAL {
    rates(v, depth)
    n = ninf
}

DERIVATIVE states {
    rates(v, depth)
    n' = (ninf - n) / ntau
}

: x^k for a whole k >= 0
FUNCTION ipow(x, k) {
    if (k <= 0) {
        ipow = 1
    } else {
        ipow = x * ipow(x, k - 1)
    }
}

FUNCTION fact(k) {
    if (k <= 1) {
        fact = 1
    } else {
        fact = k * fact(k - 1)
    }
}

: the terms k..kmax of exp(a)'s series
FUNCTION expser(a, k, kmax) {
    if (k > kmax) {
        expser = 0
    } else {
        expser = ipow(a, k) / fact(k) + expser(a, k + 1, kmax)
    }
}

FUNCTION iseven(k) {
    if (k <= 0) {
        iseven = 1
    } else {
        iseven = isodd(k - 1)
    }
}

FUNCTION isodd(k) {
    if (k <= 0) {
        isodd = 0
    } else {
        isodd = iseven(k - 1)
    }
}

FUNCTION betan(v (mV)) {
    TABLE FROM -100 TO 100 WITH 400
    betan = 0.125 * expser(-(v + 65) / 80, 0, 18)
}

PROCEDURE rates(v (mV), d) {
    LOCAL a, b, x
    if (d > 0) {
        rates(v, d - 1)
        ntau = ntau + 0.25 * iseven(d)
    } else {
        x = -(v + 55)
        if (fabs(x / 10) < 1e-6) {
            a = 0.1 * (1 - x / 20)
        } else {
            a = 0.01 * x / (expser(x / 10, 0, 60) - 1)
        }
        b = betan(v)
        ninf = a / (a + b)
        ntau = 1 / (a + b)
    }
}
