TITLE lang: NMODL constructs that real files use, for the translator's tests
COMMENT
neurosolve's own file (BSD-3-Clause, as the project), not a model of anything:
a sodium-like current and a leak written with the constructs of NEURON's
language that published .mod files use and that tests/nmodl/test_nmodl_neuron.c
compares with NEURON 9.0.2 (validation/nmodl_neuron_traces.py).
ENDCOMMENT

NEURON {
    SUFFIX lang
    USEION na READ ena WRITE ina
    NONSPECIFIC_CURRENT il
    RANGE gnabar, gl, el, w, gCa_lang  : gCa_lang is never declared: NEURON ignores it
    RANGE minf, mtau, acc, vseen
    GLOBAL q10
    THREADSAFE
}

UNITS {
    (mV) = (millivolt)
    (mA) = (milliamp)
    (S) = (siemens)
    FARADAY = (faraday) (coulombs)
    PI = (pi) (1)
    R = (k-mole) (joule/degC)
    RMV = (R) (millivolt-coulomb/degC)
    E0 = (e) (coulombs)
    KTOMV = .0853 (mV/degC)
}

CONSTANT {
    kneg = -6 (mV)
}

PARAMETER {
    gnabar = 0.05 (S/cm2)
    gl = 0.0003 (S/cm2) <0, 1e9>
    el = -65 (mV)
    q10 = 3
}

ASSIGNED {
    v (mV)
    celsius (degC)
    ena (mV)
    ina (mA/cm2)
    il (mA/cm2)
    minf
    mtau (ms)
    acc
    vseen (mV)
    w[3]
}

STATE { m h }

LOCAL tfac, scratch[2]

INITIAL {
    tfac = q10^((celsius - 6.3 (degC))/10 (degC))
    FROM i = 0 TO 2 {
        w[i] = (i + 1)*0.25
    }
    rates(v)
    m = minf
    h = 1
    acc = 0
}

BREAKPOINT {
    LOCAL k, e2[2]
    il = gl*(v - el - 1000*R*(celsius + 273.15)/FARADAY*log(2) + 0*(PI + E0 + KTOMV + RMV))
    SOLVE states METHOD cnexp
    k = 0
    WHILE (k < 3) {
        k = k + 1
    }
    e2[1] = ena
    ena = ena + 5 (mV)          : NEURON's own copy of ena: the ion keeps its value
    scratch[0] = w[2]*k/3/0.75
    shiftv()
    ina = gnabar*m*m*m*h*scratch[0]*(v - ena) + clip(v - e2[1])*0.001
    vseen = v
}

DERIVATIVE states {
    rates(v)
    m' = (minf - m)/mtau
    h' = (1 - h)/(50 (ms)*tfac) - h*0.002*exp((v - kneg)/-(-kneg*5))
}

PROCEDURE rates(vm (mV)) {
    LOCAL a, b, qt
    TABLE minf, mtau DEPEND gl FROM -100 TO 100 WITH 200
    UNITSOFF
    qt = q10^((celsius - 6.3)/10)
    a = 0.1*vtrap(-(vm + 40), 10)
    b = 4*exp(-(vm + 65)/18) + gl*0
    mtau = 1/(qt*(a + b))
    minf = a/(a + b)
    UNITSON
}

PROCEDURE shiftv() {
    : Hay et al.'s files shift v and shift it back; this one leaves it
    : shifted for the rest of BREAKPOINT (NEURON: the mechanism's copy)
    v = v + 10
    acc = acc + 1
    v = v - 10 + 2 (mV)
    VERBATIM
    return 0;
    ENDVERBATIM
}

FUNCTION vtrap(x, y) {
    if (fabs(x/y) < 1e-6) {
        vtrap = y*(1 - x/y/2)
    } else {
        vtrap = x/(exp(x/y) - 1)
    }
}

FUNCTION clip(x (mV)) {
    clip = x
    if (x > 0) {
        VERBATIM
        return 0;
        ENDVERBATIM
    }
}
