"""torch.compile as a target: the differential's programs, compiled, held
against eager (and eager against the reference model).

- targets: `--compile BACKEND[,...]` parsed, each backend's availability
- ops: compile-only ops (as_strided and friends, mark_dirty, graph breaks)
- program: a generated program as a Python function of its inputs
- motifs: compile-only program motifs (aliased inputs, strided inputs, ...)
- run: a program run eagerly or compiled, observed after the call and each
  later step
- compare: eager's observations against the compiled ones, by invariant
- minimize, repro: smaller failing programs and standalone scripts
"""
