"""A stylised cell under NEURON's two-electrode voltage clamp VClamp (vclmp.mod: a control
amplifier with gain and time constants, a LINEAR block solved each step, PARAMETER arrays,
VERBATIM C): a soma with hh and a dendrite with pas and weak hh. One VClamp at the soma holds it
at -70 mV for 10 ms, steps to -10 mV for 2 ms (a spike) and to -65 mV for 3 ms, then lets go (its
current is 0 after dur[0] + dur[1] + dur[2]); a second one at dend(0.3) (gain 5e4, rstim 2 MOhm,
tau1 2 us, tau2 1 us) holds -65 mV for 40 ms, steps to -20 mV for 70 ms (the soma fires) and to
-75 mV for 20 ms. VClamp is NEURON's built-in vclmp.mod; neurosolve builds the same file
(data/mechanisms/vclamp, --mod there). A setup file for validation/neuron_import_compare.py (`h`
given); tests/data/neuron_import/ holds its import and NEURON's reference (--refs)."""
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
hold = h.VClamp(soma(0.5))  # noqa: F821
hold.dur[0], hold.amp[0] = 10.0, -70.0
hold.dur[1], hold.amp[1] = 2.0, -10.0
hold.dur[2], hold.amp[2] = 3.0, -65.0
step = h.VClamp(dend(0.3))  # noqa: F821
step.dur[0], step.amp[0] = 40.0, -65.0
step.dur[1], step.amp[1] = 70.0, -20.0
step.dur[2], step.amp[2] = 20.0, -75.0
step.gain, step.rstim, step.tau1, step.tau2 = 5e4, 2.0, 0.002, 0.001
h.celsius, h.v_init, h.dt, h.tstop = 6.3, -65.0, 0.025, 150.0  # noqa: F821
