: A gated leak whose steady state is a C1 spline in v written with nested IF/ELSE
: (tests/grad/test_grad_nestif.c): four pieces, each with its own derivative, joined with
: matching values and slopes, so that the loss is smooth where a trajectory crosses a
: joint and central differences stay a reference. The derivative code writes these IFs
: as selects (docs/gradients.md, "Cost of the vectorised products").
NEURON {
    SUFFIX nestif
    NONSPECIFIC_CURRENT i
    RANGE g, e, vh
    GLOBAL amin, amax, tau
}

PARAMETER {
    g = 0.002 (S/cm2)
    e = -80 (mV)
    vh = -40 (mV)
    amin = 0.05
    amax = 0.95
    tau = 2 (ms)
}

ASSIGNED {
    v (mV)
    i (mA/cm2)
    ainf
    x (mV)
}

STATE { a }

INITIAL {
    rates(v)
    a = ainf
}

BREAKPOINT {
    SOLVE states METHOD cnexp
    i = g * a * (v - e)
}

DERIVATIVE states {
    rates(v)
    a' = (ainf - a) / tau
}

PROCEDURE rates(v (mV)) {
    x = (v - vh) / 30
    if (x < 0) {
        if (x < -1) {
            ainf = amin
        } else {
            ainf = amin + 0.5 * (amax - amin) * (x + 1) * (x + 1) * (1 - 2 * x)
        }
    } else {
        if (x < 1) {
            ainf = 0.5 * (amin + amax) + 0.5 * (amax - amin) * x * x * (3 - 2 * x)
        } else {
            ainf = amax
        }
    }
}
