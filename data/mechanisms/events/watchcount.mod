: Counts the crossings of v above thr by WATCH, with hysteresis: a crossing
: arms the watch for v below thr - 10, which arms the first again. Each
: crossing is a spike (net_event) at the WATCH event's time. Written for
: neurosolve's tests.
NEURON {
    POINT_PROCESS WatchCount
    RANGE thr, n, tlast
}

PARAMETER {
    thr = -20 (mV)
}

ASSIGNED {
    v (mV)
    n
    tlast (ms)
}

INITIAL {
    n = 0
    tlast = -1
    net_send(0, 1)
}

NET_RECEIVE (w) {
    if (flag == 1) {
        WATCH (v > thr) 2
    } else if (flag == 2) {
        n = n + 1
        tlast = t
        net_event(t)
        WATCH (v < thr - 10) 3
    } else if (flag == 3) {
        WATCH (v > thr) 2
    }
}
