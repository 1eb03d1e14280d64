"""The run pipeline: case selection, brokers and targets, the one run loop, the run directory and the
console (the run's options are `conformance.options`, plain data every layer reads). Every command that
runs cases (`run`, `selfcheck`, `bisect`, `bisect-run`) and the reference runs of the suite's own tests go
through `execute(Plan(...))`, and `pytest --broker ...` through the same controller (`Controller.start`)
from inside its session; `replay` uses its options and brokers.

    selection   select_cases(selectors, keyword): ids, sections, requirement ids, -k expressions
    targets     Brokers (start / check / attach / stop) and Target (a broker, possibly wrapped)
    controller  Plan, Outcome, Controller: the one controller of `run` and `pytest --broker` (checks, brokers,
                run directory, records, finish)
    engine      execute: the controller around its own pytest.main (exit_code re-exported)
    hooks       RunHooks: the pytest hooks object of a run in every process, handing on to its roles
    runner      CaseRunner: runs the cases in a process (the only caller of run_case); what crosses to a worker
    order       the order of the cases on pytest-xdist workers (own-node first, longest first)
    plugin      the pytest plugin the engine loads in every process: options, the hooks, collection
    items       the suite's pytest items: a CaseItem per case x target, at the case's own file and line
    directory   RunDirectory: run.json, results.jsonl, transcripts
    console     Console: the verdict lines, progress bar and closing verdict table
    cli         `amqp-conformance run`

The data path of one case is drawn in docs/architecture.md.
"""

from ..options import RunOptions

__all__ = ["RunOptions"]
