TITLE Calcium in a submembrane shell: decay, a saturating pump, cnexp on a nonlinear equation

COMMENT
Written for neurosolve's tests (the project's licence), after the pattern of Destexhe's cadecay
files in ModelDB: influx from ica, a Michaelis-Menten pump (kt, kd) and a relaxation to cainf.
The pump term is not linear in cai, so nocmodl translates the cnexp SOLVE by derivimplicit
("Could not translate using cnexp method; using derivimplicit"). INITIAL asks for the steady
state by STEADYSTATE derivimplicit, which NEURON runs as one derivimplicit step of 1e-9 ms.
ENDCOMMENT

NEURON {
    SUFFIX cadn
    USEION ca READ ica WRITE cai
    RANGE depth, taur, cainf, kt, kd
}

UNITS {
    (molar) = (1/liter)
    (mM) = (millimolar)
    (um) = (micron)
    (mA) = (milliamp)
    FARADAY = (faraday) (coulomb)
}

PARAMETER {
    depth = 0.1 (um)
    taur = 80 (ms)
    cainf = 2.4e-4 (mM)
    kt = 1e-4 (mM/ms)
    kd = 1e-4 (mM)
}

ASSIGNED { ica (mA/cm2) }

STATE { cai (mM) }

INITIAL {
    cai = cainf
    SOLVE state STEADYSTATE derivimplicit
}

BREAKPOINT {
    SOLVE state METHOD cnexp
}

DERIVATIVE state {
    cai' = -(10000) * ica / (2 * FARADAY * depth) - kt * cai / (cai + kd) + (cainf - cai) / taur
}
