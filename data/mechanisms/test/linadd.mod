TITLE linadd: '~+' in NONLINEAR and LINEAR blocks
COMMENT
neurosolve's test file (nonlinbp.mod with terms added to equations): nocmodl's '~+' adds its
terms to the previous equation (simultan.cpp: _dlist[_counte] += ... in NONLINEAR, the same
row of the matrix in LINEAR), so each block still has as many equations as unknowns.
ENDCOMMENT

NEURON {
    SUFFIX linadd
    NONSPECIFIC_CURRENT i
    RANGE gbar, e
}

UNITS {
    (mA) = (milliamp)
    (mV) = (millivolt)
}

PARAMETER {
    gbar = 0.0005 (S/cm2)
    e = 20 (mV)
}

ASSIGNED {
    v (mV)
    i (mA/cm2)
    c1
}

STATE { xs ys zs ws }

INITIAL {
    xs = 1
    ys = 0.5
    SOLVE equilibrium
    SOLVE lin
}

BREAKPOINT {
    SOLVE equilibrium
    SOLVE lin
    i = gbar*xs*ys*zs*(v - e)
}

NONLINEAR equilibrium {
    LOCAL c2
    c1 = 1 + 0.5/(1 + exp(-(v + 50)/5))
    c2 = 0.5
    ~ xs + 0.1*ys*ys = c1
    ~+ 0.05*xs*ys = 0.1
    ~ ys + 0.1*xs*xs*xs = c2 + 0.2*c1
}

LINEAR lin {
    ~ zs + ws = c1
    ~+ 0.5*zs = 0.25
    ~ zs - 2*ws = 0.1*c1
    ~+ ws = 0.2*c1
}
