NEURON { SUFFIX x RANGE y }
ASSIGNED { y }
BREAKPOINT { pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp(v) }
PROCEDURE pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp(u) {
  TABLE y FROM -100 TO 100 WITH 10
  y = u
}
