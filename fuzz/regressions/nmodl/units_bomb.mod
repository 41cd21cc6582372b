NEURON { SUFFIX x }
UNITS {
  (ua) = (ub ub ub ub ub ub ub ub ub ub)
  (ub) = (uc uc uc uc uc uc uc uc uc uc)
  (uc) = (ud ud ud ud ud ud ud ud ud ud)
  (ud) = (ue ue ue ue ue ue ue ue ue ue)
  (ue) = (uf uf uf uf uf uf uf uf uf uf)
  (uf) = (ug ug ug ug ug ug ug ug ug ug)
  (ug) = (uh uh uh uh uh uh uh uh uh uh)
  (uh) = (ui ui ui ui ui ui ui ui ui ui)
  C = (ua) (1)
}
