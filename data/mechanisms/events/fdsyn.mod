: An exponential synapse whose connections each facilitate and depress on their
: own, in the manner of tmgsyn.mod: F, D and tlast are per-connection state
: (NET_RECEIVE's arguments after the weight), set by NET_RECEIVE's INITIAL.
: Written for neurosolve's tests.
NEURON {
    POINT_PROCESS FDSyn
    RANGE tau, e, i, f, tauF, d, tauD
    NONSPECIFIC_CURRENT i
}

UNITS {
    (nA) = (nanoamp)
    (mV) = (millivolt)
    (uS) = (microsiemens)
}

PARAMETER {
    tau = 2 (ms)
    e = 0 (mV)
    f = 0.5
    tauF = 50 (ms)
    d = 0.6
    tauD = 100 (ms)
}

ASSIGNED {
    v (mV)
    i (nA)
}

STATE {
    g (uS)
}

INITIAL {
    g = 0
}

BREAKPOINT {
    SOLVE state METHOD cnexp
    i = g*(v - e)
}

DERIVATIVE state {
    g' = -g/tau
}

NET_RECEIVE (weight (uS), F, D, tlast (ms)) {
    INITIAL {
        F = 1
        D = 1
        tlast = t
    }
    F = 1 + (F - 1)*exp(-(t - tlast)/tauF)
    D = 1 - (1 - D)*exp(-(t - tlast)/tauD)
    g = g + weight*F*D
    tlast = t
    F = F + f
    D = D*d
}
