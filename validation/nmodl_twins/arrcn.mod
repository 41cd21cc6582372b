TITLE A gate as a chain of four states: an array STATE in a DERIVATIVE block, by cnexp

COMMENT
The twin of data/mechanisms/test/arrcn.mod with the array STATE x[4] written as four scalar STATEs
x0..x3 and each x'[j] of the FROM loop as its own equation (written for neurosolve, the project's
licence). NEURON 9.0.2's nocmodl warns that it does not translate derivatives of array STATEs and
emits C that does not compile; validation/nmodl_neuron_traces.py runs this twin in NEURON instead,
as the reference for the array file.
ENDCOMMENT

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

STATE { x0 x1 x2 x3 }

INITIAL {
    x0 = 1
    x1 = 0
    x2 = 0
    x3 = 0
}

BREAKPOINT {
    SOLVE chain METHOD cnexp
    o = x3
    i = gbar * o * (v - e)
}

DERIVATIVE chain {
    a = 0.5 * exp((v + 40) / 15)
    x0' = -a * x0 + b * x1
    x1' = a * x0 - (a + b) * x1 + b * x2
    x2' = a * x1 - (a + b) * x2 + b * x3
    x3' = a * x2 - b * x3
}
