: Draws NEURON's random-number builtins at every step (test_nmodl_random.c):
: x from normrand(1, 2), y from exprand(3), u from scop_random(); seed > 0
: restarts the instance's stream under that seed in INITIAL (set_seed).
NEURON {
    SUFFIX rnd
    RANGE x, y, u, seed
}
PARAMETER { seed = 0 }
ASSIGNED { x y u }
INITIAL {
    if (seed > 0) { set_seed(seed) }
    draw()
}
BREAKPOINT { draw() }
PROCEDURE draw() {
    x = normrand(1, 2)
    y = exprand(3)
    u = scop_random()
}
