TITLE cabuf: calcium in a shell with a buffer, as a KINETIC scheme
COMMENT
neurosolve's test of KINETIC with METHOD sparse: the ion concentration cai as a
state of the scheme, a second-order reaction (nonlinear: Newton iterations), a
non-STATE reactant (the bath's cabath), a flux from the ion current and a flux
that reads a state (<<), COMPARTMENT sizes, CONSERVE, f_flux / b_flux, and
SOLVE ... STEADYSTATE sparse in INITIAL.
ENDCOMMENT

NEURON {
    SUFFIX cabuf
    USEION ca READ ica WRITE cai
    RANGE kf, kb, Btot, depth, taur, jbuf
    GLOBAL vshell, vbuf
}

UNITS {
    (mM) = (milli/liter)
    (mA) = (milliamp)
    (um) = (micron)
    FARADAY = (faraday) (coulomb)
}

PARAMETER {
    kf = 50 (/mM-ms)
    kb = 0.05 (/ms)
    Btot = 0.04 (mM)
    depth = 0.2 (um)
    taur = 40 (ms)
    tpump = 200 (ms)
    cabath = 5e-5 (mM)
    vshell = 1
    vbuf = 1.5
}

ASSIGNED {
    ica (mA/cm2)
    jbuf (mM/ms)
}

STATE {
    cai (mM)
    B (mM)
    CaB (mM)
}

INITIAL {
    cai = cabath
    B = Btot
    CaB = 0
    SOLVE buf STEADYSTATE sparse
}

BREAKPOINT {
    SOLVE buf METHOD sparse
}

KINETIC buf {
    COMPARTMENT vshell {cai}
    COMPARTMENT vbuf {B CaB}
    ~ cai + B <-> CaB (kf, kb)
    jbuf = f_flux - b_flux
    ~ cai << (-ica * 1e4 / (2 * FARADAY * depth))
    ~ cai <-> cabath (1 / taur, 1 / taur)
    ~ cai << ((cabath - cai) / tpump)
    CONSERVE B + CaB = Btot
}
