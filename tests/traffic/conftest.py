import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
# Spark's Python tasks must import conformance as this process does (set before any Spark session starts)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
