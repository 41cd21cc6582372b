TITLE Array STATEs in a DERIVATIVE block by derivimplicit, with equations not linear in them

COMMENT
The twin of data/mechanisms/test/arrdi.mod with the array STATE x[4] written as four scalar STATEs
x0..x3 and each x'[j] of the FROM loop as its own equation (written for neurosolve, the project's
licence). NEURON 9.0.2's nocmodl warns that it does not translate derivatives of array STATEs and
emits C that does not compile; validation/nmodl_neuron_traces.py runs this twin in NEURON instead,
as the reference for the array file.
ENDCOMMENT

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

STATE { x0 x1 x2 x3 }

INITIAL {
    x0 = 0
    x1 = 0
    x2 = 0
    x3 = 0
}

BREAKPOINT {
    SOLVE chain METHOD derivimplicit
    o = x3
    i = gbar * o * (v - e)
}

DERIVATIVE chain {
    a = 0.5 * exp((v + 40) / 15)
    x0' = a * (1 - x0) - b * x0 * x1
    x1' = a * x0 * (1 - x1) - b * x1 * x1
    x2' = a * x1 * (1 - x2) - b * x2 * x2
    x3' = a * x2 * (1 - x3) - b * x3 * x3
}
