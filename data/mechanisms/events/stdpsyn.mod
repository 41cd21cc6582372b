: An exponential synapse whose connections each potentiate with spike timing:
: a presynaptic event adds weight*(1 + A) to g (A the connection's own); a
: postsynaptic spike (WATCH on v, with hysteresis) raises A of every
: connection (FOR_NETCONS) by dA*exp(-(t - tpre)/tauA), tpre the connection's
: last event. Written for neurosolve's tests.
NEURON {
    POINT_PROCESS STDPSyn
    RANGE tau, e, i, dA, tauA, thr
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
    dA = 0.5
    tauA = 20 (ms)
    thr = -20 (mV)
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
    net_send(0, 1)
}

BREAKPOINT {
    SOLVE state METHOD cnexp
    i = g*(v - e)
}

DERIVATIVE state {
    g' = -g/tau
}

NET_RECEIVE (weight (uS), A, tpre (ms)) {
    INITIAL {
        A = 0
        tpre = -1e9
    }
    if (flag == 0) {
        g = g + weight*(1 + A)
        tpre = t
    } else if (flag == 1) {
        WATCH (v > thr) 2
    } else if (flag == 2) {
        FOR_NETCONS (w1, A1, tp (ms)) {
            A1 = A1 + dA*exp(-(t - tp)/tauA)
        }
        WATCH (v < thr - 10) 3
    } else if (flag == 3) {
        WATCH (v > thr) 2
    }
}
