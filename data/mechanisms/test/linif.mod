TITLE linif: equations inside an if and in loops in NONLINEAR and LINEAR blocks
COMMENT
neurosolve's test file (linadd.mod with its equations inside an if, a FROM and a WHILE loop):
nocmodl numbers the rows when the block runs (simultan.cpp: _dlist[++_counte] per '~', the
same row for '~+' in NONLINEAR; ++_counte and _coef[_counte][...] in LINEAR), so an equation
counts where it runs; without array STATEs, as many equations are written as unknowns.
ENDCOMMENT

NEURON {
    SUFFIX linif
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
    nadd = 3
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
    if (c1 > 0) {
        ~ xs + 0.1*ys*ys = c1
    }
    if (v > -60) {
        ~+ 0.05*xs*ys = 0.1
    } else {
        ~+ 0.02*xs*ys*ys = 0.05
    }
    FROM j = 0 TO 0 {
        ~ ys + 0.1*xs*xs*xs = c2 + 0.2*c1
    }
    FROM j = 1 TO nadd {
        ~+ 0.01*j*ys = 0.001*j
    }
}

LINEAR lin {
    LOCAL k
    k = 0
    WHILE (k < 1) {
        ~ zs + ws = c1
        k = k + 1
    }
    if (v > -60) {
        ~+ 0.5*zs = 0.25
    }
    ~ zs - 2*ws = 0.1*c1
    FROM j = 1 TO nadd {
        ~+ 0.1*j*ws = 0.02*c1
    }
}
