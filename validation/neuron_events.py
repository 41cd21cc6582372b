#!/usr/bin/env python3
"""NEURON reference for NMODL's events in a network (tests/test_sim_events.c).

One hh cell (a single compartment, L = diam = 20 um, nseg = 1) with an ExpSyn
and an FDSyn (data/mechanisms/events/fdsyn.mod: per-connection facilitation and
depression, NET_RECEIVE's INITIAL), an STDPSyn (stdpsyn.mod: FOR_NETCONS at a WATCH
of v) and a WatchCount (watchcount.mod: WATCH on v, a spike by net_event at each
crossing of -20 mV), driven by NEURON's IntFire1, IntFire2 and
IntFire4 and a NetStim without noise (built in: the files of
data/mechanisms/events/, netstim.mod NEURON 9.0.2's), which
three trains of input spikes drive (events at train time + delay, NetCon.event).
Run by NEURON's fixed step (dt = 0.025 ms, 100 ms, celsius 6.3, v_init -65).
Writes tests/data/neuron_events/events.csv: '#' header lines (NEURON's
version, the command), one 'spikes,NAME,t...' line per spike source (a, b, c,
s: the artificial cells; w: the WatchCount; cell: the soma's detector at 0 mV), then 't,v' every
4th step. The network is the table NET below, which the test repeats.

Run: python3 validation/neuron_events.py   (NEURON 9.0.2: pip install neuron==9.0.2)
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.abspath(os.path.dirname(__file__)))
EVENTS = os.path.join(ROOT, "data/mechanisms/events")
OUT = os.path.join(ROOT, "tests/data/neuron_events/events.csv")

DT, TSTOP, CELSIUS, V_INIT = 0.025, 100.0, 6.3, -65.0
TRAINS = {
    "T1": [2.0, 4.1, 6.3, 20.2, 21.7, 23.3, 24.9, 50.6, 52.2, 53.9],
    "T2": [10.35, 30.8, 31.9, 60.4, 61.5, 62.6, 63.7],
    "T3": [70.15],
}
ARTIFICIAL = {  # name: (mechanism, parameters)
    "a": ("IntFire1", {"tau": 10, "refrac": 5}),
    "b": ("IntFire2", {"taus": 20, "taum": 10, "ib": 0.5}),
    "c": ("IntFire4", {"taue": 5, "taui1": 10, "taui2": 20, "taum": 50}),
    "s": ("NetStim", {"start": 5, "interval": 7.3, "number": 4, "noise": 0}),
}
SYNAPSES = {  # on the soma
    "syn0": ("ExpSyn", {"tau": 2, "e": 0}),
    "syn1": ("FDSyn", {}),
    "w": ("WatchCount", {"thr": -20}),
    "syn2": ("STDPSyn", {}),
}
NET = [  # (source, target, weight, delay), in creation order
    ("T1", "a", 0.45, 1.0), ("T2", "a", 0.5, 1.0),
    ("T1", "b", 0.6, 1.2), ("T2", "b", 0.8, 1.0),
    ("T1", "c", 0.6, 1.0), ("T2", "c", -0.3, 1.3),
    ("T3", "s", 1.0, 1.0),
    ("a", "syn0", 0.02, 1.0), ("b", "syn0", 0.02, 1.5), ("c", "syn0", 0.02, 2.0), ("s", "syn0", 0.015, 1.0),
    ("T1", "syn1", 0.004, 1.5), ("T2", "syn1", 0.006, 2.0),
    ("T1", "syn2", 0.002, 1.5), ("T2", "syn2", 0.002, 2.0),
]


def main():
    work = tempfile.mkdtemp()
    try:
        for f in ("fdsyn.mod", "watchcount.mod", "stdpsyn.mod"):
            shutil.copy(os.path.join(EVENTS, f), work)
        subprocess.run(["nrnivmodl"], cwd=work, check=True, stdout=subprocess.DEVNULL)
        from neuron import h
        h.nrn_load_dll(os.path.join(work, "x86_64/libnrnmech.so"))
        h.load_file("stdrun.hoc")
        soma = h.Section(name="soma")
        soma.L = soma.diam = 20
        soma.nseg = 1
        soma.cm = 1
        soma.insert("hh")
        objs = {}
        for name, (mech, params) in list(ARTIFICIAL.items()) + list(SYNAPSES.items()):
            o = getattr(h, mech)(soma(0.5)) if name in SYNAPSES else getattr(h, mech)()
            for k, val in params.items():
                setattr(o, k, val)
            objs[name] = o
        ncs, trains = [], []
        for src, tgt, w, d in NET:
            if src in TRAINS:
                nc = h.NetCon(None, objs[tgt])
                trains.append((nc, [t + d for t in TRAINS[src]]))
            else:
                nc = h.NetCon(objs[src], objs[tgt])
            nc.weight[0] = w
            nc.delay = d
            ncs.append(nc)
        rec = {}
        for name in list(ARTIFICIAL) + ["w"]:
            nc = h.NetCon(objs[name], None)
            rec[name] = h.Vector()
            nc.record(rec[name])
            ncs.append(nc)
        det = h.NetCon(soma(0.5)._ref_v, None, sec=soma)
        det.threshold = 0
        rec["cell"] = h.Vector()
        det.record(rec["cell"])

        def schedule():
            for nc, times in trains:
                for t in times:
                    nc.event(t)

        fih = h.FInitializeHandler(schedule)
        v = h.Vector().record(soma(0.5)._ref_v)
        h.dt = DT
        h.steps_per_ms = 1.0 / DT
        h.celsius = CELSIUS
        h.finitialize(V_INIT)
        h.continuerun(TSTOP)
        import neuron
        with open(OUT, "w") as f:
            f.write("# NEURON %s: python3 validation/neuron_events.py\n" % neuron.__version__)
            f.write("# dt %g, tstop %g, celsius %g, v_init %g; spikes per source, then t,v every 4th step\n"
                    % (DT, TSTOP, CELSIUS, V_INIT))
            for name in list(ARTIFICIAL) + ["w", "cell"]:
                f.write("spikes,%s%s\n" % (name, "".join(",%.17g" % t for t in rec[name])))
            for k in range(0, len(v), 4):
                f.write("%.17g,%.17g\n" % (k * DT, v[k]))
        for name in list(ARTIFICIAL) + ["w", "cell"]:
            print(name, list(rec[name]))
        del fih
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    sys.exit(main())
