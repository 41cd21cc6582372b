"""A stylised cell written in NEURON's own terms (sections by L and diam, connect, nseg by
hand, no 3-D points until define_shape): a soma with two dendrites at its end and one at its
start, an apical trunk forking into two tufts, an axon; hh in soma, axon and trunk with a
gnabar falling with distance, pas everywhere with g_pas rising along the apical tree, a
region-dependent cm, one section with its own Ra, ena/ek per section. A setup file for
validation/neuron_import_compare.py (`h` given); tests/data/neuron_import/ holds its import
and NEURON's reference (--refs)."""
h.load_file("stdrun.hoc")  # noqa: F821
soma = h.Section(name="soma")  # noqa: F821
soma.L = soma.diam = 18.0
axon = h.Section(name="axon")  # noqa: F821
axon.L, axon.diam, axon.nseg = 400.0, 1.0, 21
axon.connect(soma(0))
dend = []
for k, (L, d, n, at) in enumerate(((220.0, 2.0, 7, 1.0), (180.0, 1.6, 5, 1.0))):
    s = h.Section(name=f"dend[{k}]")  # noqa: F821
    s.L, s.diam, s.nseg = L, d, n
    s.connect(soma(at))
    dend.append(s)
trunk = h.Section(name="apic[0]")  # noqa: F821
trunk.L, trunk.diam, trunk.nseg = 300.0, 3.0, 11
trunk.connect(soma(1))
tufts = []
for k in range(2):
    s = h.Section(name=f"apic[{k + 1}]")  # noqa: F821
    s.L, s.diam, s.nseg = 250.0 + 40 * k, 2.0, 9  # thinner than the trunk: start_diam
    s.connect(trunk(1))
    tufts.append(s)
for s in h.allsec():  # noqa: F821
    s.Ra = 110.0
    s.cm = 1.0
    s.insert("pas")
    s.e_pas = -68.0
    s.g_pas = 5e-5
for s in [trunk] + tufts + dend:
    s.cm = 1.8
tufts[1].Ra = 160.0
h.distance(0, soma(0.5))  # noqa: F821
for s in (soma, axon, trunk):
    s.insert("hh")
    s.ena, s.ek = 52.0, -80.0
for seg in trunk:
    seg.gnabar_hh = 0.12 * max(0.2, 1.0 - h.distance(seg) / 500.0)  # noqa: F821
    seg.gl_hh = 0.0
for s in [trunk] + tufts:
    for seg in s:
        seg.g_pas = 5e-5 * (1.0 + h.distance(seg) / 300.0)  # noqa: F821
axon.gnabar_hh = 0.3
stim = h.IClamp(soma(0.5))  # noqa: F821
stim.delay, stim.dur, stim.amp = 10.0, 150.0, 1.0
h.celsius, h.v_init, h.dt, h.tstop = 6.3, -66.0, 0.025, 200.0  # noqa: F821
# a synapse on the second tuft driven by a regular NetStim (a network file's train and connect)
syn = h.ExpSyn(tufts[1](0.5))  # noqa: F821
syn.tau, syn.e = 3.0, 0.0
netstim = h.NetStim()  # noqa: F821
netstim.start, netstim.interval, netstim.number, netstim.noise = 165.0, 4.0, 6, 0
netcon = h.NetCon(netstim, syn)  # noqa: F821
netcon.weight[0], netcon.delay = 0.02, 1.5
