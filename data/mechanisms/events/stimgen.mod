: A periodic spike generator with NetStim's event logic, without noise: INITIAL
: sends a self event of flag 3 at start, which begins the sequence with
: net_send(0, 1); each flag-1 event is a spike (net_event) and sends the next;
: a connection's event of positive weight restarts a finished sequence, one of
: negative weight stops it. Written for neurosolve's tests.
NEURON {
    ARTIFICIAL_CELL StimGen
    RANGE interval, number, start, ispike
}

PARAMETER {
    interval = 10 (ms)
    number = 10
    start = 50 (ms)
}

ASSIGNED {
    on
    ispike
}

INITIAL {
    on = 0
    ispike = 0
    if (start >= 0 && number > 0) {
        on = 1
        net_send(start, 3)
    }
}

NET_RECEIVE (w) {
    if (flag == 0) {
        if (w > 0 && on == 0) {
            on = 1
            ispike = 0
            net_send(0, 1)
        } else if (w < 0) {
            on = 0
        }
    }
    if (flag == 3) {
        if (on == 1) {
            ispike = 0
            net_send(0, 1)
        }
    }
    if (flag == 1 && on == 1) {
        ispike = ispike + 1
        net_event(t)
        if (ispike >= number) {
            on = 0
        } else {
            net_send(interval, 1)
        }
    }
}
