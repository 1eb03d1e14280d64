"""The results history and its analysis on Spark: ingest, report model, diff, bisect."""
