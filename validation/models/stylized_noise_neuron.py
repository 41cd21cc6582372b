"""A stylised cell driven by noisy NetStims, NEURON 9's netstim.mod (RANDOM ranvar, nrnran123
streams): a soma with hh and a dendrite with pas; four NetStims excite or inhibit it through
ExpSyns: a Poisson train (noise 1) with NEURON's default stream ids, a half-noisy one (noise 0.5)
given its stream by noiseFromRandom123(7, 3, 11), a nearly regular one (noise 0.1) with
noiseFromRandom123(5, 9) (id3 0), and a regular one (noise 0) that a NetCon from the Poisson
train can restart (an input event: NetStim's flag 0). neurosolve builds NEURON's own netstim.mod
(data/mechanisms/events, --mod that file); from_neuron captures each NetStim's ids and sequence.
A setup file for validation/neuron_import_compare.py (`h` given); tests/data/neuron_import/
holds its import and NEURON's reference (--refs)."""
h.load_file("stdrun.hoc")  # noqa: F821
soma = h.Section(name="soma")  # noqa: F821
soma.L = soma.diam = 20.0
soma.insert("hh")
dend = h.Section(name="dend")  # noqa: F821
dend.L, dend.diam, dend.nseg = 200.0, 2.0, 5
dend.connect(soma(1))
dend.insert("pas")
dend.g_pas, dend.e_pas = 1e-4, -65.0
exc = h.ExpSyn(dend(0.7))  # noqa: F821
exc.tau, exc.e = 2.0, 0.0
near = h.ExpSyn(soma(0.5))  # noqa: F821
near.tau, near.e = 1.5, 0.0
inh = h.ExpSyn(dend(0.2))  # noqa: F821
inh.tau, inh.e = 6.0, -80.0
stims = [h.NetStim() for _ in range(4)]  # noqa: F821
poisson, half, nearly, regular = stims
poisson.start, poisson.interval, poisson.number, poisson.noise = 2.0, 9.0, 1e9, 1.0
half.start, half.interval, half.number, half.noise = 10.0, 14.0, 18, 0.5
half.noiseFromRandom123(7, 3, 11)
nearly.start, nearly.interval, nearly.number, nearly.noise = 5.0, 20.0, 12, 0.1
nearly.noiseFromRandom123(5, 9)
regular.start, regular.interval, regular.number, regular.noise = 60.0, 4.0, 3, 0.0
links = [h.NetCon(poisson, exc), h.NetCon(half, near), h.NetCon(nearly, inh), h.NetCon(regular, exc),  # noqa: F821
         h.NetCon(poisson, regular)]  # noqa: F821
for nc, w, d in zip(links, (0.004, 0.012, 0.008, 0.006, 1.0), (1.0, 0.5, 2.0, 1.5, 0.3)):
    nc.weight[0], nc.delay = w, d
h.celsius, h.v_init, h.dt, h.tstop = 6.3, -65.0, 0.025, 250.0  # noqa: F821
