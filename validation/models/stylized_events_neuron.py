"""A stylised cell among NEURON's artificial cells: a soma with hh and a dendrite with pas; a
regular NetStim drives an IntFire1 whose spikes (net_event: a point source) excite the dendrite
through an ExpSyn; an IntFire2 with a bias current above threshold fires on its own and excites
it too; the soma's own spikes (a NetCon from its voltage: a detector) drive a second IntFire1
that inhibits the soma through another ExpSyn. IntFire1 and IntFire2 are NEURON's built-in
intfire1.mod and intfire2.mod; neurosolve builds the same files (data/mechanisms/events, --mod
those). A setup file for validation/neuron_import_compare.py (`h` given);
tests/data/neuron_import/ holds its import and NEURON's reference (--refs)."""
h.load_file("stdrun.hoc")  # noqa: F821
soma = h.Section(name="soma")  # noqa: F821
soma.L = soma.diam = 20.0
soma.insert("hh")
dend = h.Section(name="dend")  # noqa: F821
dend.L, dend.diam, dend.nseg = 200.0, 2.0, 5
dend.connect(soma(1))
dend.insert("pas")
dend.g_pas, dend.e_pas = 1e-4, -65.0
exc = h.ExpSyn(dend(0.5))  # noqa: F821
exc.tau, exc.e = 2.0, 0.0
inh = h.ExpSyn(soma(0.5))  # noqa: F821
inh.tau, inh.e = 5.0, -80.0
stim = h.NetStim()  # noqa: F821
stim.start, stim.interval, stim.number, stim.noise = 5.0, 6.0, 25, 0
drive = h.IntFire1()  # noqa: F821
drive.tau, drive.refrac = 10.0, 2.0
bias = h.IntFire2()  # noqa: F821
bias.taum, bias.taus, bias.ib = 10.0, 20.0, 1.3
echo = h.IntFire1()  # noqa: F821
echo.tau, echo.refrac = 4.0, 1.0
links = [h.NetCon(stim, drive), h.NetCon(drive, exc), h.NetCon(bias, exc), h.NetCon(echo, inh)]  # noqa: F821
for nc, w, d in zip(links, (0.7, 0.012, 0.006, 0.004), (1.0, 1.5, 2.0, 1.0)):
    nc.weight[0], nc.delay = w, d
spike = h.NetCon(soma(0.5)._ref_v, echo, sec=soma)  # noqa: F821
spike.threshold, spike.weight[0], spike.delay = -20.0, 1.5, 2.5
h.celsius, h.v_init, h.dt, h.tstop = 6.3, -65.0, 0.025, 160.0  # noqa: F821
