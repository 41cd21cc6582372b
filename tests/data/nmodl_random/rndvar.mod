: NEURON 9's RANDOM variables (test_nmodl_random.c): three streams per
: instance, drawn at every step: x from random_normal(ra, 1, 2), y from
: random_negexp(rb, 3), u from random_uniform(rc, 2, 5); seed > 0 moves ra to
: that position in INITIAL (random_setseq).
NEURON {
    SUFFIX rndvar
    RANDOM ra, rb, rc
    RANGE x, y, u, seed
}
PARAMETER { seed = 0 }
ASSIGNED { x y u }
INITIAL {
    if (seed > 0) { random_setseq(ra, seed) }
    draw()
}
BREAKPOINT { draw() }
PROCEDURE draw() {
    x = random_normal(ra, 1, 2)
    y = random_negexp(rb, 3)
    u = random_uniform(rc, 2, 5)
}
