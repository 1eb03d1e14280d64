"""The run pipeline: case selection, brokers and targets, the one run loop, the run directory and the
console (the run's options are `conformance.options`, plain data every layer reads). Every command that
runs cases (`run`, `selfcheck`, `bisect`, `bisect-run`) and the reference runs of the suite's own tests go
through `execute(Plan(...))`; `replay` uses its options and brokers.

    selection   select_cases(selectors, keyword): ids, sections, requirement ids, -k expressions
    targets     Brokers (start / check / attach / stop) and Target (a broker, possibly wrapped)
    engine      Plan, execute, Outcome, exit_code; the Pipeline pytest plugin object
    plugin      the pytest plugin the engine loads in every process: options, the pipeline, collection
    items       the suite's pytest items: a CaseItem per case x target, at the case's own file and line
    directory   RunDirectory: run.json, results.jsonl, transcripts
    console     Console: the verdict lines, progress bar and closing verdict table
    cli         `amqp-conformance run`

The data path of one case is drawn in docs/architecture.md.
"""

from ..options import RunOptions

__all__ = ["RunOptions"]
