"""A stylised cell under NEURON's single-electrode voltage clamp: a soma with hh, a dendrite
with pas and weak hh, an SEClamp at dend(0.3) holding -65 mV, stepping to -20 mV for 90 ms (the
soma fires 5 times) and back to -70 mV, series resistance 2 MOhm. SEClamp is NEURON's built-in svclmp.mod;
neurosolve builds the same file (data/mechanisms/electrode, --mod there). A setup file for
validation/neuron_import_compare.py (`h` given); tests/data/neuron_import/ holds its import and
NEURON's reference (--refs)."""
h.load_file("stdrun.hoc")  # noqa: F821
soma = h.Section(name="soma")  # noqa: F821
soma.L = soma.diam = 20.0
dend = h.Section(name="dend")  # noqa: F821
dend.L, dend.diam, dend.nseg = 300.0, 1.5, 9
dend.connect(soma(1))
for s in (soma, dend):
    s.Ra, s.cm = 120.0, 1.0
    s.insert("hh")
dend.insert("pas")
dend.gnabar_hh, dend.gkbar_hh, dend.gl_hh = 0.02, 0.01, 0.0
dend.g_pas, dend.e_pas = 1e-4, -65.0
clamp = h.SEClamp(dend(0.3))  # noqa: F821
clamp.rs = 2.0
clamp.dur1, clamp.amp1 = 20.0, -65.0
clamp.dur2, clamp.amp2 = 90.0, -20.0
clamp.dur3, clamp.amp3 = 40.0, -70.0
h.celsius, h.v_init, h.dt, h.tstop = 6.3, -65.0, 0.025, 150.0  # noqa: F821
