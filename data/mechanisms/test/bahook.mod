TITLE BEFORE/AFTER blocks and a CONSTRUCTOR (neurosolve's translator tests)
COMMENT
Each block leaves a trace in the current, so that a block run at the wrong time, too often or
not at all changes v: BEFORE BREAKPOINT counts the steps into a conductance, AFTER SOLVE keeps
the new v for the next step's DERIVATIVE, BEFORE STEP (also once at the end of finitialize)
scales a small current by how often it ran against AFTER SOLVE, BEFORE/AFTER INITIAL frame
INITIAL, and CONSTRUCTOR sets a factor once.
ENDCOMMENT

NEURON {
    SUFFIX bahook
    NONSPECIFIC_CURRENT i
    RANGE g, e, gb, vas, u, nbb, nas, nbs, vbi, vai, c0
}

PARAMETER {
    g = 2e-4 (S/cm2)
    e = -60 (mV)
}

ASSIGNED {
    v (mV)
    i (mA/cm2)
    gb (S/cm2)
    vas (mV)
    u (mA/cm2)
    nbb nas nbs vbi vai c0
}

STATE { s }

CONSTRUCTOR {
    c0 = 3
}

BEFORE INITIAL {
    nbb = 0
    nas = 0
    nbs = 0
    vbi = v
}

INITIAL {
    s = vbi / 100
}

AFTER INITIAL {
    vai = s + 1
    vas = v
}

BEFORE BREAKPOINT {
    nbb = nbb + 1
    gb = g * (1 + 0.5 * sin(nbb / 50))
}

BREAKPOINT {
    SOLVE states METHOD cnexp
    i = gb * (v - e) + u
}

DERIVATIVE states {
    s' = (vas / 100 - s) / 3
}

AFTER SOLVE {
    nas = nas + 1
    vas = v
}

BEFORE STEP {
    nbs = nbs + 1
    u = 1e-4 * (nbs - nas) * (1 + s) * c0 / 3
}
