"""Reference implementation of the ELMo course, one module per section of the seed notebook.

This package is the single source of truth: `exercises/` is generated from it
(`make exercises`), and the tests, notebooks and grader all check against it.
"""
