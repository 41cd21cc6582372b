NEURON { SUFFIX x NONSPECIFIC_CURRENT i }
ASSIGNED { i }
BREAKPOINT { i = f(3) }
FUNCTION f(x) {
  f = g(x)
}
FUNCTION g(x) {
  g = 1 + f(x - 1)
}
