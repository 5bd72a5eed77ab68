"""`make bench`: the speed of the reference trainer, of extraction and of the test loop.

Speed goals live here, never in a timed test. `python -m tools.bench.run --help` lists the options;
BENCHMARKS.md records the results.
"""
